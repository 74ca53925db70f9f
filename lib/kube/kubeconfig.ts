/**
 * Chooses cluster credentials explicitly: a kubeconfig file ($KUBECONFIG or ~/.kube/config) when one
 * exists, else the in-cluster service account when its env vars are set. Never client-node's silent
 * fallback to http://localhost:8080.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

export interface KubeConfigSource {
  readonly kind: 'kubeconfig' | 'in-cluster';
  readonly detail: string;
}

export function chooseKubeConfigSource(env: NodeJS.ProcessEnv, home: string, fileExists: (p: string) => boolean): KubeConfigSource {
  const fromEnv = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  if (fromEnv.length > 0) {
    const missing = fromEnv.filter((p) => !fileExists(p));
    if (missing.length === fromEnv.length) throw new KubeConfigMissingError(`KUBECONFIG names no existing file: ${missing.join(', ')}`);
    return { kind: 'kubeconfig', detail: fromEnv.filter(fileExists).join(delimiter) };
  }
  const defaultPath = join(home, '.kube', 'config');
  if (home !== '' && fileExists(defaultPath)) return { kind: 'kubeconfig', detail: defaultPath };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    return { kind: 'in-cluster', detail: `https://${env.KUBERNETES_SERVICE_HOST}:${env.KUBERNETES_SERVICE_PORT}` };
  }
  throw new KubeConfigMissingError(
    'no cluster credentials: set KUBECONFIG, create ~/.kube/config, or run in a pod (KUBERNETES_SERVICE_HOST/PORT)',
  );
}

export function loadKubeConfig(env: NodeJS.ProcessEnv = process.env): { kubeConfig: KubeConfig; source: KubeConfigSource } {
  const source = chooseKubeConfigSource(env, homedir(), existsSync);
  const kubeConfig = new KubeConfig();
  if (source.kind === 'kubeconfig') kubeConfig.loadFromDefault();
  else kubeConfig.loadFromCluster();
  return { kubeConfig, source };
}

/** No usable cluster credentials were found (no kubeconfig file, no in-cluster service account). */
export class KubeConfigMissingError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'KubeConfigMissingError';
  }
}
