/**
 * The local control plane (CONTRACT 6): the Lambda handlers behind a plain Node HTTP server, over an
 * embedded dynalite (or any DynamoDB-compatible endpoint given). Requests are turned into API Gateway
 * HTTP API events so the handlers run exactly as deployed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { startEmbeddedStore, type EmbeddedStoreMode } from './embeddedStore';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { createDeps } from '../app';
import { loadConfig } from '../config';
import { systemRuntime, type Runtime } from '../clock';
import type { ControlDeps } from '../control/deps';
import { PayloadTooLargeError, UnauthorizedError } from '../errors';
import { lambdaHandler, type LambdaHandler } from '../http/lambda';
import { errorResponse, json, statusBody, type HttpResponse } from '../http/respond';
import {
  bindOutcomeRoute,
  bindRoute,
  clusterEventsRoute,
  filterRoute,
  healthzRoute,
  MAX_BODY_BYTES,
  nodeDevicesRoute,
  schedulerLogRoute,
  type Route,
} from '../http/routes';
import { ensureTables } from '../store/tables';

export interface LocalServerOptions {
  readonly port?: number;
  readonly host?: string;
  /** Bearer token every route then requires (HAMI_API_TOKEN). */
  readonly token?: string;
  /** Extra configuration, as environment variables (defaults to process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Use this DynamoDB-compatible endpoint instead of an embedded dynalite. */
  readonly ddbEndpoint?: string;
  /** Where the embedded dynalite runs (default: in this process). */
  readonly storeMode?: EmbeddedStoreMode;
  readonly runtime?: Runtime;
}

export interface LocalServer {
  readonly url: string;
  readonly deps: ControlDeps;
  close(): Promise<void>;
}

interface RouteEntry {
  readonly method: 'GET' | 'POST';
  readonly pattern: RegExp;
  readonly params: readonly string[];
  readonly route: Route;
  readonly routeKey: string;
}

const ROUTES: readonly (Omit<RouteEntry, 'pattern' | 'params'> & { readonly path: string })[] = [
  { method: 'POST', path: '/filter', route: filterRoute, routeKey: 'POST /filter' },
  { method: 'POST', path: '/bind', route: bindRoute, routeKey: 'POST /bind' },
  { method: 'POST', path: '/bind/outcome', route: bindOutcomeRoute, routeKey: 'POST /bind/outcome' },
  { method: 'POST', path: '/cluster/events', route: clusterEventsRoute, routeKey: 'POST /cluster/events' },
  {
    method: 'GET',
    path: '/api/v1/namespaces/{ns}/pods/{name}/schedulerlog',
    route: schedulerLogRoute,
    routeKey: 'GET /api/v1/namespaces/{ns}/pods/{name}/schedulerlog',
  },
  { method: 'GET', path: '/api/v1/nodes/{name}/devices', route: nodeDevicesRoute, routeKey: 'GET /api/v1/nodes/{name}/devices' },
  { method: 'GET', path: '/healthz', route: healthzRoute, routeKey: 'GET /healthz' },
];

function compile(path: string): { pattern: RegExp; params: string[] } {
  const params: string[] = [];
  const source = path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    params.push(name);
    return '([^/]+)';
  });
  return { pattern: new RegExp(`^${source}$`), params };
}

export async function startLocalServer(options: LocalServerOptions = {}): Promise<LocalServer> {
  const runtime = options.runtime ?? systemRuntime;
  const store = options.ddbEndpoint ? undefined : await startEmbeddedStore(options.storeMode ?? 'in-process');
  const endpoint = options.ddbEndpoint ?? store?.endpoint ?? '';
  const env = options.env ?? process.env;
  const config = loadConfig({ ...env, DDB_ENDPOINT: endpoint, ...(options.token !== undefined ? { HAMI_API_TOKEN: options.token } : {}) });
  const rawClient = new DynamoDBClient({ region: config.region, endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTables(rawClient, [config.stateTable, config.recordsTable], runtime.sleep);
  rawClient.destroy();
  const deps = createDeps(config, runtime);

  const entries: RouteEntry[] = ROUTES.map((r) => ({ ...r, ...compile(r.path) }));
  const handlers = new Map<Route, LambdaHandler>(entries.map((e) => [e.route, lambdaHandler(e.route, () => deps)]));
  const token = config.apiToken;

  const server = createServer((req, res) => {
    serve(req, res).catch((err: unknown) => {
      deps.logger.error('Local server failure', { error: err as Error });
      if (!res.headersSent) send(res, json(500, statusBody(500, 'InternalError', 'internal error in the local server')));
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://local');
    const matches = entries.filter((e) => e.pattern.test(url.pathname));
    if (matches.length === 0) return send(res, json(404, statusBody(404, 'NotFound', `no route for ${url.pathname}`)));
    const entry = matches.find((e) => e.method === req.method);
    if (!entry) return send(res, json(405, statusBody(405, 'MethodNotAllowed', `${req.method} is not allowed on ${url.pathname}`)));
    const reference = randomUUID();
    if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
      req.resume();
      return send(res, errorResponse(new UnauthorizedError('missing or wrong bearer token'), 'api', reference));
    }
    const body = await readBody(req);
    if (body === undefined) return send(res, errorResponse(new PayloadTooLargeError(`request body larger than ${MAX_BODY_BYTES} bytes`), entry.route.kind, reference));
    const match = entry.pattern.exec(url.pathname) ?? [];
    const pathParameters: Record<string, string> = {};
    entry.params.forEach((name, i) => (pathParameters[name] = decodeURIComponent(match[i + 1] ?? '')));
    const query: Record<string, string> = {};
    url.searchParams.forEach((value, key) => (query[key] = value));
    const handler = handlers.get(entry.route);
    if (!handler) throw new Error(`no handler for ${entry.routeKey}`);
    const result = await handler(toEvent(entry.routeKey, req, url, body, pathParameters, query), toContext(reference, entry.route.name));
    send(res, { statusCode: result.statusCode ?? 200, headers: (result.headers ?? {}) as Record<string, string>, body: result.body ?? '' });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${address.port}`,
    deps,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await store?.stop();
    },
  };
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = /^Bearer (.+)$/.exec(header ?? '')?.[1];
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The body, or undefined once it exceeds the limit (the rest is drained, not buffered). */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) tooLarge = true;
    if (!tooLarge) chunks.push(buf);
  }
  return tooLarge ? undefined : Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, response: HttpResponse): void {
  res.writeHead(response.statusCode, response.headers);
  res.end(response.body);
}

function toEvent(
  routeKey: string,
  req: IncomingMessage,
  url: URL,
  body: string,
  pathParameters: Record<string, string>,
  queryStringParameters: Record<string, string>,
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[key] = value;
  delete headers.authorization;
  const now = Date.now();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    queryStringParameters,
    pathParameters,
    body,
    isBase64Encoded: false,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: { method: req.method ?? 'GET', path: url.pathname, protocol: 'HTTP/1.1', sourceIp: req.socket.remoteAddress ?? '', userAgent: req.headers['user-agent'] ?? '' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
    },
  };
}

function toContext(requestId: string, functionName: string): Context {
  const deadline = Date.now() + 30_000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/local/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** Used by `npm start`: validated configuration, then the address printed once ready. */
export async function runFromEnvironment(): Promise<LocalServer> {
  const portText = process.env.PORT ?? '8080';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be an integer between 0 and 65535, got "${portText}"`);
  // The store gets its own process (and core) so the handlers keep the event loop to themselves.
  return startLocalServer({ port, host: '127.0.0.1', storeMode: 'child-process' });
}
