import type { NodeRegistration } from '../../../lib/engine/types';
import { decodeBooking, decodeRegistration, encodeBooking, encodeRegistration, shardOf } from '../../../lib/store/model';
import { StateStore } from '../../../lib/store/stateStore';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

describe('stored registration text', () => {
  const registered: NodeRegistration = {
    registered: true,
    devices: [
      { id: 'GPU-a', index: 0, count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true },
      { id: 'GPU-b', index: 1, count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100', numa: 1, mode: '', health: false },
    ],
    cordoned: ['GPU-b'],
    pairScores: { 'GPU-a': { 'GPU-b': 60 } },
  };

  it.each<[string, NodeRegistration]>([
    ['registered, with cordons and pair scores', registered],
    ['registered, plain', { ...registered, cordoned: [], pairScores: {} }],
    ['unregistered', { registered: false, reason: 'no gpu found on node' }],
  ])('round-trips %s', (_name, registration) => {
    expect(decodeRegistration(encodeRegistration(registration))).toEqual(registration);
  });

  it('is compact: about half the size of the engine objects', () => {
    expect(encodeRegistration(registered).length).toBeLessThan(JSON.stringify(registered).length * 0.6);
  });

  it('reads damaged text as an unregistered node with a readable reason', () => {
    expect(decodeRegistration('{"d":[["GPU-a"]]}')).toEqual({ registered: false, reason: expect.stringContaining('cannot be read') });
  });
});

describe('stored bookings', () => {
  it('keep the exact stored text for conditions on it', () => {
    const text = '{"name":"p","ns":"default","st":"confirmed","u":[["GPU-a",1,1000,10]]}';
    const booking = decodeBooking(text);
    expect(booking).toMatchObject({ ns: 'default', name: 'p', st: 'confirmed' });
    expect(encodeBooking(booking)).toBe(text);
  });
});

describe('state store requests', () => {
  const store = new StateStore({} as DynamoDBDocumentClient, 'state', 8, async () => undefined);

  it('reads every shard and the namespace quota in one batch', () => {
    const params = store.readClusterParams('team-a', false);
    const keys = params.RequestItems?.state?.Keys ?? [];
    expect(keys).toHaveLength(9);
    expect(keys).toContainEqual({ pk: 'SHARD#07', sk: 'S' });
    expect(keys).toContainEqual({ pk: 'QUOTA#team-a', sk: 'Q' });
  });

  it('guards a fast reservation by every card’s capacity and the registration version', () => {
    const params = store.reserveParams(
      'node-1',
      'uid-1',
      { ns: 'default', name: 'p', st: 'reserved', appGpu: true },
      3,
      [{ uuid: 'GPU-a', slots: 1, mem: 4000, cores: 100, maxSlotsBefore: 9, maxMemBefore: 77920, maxCoresBefore: 0, exclusive: true, slotsHeldBefore: 0 }],
    );
    expect(params.Key).toEqual({ pk: `SHARD#0${shardOf('node-1', 8)}`, sk: 'S' });
    expect(params.ConditionExpression).toBe(
      'attribute_not_exists(#n.#pods.#pod) AND #n.#regv = :regv AND #n.#cu.#g0.#s <= :ms0 AND #n.#cu.#g0.#m <= :mm0 AND #n.#cu.#g0.#c <= :mc0 AND #n.#cu.#g0.#s = :ex0',
    );
    expect(params.UpdateExpression).toContain('#n.#cu.#g0.#m = #n.#cu.#g0.#m + :dm0');
    expect(params.UpdateExpression).toContain('#n.#ag.#pod = :true');
    expect(params.ExpressionAttributeNames).toMatchObject({ '#n': 'n:node-1', '#g0': 'GPU-a', '#pod': 'uid-1' });
    expect(params.ExpressionAttributeValues).toMatchObject({ ':mm0': 77920, ':dm0': 4000, ':ex0': 0, ':regv': 3 });
  });

  it('takes the lock only for a pod whose regular containers hold cards', () => {
    const params = store.acquireLockParams('node-1', { holder: 'default/p', holderUid: 'uid-1', since: 1, expiresAt: 300_001 }, 5, 'uid-1');
    expect(params.ConditionExpression).toBe('(attribute_not_exists(#l) OR #l.#exp < :now OR #l.#uid = :uid) AND #n.#ag.#pod = :true');
    expect(params.ExpressionAttributeNames).toMatchObject({ '#l': 'l:node-1', '#ag': 'ag', '#pod': 'uid-1' });
  });
});
