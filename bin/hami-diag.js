#!/usr/bin/env node
'use strict';
// hami-diag: explains a pod's scheduling (docs/diagnostics.md). Builds its bundle on first use (bin/launch.js).
require('./launch.js')('hami-diag');
