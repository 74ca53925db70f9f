/**
 * How an attempt's record body is stored: Brotli-compressed JSON marked `enc: br`; attempts written before that
 * (gzip'd, no `enc`) stay readable for their retention; a body that is neither is corrupt, not guessed at. A passed
 * filter's HAMi message is stored as its evidence and rebuilt on read, word for word.
 */
import { brotliCompressSync, brotliDecompressSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { decide } from '../../../lib/engine/decide';
import type { NodeState } from '../../../lib/engine/types';
import type { Decision } from '../../../lib/engine/decision';
import { CorruptItemError } from '../../../lib/errors';
import { decodeRecord, encodeRecord, encodeRecordApart, NameListKeys, RECORD_ENCODING } from '../../../lib/store/recordCodec';
import { card, cardFiguresArb, config, gpu, input, node, pod } from '../engine/fixtures';

const record: AttemptRecord = {
  pod: { namespace: 'team-a', name: 'train-0', uid: 'uid-train-0' },
  attemptId: 'a1',
  attempt: 0,
  time: '2026-11-24T00:00:00.000Z',
  filter: { status: 'failed', summary: 'no available node, 2 nodes do not meet', evaluated: 2, reasons: [{ code: 'CardInsufficientMemory', nodes: 2 }], nodes: [] },
  bind: { status: 'pending', summary: 'not attempted: no node passed the filter' },
};

describe('attempt record bodies', () => {
  it('reads back what it writes', () => {
    expect(RECORD_ENCODING).toBe('br');
    expect(decodeRecord(encodeRecord(record), RECORD_ENCODING)).toEqual(record);
  });

  it('reads an attempt written gzip-compressed before Brotli (no encoding stored)', () => {
    expect(decodeRecord(gzipSync(JSON.stringify(record)), undefined)).toEqual(record);
  });

  it('calls a body with an unknown encoding, or one that does not decompress, corrupt', () => {
    expect(() => decodeRecord(encodeRecord(record), 'zstd')).toThrow(CorruptItemError);
    expect(() => decodeRecord(encodeRecord(record), undefined)).toThrow(CorruptItemError);
    expect(() => decodeRecord(gzipSync(JSON.stringify(record)), RECORD_ENCODING)).toThrow(CorruptItemError);
  });

  describe('a passed filter\'s message', () => {
    const passed = (decision: Extract<Decision, { kind: 'fit' }>, candidates: number): AttemptRecord => ({
      ...record,
      filter: {
        status: 'passed',
        summary: decision.message,
        node: decision.node,
        score: decision.score,
        nodePolicy: decision.nodePolicy,
        evaluated: candidates,
        nodes: [],
        packed: decision.packEvidence(),
        devices: decision.devices,
      },
      bind: { status: 'pending', summary: '' },
    });
    const storedJson = (body: Uint8Array) => JSON.parse(brotliDecompressSync(body).toString('utf8')) as { filter: Record<string, unknown> };
    const twoNodes = (policy: string) => {
      const cluster = [node('n-b', [card('b0')], { usage: { b0: { used: 1, usedmem: 1000, usedcores: 0 } } }), node('n-a', [card('a0')])];
      const decision = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })], { annotations: { 'hami.io/node-scheduler-policy': policy } }), cluster));
      if (decision.kind !== 'fit') throw new Error('expected a fit');
      return decision;
    };

    it('is left out of the stored body and comes back as written, in either policy\'s order', () => {
      for (const policy of ['binpack', 'spread']) {
        const decision = twoNodes(policy);
        const body = encodeRecord(passed(decision, 2));
        expect(storedJson(body).filter).not.toHaveProperty('summary');
        // Card ids are not stored: they come from the nodes' registrations when read (lib/engine/evidence.ts).
        const read = decodeRecord(body, RECORD_ENCODING, (name) => ({ 'n-b': { registrationVersion: 1, cards: [card('b0')] }, 'n-a': { registrationVersion: 1, cards: [card('a0')] } })[name]);
        expect(read.filter.summary).toBe(decision.message);
        expect(read.filter.nodes).toEqual(decision.evidence);
      }
      // Binpack lists the fuller node last (HAMi takes it); spread the emptier one.
      expect(twoNodes('binpack').message).toMatch(/^find fit node\(n-b\), 0 nodes not fit, 2 nodes fit\(n-a:[0-9.]+,n-b:[0-9.]+\)$/);
      expect(twoNodes('spread').message).toMatch(/^find fit node\(n-a\), 0 nodes not fit, 2 nodes fit\(n-b:[0-9.]+,n-a:[0-9.]+\)$/);
    });

    it('is read as stored from records written before (a summary and no policy)', () => {
      const decision = twoNodes('binpack');
      const { nodePolicy: _policy, ...older } = passed(decision, 2).filter;
      const body = Buffer.from(brotliCompressBody({ ...record, filter: { ...older, summary: 'find fit node(n-b) as written then' } }));
      expect(decodeRecord(body, RECORD_ENCODING).filter.summary).toBe('find fit node(n-b) as written then');
    });

    it('reads an attempt whose evidence cannot be unpacked without the nodes, saying why, rather than failing it', () => {
      const decision = twoNodes('binpack');
      const stored = passed(decision, 2);
      // As written: the message left to be rebuilt from the evidence.
      const written = storedJson(encodeRecord(stored));
      const later = { ...written, filter: { ...written.filter, packed: { ...stored.filter.packed, v: 99 } } };
      const read = decodeRecord(brotliCompressBody(later), RECORD_ENCODING);
      expect(read.evidenceUnreadable).toBe('packed evidence of unknown version 99');
      expect(read.filter.nodes).toEqual([]);
      expect(read.filter.summary).toBe("find fit node(n-b); the nodes' evidence cannot be read");
      expect([read.filter.node, read.filter.devices, read.bind]).toEqual([decision.node, decision.devices, stored.bind]);
      // Damaged evidence of a failed attempt keeps the message stored with it.
      const damaged = { ...record, filter: { ...record.filter, packed: { ...stored.filter.packed!, nodes: { ...stored.filter.packed!.nodes, failed: [0, 5] } } } };
      const failed = decodeRecord(brotliCompressBody(damaged), RECORD_ENCODING);
      expect([failed.filter.summary, failed.filter.nodes, failed.evidenceUnreadable]).toEqual([record.filter.summary, [], expect.stringMatching(/^packed evidence column nodes\.failed/)]);
    });

    it('stores the evaluated nodes\' names apart, by the key of their list, and reads the same record with them', () => {
      const registered = (name: string) => ({ 'n-b': { registrationVersion: 1, cards: [card('b0')] }, 'n-a': { registrationVersion: 1, cards: [card('a0')] } })[name];
      const decision = twoNodes('spread');
      const stored = passed(decision, 2);
      const keys = new NameListKeys();
      const encoded = encodeRecordApart(stored, keys);
      expect(encoded.list?.names).toEqual(['n-b', 'n-a']);
      const body = storedJson(encoded.body).filter as { packed: { v: unknown; nodes: Record<string, unknown> } };
      expect(body.packed.v).toBe('v5-names-apart');
      expect(body.packed.nodes).not.toHaveProperty('name');
      expect(body.packed.nodes.names).toBe(encoded.list?.key);
      const lists = new Map([[encoded.list!.key, encoded.list!.names]]);
      expect(decodeRecord(encoded.body, RECORD_ENCODING, registered, lists)).toEqual(decodeRecord(encodeRecord(stored), RECORD_ENCODING, registered));
      // Without its list (gone, or read by a release that does not know the form): the outcome reads, the evidence does not.
      const alone = decodeRecord(encoded.body, RECORD_ENCODING, registered);
      expect(alone.evidenceUnreadable).toBe('the node names this attempt refers to are no longer stored');
      expect([alone.filter.node, alone.filter.nodes]).toEqual([decision.node, []]);
      // An attempt without packed evidence has no list.
      expect(encodeRecordApart(record, keys).list).toBeUndefined();
    });

    it('keys a list by its names: the same names give the same key, any change another', () => {
      const keys = new NameListKeys();
      const names = ['n-a', 'n-b', 'n-c'];
      const key = keys.keyOf(names);
      expect(keys.keyOf([...names])).toBe(key);
      expect(new NameListKeys().keyOf([...names])).toBe(key);
      expect(keys.keyOf(['n-a', 'n-c', 'n-b'])).not.toBe(key);
      expect(keys.keyOf(['n-a', 'n-b'])).not.toBe(key);
      expect(keys.keyOf(names)).toBe(key);
      // The list remembered is its own: changing the array given does not make another list match the old key.
      const changing = ['n-x', 'n-y'];
      const before = keys.keyOf(changing);
      changing[1] = 'n-z';
      expect(keys.keyOf(changing)).not.toBe(before);
    });

    it('calls a passed record with neither a summary nor a policy corrupt', () => {
      const decision = twoNodes('binpack');
      const { nodePolicy: _policy, summary: _summary, ...neither } = passed(decision, 2).filter;
      expect(() => decodeRecord(brotliCompressBody({ ...record, filter: neither }), RECORD_ENCODING)).toThrow(CorruptItemError);
    });

    it('comes back word for word for random decisions: ties, unfit and unregistered nodes, both policies', () => {
      const cardArb = cardFiguresArb({ count: 3, devmem: 16000 });
      // Few usage values, so that equal scores (listed by name) are common.
      const usageArb = fc.constantFrom({ used: 0, usedmem: 0, usedcores: 0 }, { used: 1, usedmem: 4000, usedcores: 25 }, { used: 2, usedmem: 8000, usedcores: 50 });
      const nodeArb = fc.record({ cards: fc.array(fc.tuple(cardArb, usageArb), { maxLength: 3 }), registered: fc.boolean() });
      fc.assert(
        fc.property(
          fc.array(nodeArb, { minLength: 1, maxLength: 10 }),
          fc.constantFrom('binpack', 'spread'),
          fc.constantFrom(undefined, 'binpack', 'spread'),
          fc.integer({ min: 0, max: 8000 }),
          (specs, configured, annotated, mem) => {
            const cluster: NodeState[] = specs.map((spec, n) => {
              const devices = spec.cards.map(([figures], i) => card(`g${n}-${i}`, { ...figures, index: i }));
              const usage = Object.fromEntries(spec.cards.map(([, used], i) => [`g${n}-${i}`, used]));
              // Names out of order, so that listing by name is not candidate order.
              const name = `node-${(n * 7) % 11}-${n}`;
              return spec.registered ? node(name, devices, { usage }) : { name, registration: { registered: false, reason: 'node unregistered' }, usage: {} };
            });
            const p = pod([gpu(1, { 'nvidia.com/gpumem': mem })], annotated === undefined ? {} : { annotations: { 'hami.io/node-scheduler-policy': annotated } });
            const decision = decide(input(p, cluster, { config: config({ nodeSchedulerPolicy: configured }) }));
            if (decision.kind !== 'fit') return;
            const read = decodeRecord(encodeRecord(passed(decision, cluster.length)), RECORD_ENCODING);
            expect(read.filter.summary).toBe(decision.message);
            // The same with the node names stored apart.
            const apart = encodeRecordApart(passed(decision, cluster.length), new NameListKeys());
            const lists = new Map(apart.list ? [[apart.list.key, apart.list.names]] : []);
            expect(decodeRecord(apart.body, RECORD_ENCODING, undefined, lists)).toEqual(read);
          },
        ),
        { numRuns: 300 },
      );
    });
  });
});

/** A record body as the store keeps it, from any JSON (older or broken shapes included). */
function brotliCompressBody(value: unknown): Uint8Array {
  return brotliCompressSync(JSON.stringify(value));
}
