import type { DocumentClient } from '../../../lib/store/dynamoHttp';
import { emptyLedger, nextLedger, type Booking, type NodeLedger } from '../../../lib/control/ledger';
import type { NodeRegistration } from '../../../lib/engine/types';
import { NODE_ITEM_MAX_BYTES, NodeCodec, decodeJournalEntry, encodeRegistration, nodeKey, type Item } from '../../../lib/store/codec';
import { NodeItemTooLargeError } from '../../../lib/errors';
import { emptyStats } from '../../../lib/store/dynamo';
import { DynamoLedgerStore } from '../../../lib/store/ledgerStore';

const registration: NodeRegistration = {
  registered: true,
  devices: [
    { id: 'GPU-a', index: 0, count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true },
    { id: 'GPU-b', index: 1, count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100', numa: 1, mode: '', health: false },
  ],
  cordoned: ['GPU-b'],
  pairScores: { 'GPU-a': { 'GPU-b': 60 } },
};

function booking(overrides: Partial<Booking> = {}): Booking {
  return {
    namespace: 'default',
    name: 'p',
    state: 'confirmed',
    devices: 'GPU-a,NVIDIA,1000,10:;',
    initCount: 0,
    initDone: false,
    uses: [{ uuid: 'GPU-a', slots: 1, mem: 1000, cores: 10 }],
    holdsAppCards: true,
    origin: 'decided',
    ...overrides,
  };
}

function ledger(bookings: Record<string, Booking> = { 'uid-1': booking() }): NodeLedger {
  return nextLedger({ ...emptyLedger('node-1'), registration, registrationVersion: 2, bookings }, 0);
}

describe('node items', () => {
  const codec = new NodeCodec();

  it('round-trip every part of the ledger (the lock included)', () => {
    const node: NodeLedger = {
      ...ledger({
        'uid-1': booking({ resourceVersion: '17', bindPhase: 'success', attemptId: 'a-1', placedAtMs: 5 }),
        'uid-2': booking({ name: 'q', state: 'gone', devices: undefined, uses: [], holdsAppCards: false, expiresAtMs: 99 }),
      }),
      resourceVersion: '42',
      allocatableGpu: '20',
      handshake: 'Reported 2025',
      realtime: { timeMs: 1000, devices: { 'GPU-a': { usedMemMB: 100, totalMemMB: 81920, utilization: 5, processCount: 1 } } },
      lock: { holder: 'default/p', holderUid: 'uid-1', sinceMs: 10, expiresAtMs: 300_010 },
    };
    expect(codec.decode('node-1', codec.encode(node, 0))).toEqual(node);
  });

  it('round-trip the preemption marks: priority (negative too), who a victim is evicted for, a PDB refusal, a hold\'s victims', () => {
    const node = ledger({
      'uid-victim': booking({ priority: -5, preemptedBy: { uid: 'uid-p', pod: 'default/urgent', atMs: 10, untilMs: 300_010 }, pdbBlockedUntilMs: 600 }),
      'uid-p': booking({ name: 'urgent', state: 'reserved', priority: 1000, expiresAtMs: 300_010, preempting: ['uid-victim'] }),
    });
    expect(codec.decode('node-1', codec.encode(node, 0))).toEqual(node);
  });

  it('keep a decoded booking’s exact stored text, so conditions on it compare equal', () => {
    const stored = '["default","p",1,"GPU-a,NVIDIA,1000,10:;",0,2]';
    const item: Item = { ...nodeKey('node-1'), v: 1, b: { 'uid-1': stored } };
    const decoded = codec.decode('node-1', item).bookings['uid-1']!;
    expect(decoded).toMatchObject({ namespace: 'default', state: 'confirmed', uses: [{ uuid: 'GPU-a', slots: 1, mem: 1000, cores: 10 }], holdsAppCards: true });
    expect(codec.bookingText(decoded)).toBe(stored);
  });

  it('round-trip a registration with AWS Neuron devices: vendor and instance type per device', () => {
    const mixed: NodeRegistration = {
      registered: true,
      devices: [
        ...(registration.registered ? registration.devices : []),
        ...[0, 1].map((index) => ({ id: `trn-AWSNeuron-${index}`, index, count: 2, devmem: 0, devcore: 3, type: 'AWSNeuron', numa: 0, mode: '', health: true, vendor: 'AWSNeuron', nodeType: 'trn1.32xlarge' })),
        { id: 'odd-AWSNeuron-0', index: 0, count: 2, devmem: 0, devcore: 3, type: 'AWSNeuron', numa: 0, mode: '', health: true, vendor: 'AWSNeuron', nodeType: '' },
      ],
      cordoned: [],
      pairScores: {},
    };
    const node: NodeLedger = { ...ledger({}), registration: mixed };
    const item = codec.encode(node, 0);
    expect((JSON.parse(item.reg as string).d as unknown[][]).map((row) => row[9])).toEqual([
      undefined,
      undefined,
      { v: 'AWSNeuron', t: 'trn1.32xlarge' },
      { v: 'AWSNeuron', t: 'trn1.32xlarge' },
      { v: 'AWSNeuron', t: '' },
    ]);
    expect(new NodeCodec().decode('node-1', item).registration).toEqual(mixed);
  });

  it('decode registrations stored before MIG and AWS Neuron (no extras): every device is NVIDIA\'s, nothing else is added', () => {
    const stored = '{"d":[["GPU-a",0,10,81920,100,"NVIDIA-A100",0,"hami-core",1]],"c":["GPU-a"]}';
    const decoded = new NodeCodec().decode('node-1', { ...nodeKey('node-1'), v: 1, reg: stored }).registration;
    expect(decoded).toEqual({
      registered: true,
      devices: [{ id: 'GPU-a', index: 0, count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true }],
      cordoned: ['GPU-a'],
      pairScores: {},
    });
    expect(encodeRegistration(decoded!)).toBe(stored);
  });

  it('store the registration compactly: well under the size of the engine objects', () => {
    expect(encodeRegistration(registration).length).toBeLessThan(JSON.stringify(registration).length * 0.6);
  });

  it('contain what cannot be decoded to its part, and write it back unchanged until an event replaces it', () => {
    const negativeCores = '["default","old",1,"GPU-a,NVIDIA,1000,-100:;",0,2]';
    const item: Item = {
      ...nodeKey('node-1'),
      v: 3,
      reg: '{"d":[["GPU-a"]]}',
      b: { 'uid-ok': '["default","p",1,"GPU-a,NVIDIA,1000,10:;",0,2]', 'uid-bad': negativeCores, 'uid-junk': 'not json' },
      cu: { 'GPU-a': { s: 'x' } },
      lk: { h: 1 },
    };
    const node = codec.decode('node-1', item);
    expect(Object.keys(node.bookings)).toEqual(['uid-ok']);
    expect(node.unreadable?.map((p) => [p.part, p.blocking])).toEqual([
      ['registration', true],
      ['booking uid-bad', true],
      ['booking uid-junk', true],
      ['counters', true],
      ['lock', false],
    ]);
    expect(node.unreadable?.find((p) => p.part === 'booking uid-bad')?.problem).toContain('negative value -100');
    const written = codec.encode(node, 0);
    expect(written.reg).toBe('{"d":[["GPU-a"]]}');
    expect(written.b).toMatchObject({ 'uid-bad': negativeCores, 'uid-junk': 'not json' });
    // The pod's own event replaces its booking: the raw value is gone with it.
    const repaired = codec.encode({ ...node, bookings: { ...node.bookings, 'uid-bad': booking({ name: 'old', state: 'gone', devices: undefined, uses: [], holdsAppCards: false }) } }, 0);
    expect((repaired.b as Record<string, string>)['uid-bad']).not.toBe(negativeCores);
  });

  it('round-trip a registration with MIG profiles and their placements', () => {
    const mig: NodeRegistration = {
      registered: true,
      devices: [
        {
          id: 'GPU-m',
          index: 0,
          count: 7,
          devmem: 81920,
          devcore: 100,
          type: 'NVIDIA-A100',
          numa: 0,
          mode: 'mig',
          health: true,
          migProfiles: [{ name: '1g.10gb', memoryMB: 9856, core: 14, sliceCount: 1, placements: [{ start: 0, size: 1 }, { start: 6, size: 1 }] }],
        },
      ],
      cordoned: [],
      pairScores: {},
    };
    expect(new NodeCodec().decode('node-1', codec.encode({ ...ledger({}), registration: mig }, 0)).registration).toEqual(mig);
  });

  // Each stored value is checked as strictly as a schema would; the problem names the field and what was found.
  it.each([
    ['a state beyond gone', '["default","p",3]', 'state: expected 0, 1 or 2, found 3'],
    ['an empty namespace', '["","p",1]', 'namespace: expected non-empty text, found ""'],
    ['a name that is not text', '["default",7,1]', 'name: expected non-empty text, found 7'],
    ['a negative init count', '["default","p",1,"GPU-a,NVIDIA,1000,10:;",-1]', 'initCount: expected a non-negative integer, found -1'],
    ['a fractional expiry', '["default","p",0,"GPU-a,NVIDIA,1000,10:;",0,2,null,1.5]', 'expiresAtMs: expected a non-negative integer, found 1.5'],
    ['a bind phase that is not text', '["default","p",1,null,0,0,null,null,null,5]', 'bindPhase: expected text, found 5'],
    ['too few fields', '["default","p"]', 'booking: expected 3 to 17 fields, found 2'],
    ['too many fields', `["default","p",1${',null'.repeat(15)}]`, 'booking: expected 3 to 17 fields, found 18'],
    ['a fractional priority', `["default","p",1${',null'.repeat(10)},1.5]`, 'priority: expected an integer, found 1.5'],
    ['a preemption mark without its time', `["default","p",1${',null'.repeat(11)},["uid-x","default/x",5]]`, 'preemptedBy: expected 4 fields, found 3'],
    ['a victim that is not a uid', `["default","p",1${',null'.repeat(13)},[""]]`, 'preempting.0: expected non-empty text, found ""'],
    ['an object instead of fields', '{"namespace":"default"}', 'booking: expected a list, found {"namespace":"default"}'],
  ])('refuse a booking with %s, naming the field', (_, stored, problem) => {
    const node = new NodeCodec().decode('node-1', { ...nodeKey('node-1'), v: 1, b: { 'uid-ok': '["default","q",1,"GPU-a,NVIDIA,1000,10:;",0,2]', 'uid-bad': stored } });
    expect(Object.keys(node.bookings)).toEqual(['uid-ok']);
    expect(node.unreadable).toEqual([{ part: 'booking uid-bad', raw: stored, blocking: true, problem }]);
  });

  it.each([
    ['a health flag other than 0 or 1', '{"d":[["GPU-a",0,10,81920,100,"NVIDIA-A100",0,"hami-core",2]]}', 'd.0.8: expected 0 or 1, found 2'],
    ['a NUMA node that is not a number', '{"d":[["GPU-a",0,10,81920,100,"NVIDIA-A100","x","hami-core",1]]}', 'd.0.6: expected an integer, found "x"'],
    ['negative memory', '{"d":[["GPU-a",0,10,-1,100,"NVIDIA-A100",0,"hami-core",1]]}', 'd.0.3: expected a non-negative integer, found -1'],
    ['an empty vendor', '{"d":[["GPU-a",0,10,81920,100,"NVIDIA-A100",0,"hami-core",1,{"v":""}]]}', 'd.0.9.v: expected non-empty text, found ""'],
    ['a MIG placement of one number', '{"d":[["GPU-a",0,7,81920,100,"NVIDIA-A100",0,"mig",1,{"g":[["1g.10gb",9856,14,1,[[0]]]]}]]}', 'd.0.9.g.0.4.0: expected 2 fields, found 1'],
    ['a cordoned card that is not text', '{"d":[],"c":[1]}', 'c.0: expected text, found 1'],
    ['a pair score that is not an integer', '{"d":[],"p":{"GPU-a":{"GPU-b":0.5}}}', 'p.GPU-a.GPU-b: expected an integer, found 0.5'],
    ['no devices', '{"c":[]}', 'd: expected a list, found undefined'],
  ])('refuse a registration with %s, naming the field', (_, stored, problem) => {
    const node = new NodeCodec().decode('node-1', { ...nodeKey('node-1'), v: 1, reg: stored });
    expect(node.registration).toBeUndefined();
    expect(node.unreadable).toEqual([{ part: 'registration', raw: stored, blocking: true, problem }]);
  });

  it('refuse counters that are not integers, naming the card and the counter', () => {
    const counters = { 'GPU-a': { s: 1, m: 1000, c: 10 }, 'GPU-b': { s: 1, m: '1000', c: 10 } };
    const node = new NodeCodec().decode('node-1', { ...nodeKey('node-1'), v: 1, cu: counters });
    expect(node.counters).toEqual({});
    expect(node.unreadable).toEqual([{ part: 'counters', raw: counters, blocking: true, problem: 'GPU-b.m: expected an integer, found "1000"' }]);
  });

  it('refuse a node beyond the item bound with the figures, instead of letting DynamoDB refuse it', () => {
    const many: Record<string, Booking> = {};
    for (let i = 0; i < 3000; i++) many[`uid-${i}-${'x'.repeat(60)}`] = booking({ name: `pod-${i}-${'y'.repeat(60)}` });
    expect(() => codec.encode({ ...emptyLedger('big'), bookings: many }, 0)).toThrow(NodeItemTooLargeError);
    expect(() => codec.encode({ ...emptyLedger('big'), bookings: many }, 0)).toThrow(`above the ${NODE_ITEM_MAX_BYTES / 1024} KB bound`);
  });

  it('give a deleted node without bookings an expiry, so its item goes', () => {
    expect(codec.encode({ ...emptyLedger('gone'), deleted: true }, 10_000).ttl).toBe(10 + 7 * 24 * 3600);
    expect(codec.encode(ledger(), 10_000).ttl).toBeUndefined();
  });
});

describe('state table requests', () => {
  const store = new DynamoLedgerStore({} as DocumentClient, 'state', emptyStats(), async () => undefined, () => 0);

  it('guard a reservation by the claims, the registration version and the booking it replaces', () => {
    const params = store.reserveParams({
      node: 'node-1',
      uid: 'uid-1',
      booking: booking({ state: 'reserved' }),
      registrationVersion: 3,
      claims: [{ uuid: 'GPU-a', slots: 1, mem: 4000, cores: 100, maxSlotsBefore: 9, maxMemBefore: 77920, maxCoresBefore: 0, exclusive: true, slotsHeldBefore: 0 }],
    });
    expect(params.Key).toEqual({ pk: 'NODE#node-1', sk: 'N' });
    expect(params.ConditionExpression).toBe(
      'attribute_exists(#v) AND attribute_not_exists(#b.#uid) AND #rgv = :rgv AND #cu.#g0.#s <= :ms0 AND #cu.#g0.#m <= :mm0 AND #cu.#g0.#c <= :mc0 AND #cu.#g0.#s = :ex0',
    );
    expect(params.UpdateExpression).toContain('#cu.#g0.#m = #cu.#g0.#m + :dm0');
    expect(params.UpdateExpression).toContain('#ag.#uid = :true');
    expect(params.ExpressionAttributeNames).toMatchObject({ '#g0': 'GPU-a', '#uid': 'uid-1', '#cu': 'cu' });
    expect(params.ExpressionAttributeValues).toMatchObject({ ':mm0': 77920, ':dm0': 4000, ':ex0': 0, ':rgv': 3 });
    expect(params.ReturnValues).toBe('ALL_NEW');
    expect(params.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });

  it('rewrite a whole node under its version without touching the lock a bind may hold', () => {
    const params = store.putNodeParams(ledger(), 4);
    expect(params.ConditionExpression).toBe('#v = :expected');
    expect(params.ExpressionAttributeValues?.[':expected']).toBe(4);
    expect(Object.values(params.ExpressionAttributeNames ?? {})).not.toContain('lk');
    // Creating: no item, or only an expired one (docs/state.md; the store suite runs it on both DynamoDB backends).
    expect(store.putNodeParams(ledger(), null).ConditionExpression).toBe('attribute_not_exists(#v) OR #ttl < :nowS');
  });

  it('take the lock only for a pod whose regular containers hold cards', () => {
    const params = store.acquireLockParams('node-1', { holder: 'default/p', holderUid: 'uid-1', sinceMs: 1, expiresAtMs: 300_001 }, 5);
    expect(params.ConditionExpression).toBe('(attribute_not_exists(#lk) OR #lk.#e < :now OR #lk.#u = :uid) AND #ag.#pod = :true');
    expect(params.ExpressionAttributeNames).toMatchObject({ '#lk': 'lk', '#ag': 'ag', '#pod': 'uid-1' });
  });

  it('read the journal after a position, and append at a number only if nobody took it', () => {
    expect(store.readJournalParams(41, true)).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk > :after',
      ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
      ExpressionAttributeValues: { ':pk': 'JOURNAL', ':after': '000000000000041' },
      ConsistentRead: true,
    });
    expect(store.appendJournalParams({ seq: 42, atMs: 5000, nodes: { 'node-1': 7 }, namespaces: [] })).toMatchObject({
      Item: { pk: 'JOURNAL', sk: '000000000000042', t: 5000, n: { 'node-1': 7 } },
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'pk' },
    });
  });

  it('read a journal entry that cannot be decoded as one that may have named anything, at its own number', () => {
    const entry = decodeJournalEntry({ pk: 'JOURNAL', sk: '000000000000043', t: 'yesterday', n: { 'node-1': 7 } });
    expect(entry).toEqual({ seq: 43, atMs: 0, nodes: {}, namespaces: [], unreadable: true });
    expect(decodeJournalEntry({ pk: 'JOURNAL', sk: '000000000000044', t: 5000 })).not.toHaveProperty('unreadable');
  });

  it('write quotas under their version, and a new namespace only where none is stored', () => {
    expect(store.putQuotaParams('team-a', { version: 3, quotas: {} }, 2)).toMatchObject({
      Item: { pk: 'QUOTA#team-a', sk: 'Q', v: 3, q: {} },
      ConditionExpression: '#v = :expected',
      ExpressionAttributeNames: { '#v': 'v' },
      ExpressionAttributeValues: { ':expected': 2 },
    });
    expect(store.putQuotaParams('team-b', { version: 1, quotas: {} }, null)).toMatchObject({ ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } });
  });
});
