/**
 * infra/krew/hami.yaml, the krew plugin manifest: well-formed for krew (v1alpha2 Plugin, every platform with a
 * selector, uri, sha256 and bin), its plugin name and bin those of bin/kubectl-hami, its version and tarball those
 * `npm pack` makes of package.json, and its placeholders only where the release step fills them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';

const ROOT = join(__dirname, '../../..');
const text = readFileSync(join(ROOT, 'infra/krew/hami.yaml'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string> };

/** The fields krew's validation requires (krew's pkg/index/validation), strictly at the top. */
const manifestSchema = z
  .object({
    apiVersion: z.literal('krew.googlecontainertools.github.com/v1alpha2'),
    kind: z.literal('Plugin'),
    metadata: z.object({ name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/) }).strict(),
    spec: z
      .object({
        version: z.string().regex(/^v\d+\.\d+\.\d+$/),
        homepage: z.string().url(),
        shortDescription: z.string().min(1).max(80),
        description: z.string().min(1),
        caveats: z.string().optional(),
        platforms: z
          .array(
            z
              .object({
                selector: z.object({ matchExpressions: z.array(z.object({ key: z.string(), operator: z.literal('In'), values: z.array(z.string()).min(1) })) }),
                uri: z.string().url(),
                sha256: z.string(),
                files: z.array(z.object({ from: z.string(), to: z.string() })).optional(),
                bin: z.string(),
              })
              .strict(),
          )
          .min(1),
      })
      .strict(),
  })
  .strict();

const manifest = manifestSchema.parse(parse(text));

describe('the krew manifest', () => {
  it('names the plugin as kubectl finds bin/kubectl-hami, and each platform runs that file', () => {
    expect(`kubectl-${manifest.metadata.name}`).toBe(basename(pkg.bin['kubectl-hami'] ?? ''));
    expect(existsSync(join(ROOT, 'bin/kubectl-hami'))).toBe(true);
    for (const platform of manifest.spec.platforms) {
      expect(platform.bin).toBe('bin/kubectl-hami');
      // bin/kubectl-hami loads bin/launch.js and dist/hami-diag.js: the files the manifest installs hold all three.
      expect(platform.files).toEqual(expect.arrayContaining([{ from: 'package/bin/*', to: 'bin' }, { from: 'package/dist/hami-diag.js', to: 'dist' }]));
    }
  });

  it("downloads the tarball `npm pack` makes of this version, for Linux and macOS (the plugin is a Node script, no .exe)", () => {
    expect(manifest.spec.version).toBe(`v${pkg.version}`);
    for (const platform of manifest.spec.platforms) {
      expect(platform.uri).toMatch(new RegExp(`/releases/download/v${pkg.version.replace(/\./g, '\\.')}/${pkg.name}-${pkg.version.replace(/\./g, '\\.')}\\.tgz$`));
      expect(platform.selector.matchExpressions.flatMap((e) => e.values)).not.toContain('windows');
    }
  });

  it('leaves placeholders only for what the release step fills: the owner and the checksum', () => {
    const body = text.split('\n').filter((line) => !line.trimStart().startsWith('#')).join('\n');
    const placeholders = [...body.matchAll(/<([^>\n]+)>/g)].map((m) => m[1]);
    expect([...new Set(placeholders)].sort()).toEqual(['owner', `sha256 of ${pkg.name}-${pkg.version}.tgz, filled by the release step`]);
    for (const platform of manifest.spec.platforms) expect(platform.sha256).toMatch(/^<sha256 of .+, filled by the release step>$|^[0-9a-f]{64}$/);
  });
});
