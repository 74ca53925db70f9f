/**
 * Every engine module loads first, on its own: device kinds are built when their modules load, so an import cycle
 * that reaches one before its dependencies are done shows up as an undefined value at load time, not in review.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ENGINE = join(__dirname, '../../../lib/engine');

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return modules(path);
    return entry.endsWith('.ts') ? [path] : [];
  });
}

describe('engine modules', () => {
  it.each(modules(ENGINE).map((path) => [relative(ENGINE, path), path]))('%s loads first without touching an unfinished module', (_name, path) => {
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loading one module first, by path, is the point
      expect(() => require(path)).not.toThrow();
    });
  });
});
