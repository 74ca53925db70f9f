/**
 * `kubectl hami ui` (docs/api.md §11): the web console in the user's browser, with the user's own kubeconfig
 * credentials, so nobody pastes a token. A local port on loopback forwards each GET to the relay's user port
 * through kube-apiserver's service proxy, authenticated as the kubeconfig says (client certificate, token, exec
 * plugin). kube-apiserver consumes the Authorization header, so the user's bearer token also travels in
 * X-Hami-Authorization, which the relay checks exactly as Authorization (TokenReview, SubjectAccessReview).
 * The token stays in this process: never in a URL, never in the browser.
 */
import { request as httpRequest, createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { UsageError } from './errors';
import type { Program } from './args';
import type { KubeSelection } from './kubeClusterReader';
import { optionList } from './style';
import { kubeFlags, kubeFlagsHelp, kubeRequest, kubeSelectionOf, parseRelayFlags, relayFlags, relayFlagsHelp, relayProxyPrefix, type RelayOptions } from './relayRoute';
import { errorMessage } from '../errors';

export function uiUsage(program: Program = 'kubectl hami'): string {
  return `Usage: ${program} ui [--context NAME] [--kubeconfig FILE] [--port N] [--relay-namespace NS] [--relay-service NAME] [--relay-port N] [--relay-scheme https|http] [--no-browser]

Opens the web console through a local port that forwards to the relay's user port with your kubeconfig's
credentials (kube-apiserver's service proxy: you need get on services/proxy for the relay's Service).
${optionList([
    ...kubeFlagsHelp,
    ['--port N', 'local port (default: any free one)'],
    ...relayFlagsHelp,
    ['--no-browser', 'print the address only'],
  ])}`;
}

export interface UiOptions extends RelayOptions {
  readonly port: number;
  readonly openBrowser: boolean;
  readonly kube: KubeSelection;
}

export function parseUiArgs(argv: readonly string[], program: Program = 'kubectl hami'): UiOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      options: {
        port: { type: 'string', default: '0' },
        ...relayFlags,
        ...kubeFlags,
        'no-browser': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(errorMessage(err)).split('. ')[0] ?? ''}; see ${program} ui --help`, { cause: err });
  }
  if (values.help) return 'help';
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a port number, got "${values.port}"`);
  return {
    port,
    ...parseRelayFlags(values),
    openBrowser: !values['no-browser'],
    kube: kubeSelectionOf(values),
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

export async function startUi(kc: KubeConfig, opts: Pick<UiOptions, 'port'> & RelayOptions): Promise<RunningUi> {
  // The kubeconfig's TLS material and credentials (token, exec plugin or client certificate), as kubectl uses them.
  const { server: apiServer, base, headers, forwardsToken } = await kubeRequest(kc);
  const prefix = relayProxyPrefix(apiServer, opts);
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
    forwardsToken,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
