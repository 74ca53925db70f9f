/**
 * The ClusterReader (lib/kube/clusterReader.ts) on the user's kubeconfig. loadFromDefault() silently
 * falls back to localhost:8080 when it finds nothing, so we look for a configuration first and say
 * plainly when there is none.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { ClusterAccess } from '../diagnostics/decisionTree';
import { errorMessage } from '../errors';
import { KubeClusterReader } from '../kube/clusterReader';

/** kubectl's `--kubeconfig` (one file, in place of KUBECONFIG) and `--context` (in place of the current context). */
export interface KubeSelection {
  readonly kubeconfig?: string;
  readonly context?: string;
}

/** Where a kubeconfig would come from, or why there is none. */
export function findKubeconfig(
  env: Readonly<Record<string, string | undefined>>,
  fileExists: (path: string) => boolean = existsSync,
  home: string = homedir(),
  selection: KubeSelection = {},
): { kind: 'files'; files: string[] } | { kind: 'in-cluster' } | { kind: 'none'; reason: string } {
  if (selection.kubeconfig !== undefined) {
    return fileExists(selection.kubeconfig) ? { kind: 'files', files: [selection.kubeconfig] } : { kind: 'none', reason: `--kubeconfig names no existing file (${selection.kubeconfig})` };
  }
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((file) => file !== '');
  if (listed.length > 0) {
    const missing = listed.filter((file) => !fileExists(file));
    if (missing.length === listed.length) return { kind: 'none', reason: `KUBECONFIG names no existing file (${listed.join(', ')})` };
    return { kind: 'files', files: listed.filter((file) => fileExists(file)) };
  }
  const standard = join(home, '.kube', 'config');
  if (fileExists(standard)) return { kind: 'files', files: [standard] };
  if (env.KUBERNETES_SERVICE_HOST && fileExists('/var/run/secrets/kubernetes.io/serviceaccount/token')) return { kind: 'in-cluster' };
  return { kind: 'none', reason: 'no kubeconfig found (KUBECONFIG is unset and ~/.kube/config does not exist)' };
}

/** The namespace of the selected context (kubectl's default for -n), or undefined. Never throws. */
export function kubeContextNamespace(env: Readonly<Record<string, string | undefined>>, selection: KubeSelection = {}): string | undefined {
  const loaded = loadKubeConfig(env, selection);
  if (!loaded.ok) return undefined;
  return loaded.config.getContextObject(loaded.config.getCurrentContext())?.namespace;
}

export function kubeClusterAccess(env: Readonly<Record<string, string | undefined>>, selection: KubeSelection = {}): ClusterAccess {
  const loaded = loadKubeConfig(env, selection);
  return loaded.ok ? { kind: 'ready', reader: new KubeClusterReader(loaded.config.makeApiClient(CoreV1Api)) } : { kind: 'unavailable', reason: loaded.reason };
}

/**
 * The user's kubeconfig as kubectl finds it (`--kubeconfig`, else KUBECONFIG files merged, ~/.kube/config,
 * in-cluster), on `--context` when given, or why not.
 */
export function loadKubeConfig(
  env: Readonly<Record<string, string | undefined>>,
  selection: KubeSelection = {},
): { readonly ok: true; readonly config: KubeConfig } | { readonly ok: false; readonly reason: string } {
  const found = findKubeconfig(env, existsSync, homedir(), selection);
  if (found.kind === 'none') return { ok: false, reason: found.reason };
  const config = new KubeConfig();
  try {
    if (found.kind === 'in-cluster') config.loadFromCluster();
    else {
      config.loadFromFile(found.files[0] ?? '');
      for (const file of found.files.slice(1)) {
        const more = new KubeConfig();
        more.loadFromFile(file);
        config.mergeConfig(more);
      }
    }
  } catch (err) {
    return { ok: false, reason: `the kubeconfig could not be loaded: ${errorMessage(err)}` };
  }
  if (selection.context !== undefined) {
    const known = config.getContexts().map((context) => context.name);
    if (!known.includes(selection.context)) {
      return { ok: false, reason: `the kubeconfig has no context "${selection.context}" (it has: ${known.length > 0 ? known.join(', ') : 'none'})` };
    }
    config.setCurrentContext(selection.context);
  }
  if (!config.getCurrentCluster()) return { ok: false, reason: 'the kubeconfig has no current context with a cluster' };
  return { ok: true, config };
}
