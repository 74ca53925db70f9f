/**
 * The route `kubectl hami` takes to the relay's user port (docs/api.md §11): through kube-apiserver's service proxy,
 * authenticated as the kubeconfig says (client certificate, token, exec plugin). kube-apiserver consumes the
 * Authorization header, so the user's bearer token also travels in X-Hami-Authorization, which the relay checks
 * exactly as Authorization. One source for `ui` and for `pod`/`node`: the relay flags, their defaults, the proxy
 * path and the headers.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { CliError, UsageError } from './errors';
import type { KubeSelection } from './kubeClusterReader';
import { errorMessage } from '../errors';

export interface RelayOptions {
  readonly relayNamespace: string;
  readonly relayService: string;
  readonly relayPort: number;
  readonly relayScheme: 'https' | 'http';
}

export const relayDefaults: RelayOptions = { relayNamespace: 'hami-system', relayService: 'hami-relay', relayPort: 8081, relayScheme: 'https' };

/** The flags for node:util parseArgs (no defaults there: an absent flag is told from a given one). */
export const relayFlags = {
  'relay-namespace': { type: 'string' },
  'relay-service': { type: 'string' },
  'relay-port': { type: 'string' },
  'relay-scheme': { type: 'string' },
} as const;

/** kubectl's `--context` and `--kubeconfig`, for node:util parseArgs. */
export const kubeFlags = { context: { type: 'string' }, kubeconfig: { type: 'string' } } as const;

export const kubeFlagsHelp: readonly (readonly [string, string])[] = [
  ['--context NAME', 'the kubeconfig context to use (default: the current one)'],
  ['--kubeconfig FILE', 'the kubeconfig file (default: KUBECONFIG, else ~/.kube/config)'],
];

/** The selection the flags make; an empty value counts as not given, as kubectl treats it. */
export function kubeSelectionOf(values: { readonly context?: string | undefined; readonly kubeconfig?: string | undefined }): KubeSelection {
  const given = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value);
  const kubeconfig = given(values.kubeconfig);
  const context = given(values.context);
  return { ...(kubeconfig !== undefined ? { kubeconfig } : {}), ...(context !== undefined ? { context } : {}) };
}

/** The relay flags in help texts (`optionList`). */
export const relayFlagsHelp: readonly (readonly [string, string])[] = [
  ['--relay-namespace NS', `the relay's namespace (default ${relayDefaults.relayNamespace})`],
  ['--relay-service NAME', `the relay's Service (default ${relayDefaults.relayService})`],
  ['--relay-port N', `its user port (default ${relayDefaults.relayPort})`],
  ['--relay-scheme S', 'https (default) or http (a relay with RELAY_USER_TLS=off)'],
];

export function parseRelayFlags(values: { readonly [K in keyof typeof relayFlags]?: string | undefined }): RelayOptions {
  const port = values['relay-port'] ?? String(relayDefaults.relayPort);
  const relayPort = Number(port);
  if (!/^\d+$/.test(port) || relayPort < 1 || relayPort > 65535) throw new UsageError(`--relay-port must be a port number, got "${port}"`);
  const scheme = values['relay-scheme'] ?? relayDefaults.relayScheme;
  if (scheme !== 'https' && scheme !== 'http') throw new UsageError(`--relay-scheme must be https or http, got "${scheme}"`);
  return {
    relayNamespace: values['relay-namespace'] ?? relayDefaults.relayNamespace,
    relayService: values['relay-service'] ?? relayDefaults.relayService,
    relayPort,
    relayScheme: scheme,
  };
}

/** `<server>/api/v1/namespaces/<ns>/services/<scheme>:<name>:<port>/proxy`, no trailing slash. */
export function relayProxyPrefix(server: string, relay: RelayOptions): string {
  return `${server.replace(/\/+$/, '')}/api/v1/namespaces/${encodeURIComponent(relay.relayNamespace)}/services/${relay.relayScheme}:${encodeURIComponent(relay.relayService)}:${relay.relayPort}/proxy`;
}

export interface KubeRequest {
  /** The API server's address. */
  readonly server: string;
  /** TLS material and credentials for node:https, as the kubeconfig gives them. */
  readonly base: RequestOptions;
  /** Headers for each request: the kubeconfig's, plus the bearer token again in X-Hami-Authorization. */
  readonly headers: OutgoingHttpHeaders;
  /** False when the kubeconfig's user has no bearer token (a client certificate): the relay then sees none. */
  readonly forwardsToken: boolean;
}

export async function kubeRequest(kc: KubeConfig): Promise<KubeRequest> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new UsageError('the kubeconfig has no current context with a cluster');
  const base: RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(base);
  } catch (err) {
    // An exec plugin that fails, a certificate file that is missing, plain http:// without insecure-skip-tls-verify.
    throw new CliError(`the kubeconfig's credentials for ${cluster.server} cannot be used: ${errorMessage(err)}`, { cause: err });
  }
  const headers = (base.headers ?? {}) as OutgoingHttpHeaders;
  const authorization = typeof headers.Authorization === 'string' ? headers.Authorization : typeof headers.authorization === 'string' ? headers.authorization : undefined;
  return {
    server: cluster.server,
    base,
    headers: { ...headers, ...(authorization !== undefined ? { 'x-hami-authorization': authorization } : {}) },
    forwardsToken: authorization !== undefined,
  };
}
