/**
 * The bench's store sits behind its delaying proxy in the same process, called in memory (bench/proxy.ts). The
 * product's own DynamoDB client must not be able to tell: the same answers, errors and capacity as over HTTP, and
 * the proxy still observes each call.
 */
import type { RequestListener } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { inMemoryUpstream, startDelayingProxy, timerMs, type DelayingProxy } from '../../../bench/proxy';
import { createDocumentClient, isConditionFailed } from '../../../lib/store/dynamo';
import { ensureTables } from '../../../lib/store/tables';

describe('bench: a store called in memory behind the delaying proxy', () => {
  let proxy: DelayingProxy;

  beforeAll(async () => {
    const store = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }).listeners('request')[0] as RequestListener;
    proxy = await startDelayingProxy(inMemoryUpstream(store), 0);
    const admin = new DynamoDBClient({ region: 'us-east-1', endpoint: proxy.url, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await ensureTables(admin, ['bench-table'], () => Promise.resolve());
    admin.destroy();
  });

  afterAll(() => proxy.close());

  it('answers the product client as dynalite over HTTP does: items, refused conditions, capacity', async () => {
    const doc = createDocumentClient({ region: 'us-east-1', endpoint: proxy.url, localCredentials: true });
    const before = proxy.calls.length;
    await doc.send('PutItem', { TableName: 'bench-table', Item: { pk: 'NODE#a', sk: 'x', v: 1, cards: { 'GPU-0': 3 } }, ReturnConsumedCapacity: 'TOTAL' });
    const updated = await doc.send('UpdateItem', {
      TableName: 'bench-table',
      Key: { pk: 'NODE#a', sk: 'x' },
      UpdateExpression: 'SET v = v + :one',
      ConditionExpression: 'v = :v',
      ExpressionAttributeValues: { ':one': 1, ':v': 1 },
      ReturnValues: 'ALL_NEW',
    });
    expect(updated.Attributes).toEqual({ pk: 'NODE#a', sk: 'x', v: 2, cards: { 'GPU-0': 3 } });

    const refused = doc.send('UpdateItem', { TableName: 'bench-table', Key: { pk: 'NODE#a', sk: 'x' }, UpdateExpression: 'SET v = :w', ConditionExpression: 'v = :v', ExpressionAttributeValues: { ':w': 9, ':v': 1 } });
    expect(isConditionFailed(await refused.catch((err: unknown) => err))).toBe(true);

    const read = await doc.send('Query', { TableName: 'bench-table', KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'NODE#a' } });
    expect(read.Items).toEqual([{ pk: 'NODE#a', sk: 'x', v: 2, cards: { 'GPU-0': 3 } }]);

    const observed = proxy.calls.slice(before);
    expect(observed.map((c) => [c.operation, c.status])).toEqual([
      ['PutItem', 200],
      ['UpdateItem', 200],
      ['UpdateItem', 400],
      ['Query', 200],
    ]);
    expect(observed[0]!.writeUnits).toBe(1);
    // A refused write is billed by the stored item's size, which the proxy learnt from the answer before it.
    expect(observed[2]!.writeUnits).toBe(1);
    expect(observed[3]!.responseBytes).toBeGreaterThan(0);
  });

  it('turns a request the store cannot parse into the store\'s own error, not a broken connection', async () => {
    const answer = await fetch(`${proxy.url}/`, { method: 'POST', headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.GetItem' }, body: '{not json' });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ __type: 'com.amazon.coral.service#SerializationException' });
  });
});

describe('bench: what the proxy observes of the time a call takes', () => {
  it('tells the time the upstream took from the time its own waits added beyond the round trip asked', async () => {
    // The proxy's clock and waits are this test's: the upstream takes 7 ms, and each wait ends 0.25 ms late, as timers
    // on a busy machine do. Every figure is exact whatever the machine does.
    let clock = 1_000;
    const waits: number[] = [];
    const time = {
      now: () => clock,
      wait: async (ms: number) => {
        waits.push(ms);
        clock += ms + 0.25;
      },
    };
    const upstream = {
      forward: async () => {
        clock += 7;
        return { status: 200, headers: { 'content-type': 'application/x-amz-json-1.0' }, body: Buffer.from('{}') };
      },
      close: () => undefined,
    };
    const proxy = await startDelayingProxy(upstream, 5, time);
    try {
      const answer = await fetch(`${proxy.url}/`, { method: 'POST', headers: { 'x-amz-target': 'DynamoDB_20120810.GetItem' }, body: '{}' });
      expect(answer.status).toBe(200);
      // 5 ms asked: 2.5 on the way in (2.75 taken), then what is left of the round trip (2.25, 2.5 taken): only the
      // second wait's lateness is added, and the asked round trip is not counted as delay.
      expect(waits).toEqual([2.5, 2.25]);
      expect(proxy.calls.map((c) => [c.operation, c.serviceMs, c.delayOverRttMs, c.endMs - c.startMs])).toEqual([['GetItem', 7, 0.25, 12.25]]);
    } finally {
      await proxy.close();
    }
  });

  it("asks node's whole-millisecond timers for the nearest whole millisecond, and for nothing below half of one", () => {
    expect([2.5, 2.25, 2.75, 0.4, 0, -1].map(timerMs)).toEqual([3, 2, 3, 0, 0, 0]);
  });
});
