/**
 * DynamoDB's HTTP front played on loopback (127.0.0.1, random port) for the store client's unit suites
 * (test/unit/store): each request's headers and JSON body go to the suite's handler, which answers as the case needs,
 * or never (a hung call). The suites keep what they record; the real backends are in ./dynamo.ts.
 *
 *   const dynamo = await startFakeDynamo((call, res) => answerDynamo(res, 200, {}));
 *   // ... new DynamoHttpClient({ endpoint: dynamo.endpoint, ... }) ... await dynamo.close();
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as DynamoDB would read it: its headers (the target, the signature, the date) and its JSON body. */
export interface DynamoCall {
  readonly headers: IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
}

export interface FakeDynamo {
  readonly endpoint: string;
  /** Cuts every open connection, hung calls included (a server that went away mid-call). */
  dropConnections(): void;
  close(): Promise<void>;
}

/** Starts the server; `handle` sees each request once its body has arrived. */
export async function startFakeDynamo(handle: (call: DynamoCall, res: ServerResponse) => void): Promise<FakeDynamo> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown> }, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dropConnections: () => server.closeAllConnections(),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers as DynamoDB does: JSON 1.0 with `status`; a string body is sent as it is (a checksum may be computed on it). */
export function answerDynamo(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}
