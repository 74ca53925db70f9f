/**
 * A real headless Chromium for the console's tests and benchmark. `HAMI_CHROMIUM` names an installed Chrome or
 * Chromium (Debian's `chromium`: /usr/bin/chromium); otherwise the one shipped inside the npm package
 * @sparticuz/chromium (Linux x64) is unpacked into the temporary directory, so `npm ci` alone makes the tests
 * runnable. Launched without web-security switches: the console's Content-Security-Policy is enforced as in any browser.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

/** Switches for a closed, headless machine: no sandbox as root, no GPU, no calls home. */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--font-render-hinting=none',
];

export interface LaunchedBrowser {
  readonly browser: Browser;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<LaunchedBrowser> {
  const installed = process.env.HAMI_CHROMIUM?.trim();
  let executablePath: string;
  let extra: string[] = [];
  if (installed !== undefined && installed !== '') {
    executablePath = installed;
  } else {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an ESM package with a CommonJS build; loaded only when needed
    const chromium = require('@sparticuz/chromium') as { executablePath(): Promise<string> };
    executablePath = await chromium.executablePath();
    // That build runs as one process without a zygote (it is made for serverless sandboxes).
    extra = ['--single-process', '--no-zygote'];
  }
  const profile = mkdtempSync(join(tmpdir(), 'hami-chromium-'));
  const browser = await puppeteer.launch({
    executablePath,
    headless: 'shell',
    args: [...ARGS, ...extra, `--user-data-dir=${profile}`],
    defaultViewport: { width: 1280, height: 900 },
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
