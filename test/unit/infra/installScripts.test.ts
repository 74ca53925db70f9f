/**
 * npm's install-script policy (docs/development.md, "Install scripts"): every dependency that ships an install
 * script has a reviewed entry in package.json `allowScripts`, so `npm ci` prints no warning under npm 11 and
 * behaves the same under npm 12 (which blocks unreviewed scripts); `.npmrc` makes an unreviewed one fail.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

const ROOT = join(__dirname, '../../..');
const pkg = z
  .object({ allowScripts: z.record(z.string(), z.boolean()) })
  .loose()
  .parse(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')));
const lock = z
  .object({ packages: z.record(z.string(), z.object({ hasInstallScript: z.boolean().optional(), optional: z.boolean().optional() }).loose()) })
  .loose()
  .parse(JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')));

/** `node_modules/a/node_modules/@b/c` -> `@b/c` */
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
const withScripts = [...new Set(Object.entries(lock.packages).filter(([path, p]) => path !== '' && p.hasInstallScript === true).map(([path]) => nameOf(path)))].sort();
const reviewed = Object.keys(pkg.allowScripts).map((key) => key.replace(/(.)@[^@/]+$/, '$1'));

describe('install scripts', () => {
  it('reviews every locked dependency that has an install script, and nothing else', () => {
    expect(reviewed.sort()).toEqual(withScripts);
  });

  it('runs only the script of the Node.js package (it fetches the pinned Node binary) and denies the rest', () => {
    // Prebuilt binaries of the others come from optional packages or ship in their tarballs (docs/development.md).
    expect(Object.entries(pkg.allowScripts).filter(([, allowed]) => allowed)).toEqual([['node', true]]);
  });

  it('makes an unreviewed install script fail the install, as npm 12 blocks it', () => {
    const npmrc = readFileSync(join(ROOT, '.npmrc'), 'utf8').split('\n').map((line) => line.trim());
    expect(npmrc).toContain('strict-allow-scripts=true');
  });
});
