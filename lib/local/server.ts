/**
 * The local control plane (docs/api.md §6): the Lambda handlers behind a plain Node HTTP server, over an
 * embedded dynalite (or any DynamoDB-compatible endpoint given). Requests are turned into API Gateway
 * HTTP API events so the handlers run exactly as deployed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { startEmbeddedStore, type EmbeddedStore, type EmbeddedStoreMode } from './embeddedStore';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { createDeps, dynamoStores, type AppDeps } from '../app';
import { loadConfig } from '../config';
import { systemRuntime, type Runtime } from '../clock';
import { PayloadTooLargeError, UnauthorizedError } from '../errors';
import { lambdaHandler, type LambdaHandler } from '../http/lambda';
import { bearerToken } from '../http/bearer';
import { errorResponse, json, statusBody, type HttpResponse } from '../http/respond';
import { MAX_BODY_BYTES, routes, templatePattern, type Route } from '../http/routes';
import { emptyStats, type StoreStats } from '../store/dynamo';
import { ensureTables } from '../store/tables';
import { consoleAsset } from '../console/serve';

export interface LocalServerOptions {
  readonly port?: number;
  readonly host?: string;
  /** Bearer token every route then requires (HAMI_API_TOKEN). */
  readonly token?: string;
  /** Extra configuration, as environment variables (defaults to process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Use this DynamoDB-compatible endpoint instead of an embedded dynalite (default: DDB_ENDPOINT from `env`). */
  readonly ddbEndpoint?: string;
  /** Where the embedded dynalite runs (default: in this process); a data directory is always served by a child process. */
  readonly storeMode?: EmbeddedStoreMode;
  /** The embedded store keeps its data in this directory (default: HAMI_DATA_DIR from `env`; unset: in memory). */
  readonly dataDir?: string;
  readonly runtime?: Runtime;
  /** Counts the server's store calls and capacity (benchmarks). */
  readonly stats?: StoreStats;
}

/** Where the server keeps its state, in words for the start-up line. */
export type StoreDescription = { readonly kind: 'memory' } | { readonly kind: 'directory'; readonly path: string } | { readonly kind: 'endpoint'; readonly endpoint: string };

export interface LocalServer {
  readonly url: string;
  readonly deps: AppDeps;
  readonly store: StoreDescription;
  readonly stats: StoreStats;
  close(): Promise<void>;
}

export async function startLocalServer(options: LocalServerOptions = {}): Promise<LocalServer> {
  const runtime = options.runtime ?? systemRuntime;
  const env = options.env ?? process.env;
  const external = options.ddbEndpoint ?? nonEmpty(env.DDB_ENDPOINT);
  const dataDir = options.dataDir ?? nonEmpty(env.HAMI_DATA_DIR);
  const embedded = external ? undefined : await startEmbeddedStore(dataDir ? { mode: 'child-process', dataDir } : { mode: options.storeMode ?? 'in-process' });
  try {
    return await serveOn(options, runtime, env, { external, dataDir, embedded });
  } catch (error) {
    // Nothing listens: the store started for this server must not outlive the failure (a bad configuration, a port
    // in use), or the process that asked would never exit.
    await embedded?.stop();
    throw error;
  }
}

/** The local server on a store already running (`embedded`, or the `external` endpoint). */
async function serveOn(
  options: LocalServerOptions,
  runtime: Runtime,
  env: NodeJS.ProcessEnv,
  { external, dataDir, embedded }: { external: string | undefined; dataDir: string | undefined; embedded: EmbeddedStore | undefined },
): Promise<LocalServer> {
  const endpoint = external ?? embedded?.endpoint ?? '';
  const config = loadConfig({ ...env, DDB_ENDPOINT: endpoint, ...(options.token !== undefined ? { HAMI_API_TOKEN: options.token } : {}) });
  const raw = new DynamoDBClient({
    region: config.region,
    endpoint,
    ...(config.localCredentials ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  try {
    // Waiting for the store to make its tables is the store's progress, in real time: an injected clock (the demo's
    // fixed one) must not move for it, or the demo prints other times on a busy machine.
    await ensureTables(raw, [config.stateTable, config.recordsTable], systemRuntime.sleep);
  } finally {
    raw.destroy();
  }
  const stats = options.stats ?? emptyStats();
  const deps = createDeps(config, runtime, dynamoStores(config, runtime, { stats }));
  const handlers = new Map<Route, LambdaHandler>(routes.map((route) => [route, lambdaHandler(route, () => deps)]));
  // The raw path's shape only: its segments are decoded later, by the route's handler. Compiled once, not per request.
  const shapes = routes.map((route) => ({ route, pattern: templatePattern(route.path).pattern }));
  const token = config.apiToken;

  const server = createServer((req, res) => {
    serve(req, res).catch((err: unknown) => {
      deps.logger.error('Local server failure', { error: err as Error });
      if (!res.headersSent) send(res, json(500, statusBody(500, 'InternalError', 'internal error in the local server')));
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://local');
    const rawPath = url.pathname;
    // The web console (docs/api.md §11): its assets carry no data, so they need no token; its API calls do.
    const asset = consoleAsset(req.method, rawPath);
    if (asset !== undefined) {
      req.resume();
      return send(res, asset);
    }
    const matching = shapes.filter(({ pattern }) => pattern.test(rawPath)).map(({ route }) => route);
    if (matching.length === 0) return send(res, json(404, statusBody(404, 'NotFound', `no route for ${safePath(rawPath)}`)));
    const route = matching.find((r) => r.method === req.method);
    if (!route) return send(res, json(405, statusBody(405, 'MethodNotAllowed', `${req.method} is not allowed on ${safePath(rawPath)}`)));
    const reference = randomUUID();
    if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
      req.resume();
      return send(res, errorResponse(new UnauthorizedError('missing or wrong bearer token'), 'api', reference));
    }
    const body = await readBody(req);
    if (body === undefined) return send(res, errorResponse(new PayloadTooLargeError(`request body larger than ${MAX_BODY_BYTES} bytes`), route.kind, reference));
    const query: Record<string, string> = {};
    url.searchParams.forEach((value, key) => (query[key] = value));
    const handler = handlers.get(route);
    if (!handler) throw new Error(`no handler for ${route.method} ${route.path}`);
    const result = await handler(toEvent(`${route.method} ${route.path}`, req, url, body, query), toContext(reference, route.name));
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
    stats,
    store: external ? { kind: 'endpoint', endpoint: external } : dataDir ? { kind: 'directory', path: dataDir } : { kind: 'memory' },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await embedded?.stop();
    },
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** A path as text for a message: percent-encoded as received, cut to a sane length. */
function safePath(rawPath: string): string {
  return rawPath.length > 200 ? `${rawPath.slice(0, 197)}...` : rawPath;
}

/** Whether the header presents `token` (the scheme in any letter case, RFC 7235), compared in constant time. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = bearerToken(header);
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

function toEvent(routeKey: string, req: IncomingMessage, url: URL, body: string, queryStringParameters: Record<string, string>): APIGatewayProxyEventV2 {
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

/** The start-up line's words for where state lives. */
export function describeStore(store: StoreDescription): string {
  switch (store.kind) {
    case 'memory':
      return 'embedded store in memory: state is lost when this process ends (set HAMI_DATA_DIR=<dir> to keep it)';
    case 'directory':
      return `embedded store kept in ${store.path}`;
    case 'endpoint':
      return `DynamoDB-compatible store at ${store.endpoint}`;
  }
}
