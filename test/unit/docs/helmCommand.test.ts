/**
 * The README's `npm run --silent helm -- template …` prints YAML and nothing else: npm's `> hami-explain@… helm`
 * banner, which a plain `npm run` writes to stdout, would land in the rendered manifests.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const ROOT = join(__dirname, '../../..');
describe("the README's npm helm command", () => {
  it('prints only YAML documents: no npm banner', () => {
    const out = execFileSync(
      'npm',
      ['run', '--silent', 'helm', '--', 'template', 'hami-explain', 'infra/helm/hami-explain', '--namespace', 'hami-system', '-f', 'infra/helm/examples/eks-irsa.yaml'],
      { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    expect(out).not.toMatch(/^> /m);
    const docs = parseAllDocuments(out);
    expect(docs.flatMap((d) => d.errors.map((e) => e.message))).toEqual([]);
    const kinds = docs.map((d) => (d.toJS() as { kind?: unknown } | null)?.kind).filter((k) => k !== undefined);
    expect(kinds).toEqual(expect.arrayContaining(['Deployment', 'Service']));
  });
});
