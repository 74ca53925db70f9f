/**
 * `kubectl hami ui` (docs/api.md §11): the web console in the user's browser, with the user's own kubeconfig
 * credentials, so nobody pastes a token. A local port on loopback forwards each GET to the relay's user port
 * through kube-apiserver's service proxy, authenticated as the kubeconfig says (client certificate, token, exec
 * plugin). kube-apiserver consumes the Authorization header, so the user's bearer token also travels in
 * X-Hami-Authorization, which the relay checks exactly as Authorization (TokenReview, SubjectAccessReview).
 * The token stays in this process: never in a URL, never in the browser.
 */
import { request as httpRequest, createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { UsageError } from './errors';
import { errorMessage } from '../errors';

export const uiUsage = `Usage: kubectl hami ui [--port N] [--relay-namespace NS] [--relay-service NAME] [--relay-port N] [--relay-scheme https|http] [--no-browser]

Opens the web console through a local port that forwards to the relay's user port with your kubeconfig's
credentials (kube-apiserver's service proxy: you need get on services/proxy for the relay's Service).
  --port N             local port (default: any free one)
  --relay-namespace NS the relay's namespace (default hami-system)
  --relay-service NAME the relay's Service (default hami-relay)
  --relay-port N       its user port (default 8081)
  --relay-scheme S     https (default) or http (a relay with RELAY_USER_TLS=off)
  --no-browser         print the address only`;

export interface UiOptions {
  readonly port: number;
  readonly relayNamespace: string;
  readonly relayService: string;
  readonly relayPort: number;
  readonly relayScheme: 'https' | 'http';
  readonly openBrowser: boolean;
}

export function parseUiArgs(argv: readonly string[]): UiOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      options: {
        port: { type: 'string', default: '0' },
        'relay-namespace': { type: 'string', default: 'hami-system' },
        'relay-service': { type: 'string', default: 'hami-relay' },
        'relay-port': { type: 'string', default: '8081' },
        'relay-scheme': { type: 'string', default: 'https' },
        'no-browser': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(errorMessage(err)).split('. ')[0] ?? ''}; see kubectl hami ui --help`, { cause: err });
  }
  if (values.help) return 'help';
  const port = Number(values.port);
  const relayPort = Number(values['relay-port']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a port number, got "${values.port}"`);
  if (!Number.isInteger(relayPort) || relayPort < 1 || relayPort > 65535) throw new UsageError(`--relay-port must be a port number, got "${values['relay-port']}"`);
  if (values['relay-scheme'] !== 'https' && values['relay-scheme'] !== 'http') throw new UsageError(`--relay-scheme must be https or http, got "${values['relay-scheme']}"`);
  return {
    port,
    relayNamespace: values['relay-namespace'] ?? 'hami-system',
    relayService: values['relay-service'] ?? 'hami-relay',
    relayPort,
    relayScheme: values['relay-scheme'],
    openBrowser: !values['no-browser'],
  };
}

export interface RunningUi {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** False when the kubeconfig's user has no bearer token (a client certificate): the console then asks for one. */
  readonly forwardsToken: boolean;
  close(): Promise<void>;
}

/** Headers that belong to one hop, never forwarded. */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer']);

export async function startUi(kc: KubeConfig, opts: Pick<UiOptions, 'port' | 'relayNamespace' | 'relayService' | 'relayPort' | 'relayScheme'>): Promise<RunningUi> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new UsageError('the kubeconfig has no current context with a cluster');
  // The kubeconfig's TLS material and credentials (token, exec plugin or client certificate), as kubectl uses them.
  const base: RequestOptions = {};
  await kc.applyToHTTPSOptions(base);
  const headers = (base.headers ?? {}) as OutgoingHttpHeaders;
  const authorization = typeof headers.Authorization === 'string' ? headers.Authorization : typeof headers.authorization === 'string' ? headers.authorization : undefined;
  const prefix = `${cluster.server.replace(/\/+$/, '')}/api/v1/namespaces/${encodeURIComponent(opts.relayNamespace)}/services/${opts.relayScheme}:${encodeURIComponent(opts.relayService)}:${opts.relayPort}/proxy`;
  // Everything this port forwards stays under the relay's service proxy: the kubeconfig's credentials reach no other path.
  const scope = new URL(prefix);
  let port = 0;

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    // Only this machine's browser, by name: a page elsewhere that rebinds a host name to 127.0.0.1 is refused.
    const host = (req.headers.host ?? '').toLowerCase();
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('this port serves the console to http://127.0.0.1 only\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain' }).end('the console only reads\n');
      return;
    }
    const target = new URL(`${prefix}${req.url ?? '/'}`);
    // URL resolves `..` (and `%2e%2e`) segments: a path that climbs out of the proxy is refused, not forwarded.
    if (target.origin !== scope.origin || !target.pathname.startsWith(`${scope.pathname}/`)) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('this port forwards only paths of the console and its routes\n');
      return;
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const upstream = send(
      target,
      {
        ...base,
        method: req.method,
        headers: {
          ...headers,
          accept: req.headers.accept ?? '*/*',
          ...(authorization !== undefined ? { 'x-hami-authorization': authorization } : {}),
        },
      },
      (answer) => {
        const out: OutgoingHttpHeaders = {};
        for (const [key, value] of Object.entries(answer.headers)) if (!HOP.has(key) && value !== undefined) out[key] = value;
        res.writeHead(answer.statusCode ?? 502, out);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'BadGateway', code: 502, message: `cannot reach the relay through the Kubernetes API: ${err.message}` }));
    });
    upstream.end();
  };

  const server: Server = createServer(serve);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    forwardsToken: authorization !== undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
