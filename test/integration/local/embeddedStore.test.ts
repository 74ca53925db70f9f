/**
 * The embedded store's data directory: one store process at a time opens it. A second start is told so by name
 * (dynalite itself only fails its first request), tries again while the first may still be letting go, and opens
 * the directory, with what the first wrote, once the first has stopped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { DataDirectoryUnavailableError, startEmbeddedStore, type DirectoryRetry, type EmbeddedStore } from '../../../lib/local/embeddedStore';

function client(store: EmbeddedStore): DynamoDBClient {
  return new DynamoDBClient({ endpoint: store.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

describe('embedded store with a data directory', () => {
  let dir: string;
  const started: EmbeddedStore[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hami-store-'));
  });

  afterEach(async () => {
    await Promise.all(started.splice(0).map((store) => store.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a directory another store holds, after trying again, with a message naming it', async () => {
    const first = await startEmbeddedStore({ mode: 'child-process', dataDir: dir });
    started.push(first);
    const waits: number[] = [];
    const retry: DirectoryRetry = { attempts: 3, delayMs: 250, sleep: async (ms) => void waits.push(ms) };

    const second = startEmbeddedStore({ mode: 'child-process', dataDir: dir }, retry);

    await expect(second).rejects.toThrow(DataDirectoryUnavailableError);
    await expect(second).rejects.toThrow(`could not open its data directory ${dir}: another process is using it`);
    expect(waits).toEqual([250, 250]);
  }, 30_000);

  it('opens the directory, with what was written, once the store holding it has stopped', async () => {
    const first = await startEmbeddedStore({ mode: 'child-process', dataDir: dir });
    const writer = client(first);
    await writer.send(
      new CreateTableCommand({
        TableName: 'kept',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    writer.destroy();
    await first.stop();

    const second = await startEmbeddedStore({ mode: 'child-process', dataDir: dir });
    started.push(second);
    const reader = client(second);
    expect((await reader.send(new ListTablesCommand({}))).TableNames).toEqual(['kept']);
    reader.destroy();
  }, 30_000);
});
