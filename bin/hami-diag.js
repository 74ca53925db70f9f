#!/usr/bin/env node
'use strict';
// hami-diag: a thin launcher for the esbuild bundle, so the package `bin` works without ts-node.
const path = require('node:path');
const fs = require('node:fs');

const bundle = path.join(__dirname, '..', 'dist', 'hami-diag.js');
if (!fs.existsSync(bundle)) {
  process.stderr.write(`hami-diag: ${bundle} is missing; run \`npm run build\` (or \`node scripts/build.mjs hami-diag\`) first\n`);
  process.exit(2);
}
require(bundle);
