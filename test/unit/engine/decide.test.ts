import { cardScore, decide } from '../../../lib/engine/decide';
import { defaultDeviceScoringWeights } from '../../../lib/engine/podAnnotations';
import type { NodeEvidence, RealtimeMode } from '../../../lib/engine/types';
import type { Decision, DecideInput } from '../../../lib/engine/decision';
import { card, cards, config, gpu, input, node, pod } from './fixtures';

function fit(decision: Decision): Extract<Decision, { kind: 'fit' }> {
  if (decision.kind !== 'fit') throw new Error(`expected a fit, got ${JSON.stringify(decision)}`);
  return decision;
}
function noFit(decision: Decision): Extract<Decision, { kind: 'noFit' }> {
  if (decision.kind !== 'noFit') throw new Error(`expected no fit, got ${decision.kind}`);
  return decision;
}
const chosenUuids = (d: Decision): string[][] => fit(d).devices.map((c) => c.map((x) => x.uuid));
const reasonOf = (d: Decision, name = 'n1'): string | undefined => noFit(d).failedNodes[name];
const nodeEvidence = (d: Decision, name = 'n1'): NodeEvidence => {
  if (d.kind === 'error') throw new Error(d.message);
  const found = d.evidence.find((e) => e.name === name);
  if (!found) throw new Error(`no evidence for ${name}`);
  return found;
};

describe('card score (docs/hami-parity.md §5.2 TestComputeScore)', () => {
  const none = { nums: 1, type: 'other', memreq: 0, mempercentagereq: 101, coresreq: 0 };
  it('used 2/10, cores 1/4, mem 2048/8192, no request -> 7.0', () => {
    expect(cardScore(card('a', { count: 10, devcore: 4, devmem: 8192, type: 'NVIDIA' }), 2, 1, 2048, none, defaultDeviceScoringWeights)).toBe(7);
  });
  it('request Memreq 1024 cores 1 on that card -> 11.75', () => {
    const request = { nums: 1, type: 'NVIDIA', memreq: 1024, mempercentagereq: 101, coresreq: 1 };
    expect(cardScore(card('a', { count: 10, devcore: 4, devmem: 8192, type: 'NVIDIA' }), 2, 1, 2048, request, defaultDeviceScoringWeights)).toBe(11.75);
  });
  it('10000-MiB/10-core card, pct 50 cores 2 -> 8.0', () => {
    const request = { nums: 1, type: 'NVIDIA', memreq: 0, mempercentagereq: 50, coresreq: 2 };
    expect(cardScore(card('a', { count: 10, devcore: 10, devmem: 10000, type: 'NVIDIA' }), 0, 0, 0, request, defaultDeviceScoringWeights)).toBe(8);
  });
  it('request terms are ignored when the card type is a model name; weights scale terms; empty card is 0', () => {
    const request = { nums: 1, type: 'NVIDIA', memreq: 1024, mempercentagereq: 101, coresreq: 1 };
    expect(cardScore(card('a', { count: 10, devcore: 4, devmem: 8192, type: 'NVIDIA-A100' }), 2, 1, 2048, request, defaultDeviceScoringWeights)).toBe(7);
    expect(cardScore(card('a', { count: 10, devcore: 4, devmem: 8192 }), 2, 1, 2048, none, { slot: 0, core: 0, memory: 2 })).toBe(5);
    expect(cardScore(card('a', { count: 0 }), 0, 0, 0, none, defaultDeviceScoringWeights)).toBe(0);
  });
});

describe('node score (docs/hami-parity.md §5.1)', () => {
  it.each([
    ['one card used 5/10, 50/100 cores, 4000/8000 MiB -> 15', [card('a', { devmem: 8000 })], { a: { used: 5, usedcores: 50, usedmem: 4000 } }, 15],
    ['two 8000-MiB cards, one half used -> 7.5', [card('a', { devmem: 8000 }), card('b', { devmem: 8000 })], { a: { used: 5, usedcores: 50, usedmem: 4000 } }, 7.5],
    ['idle node -> 0', [card('a')], {}, 0],
  ])('%s', (_label, devices, usage, score) => {
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 100, 'nvidia.com/gpucores': 1 })]), [node('n1', devices, { usage })]));
    expect(fit(d).score).toBe(score);
    expect(nodeEvidence(d).score).toBe(score);
  });
});

describe('card order per GPU policy (docs/hami-parity.md §5.3): Fit takes from the end', () => {
  // Cards a (busy), b (idle), c (half) on numa 0/1.
  const devices = (): ReturnType<typeof cards> => [
    card('a', { index: 0, numa: 0 }),
    card('b', { index: 1, numa: 1 }),
    card('c', { index: 2, numa: 1 }),
  ];
  const usage = { a: { used: 3, usedmem: 6000, usedcores: 60 }, c: { used: 1, usedmem: 2000, usedcores: 20 } };
  it.each([
    ['spread', {}, ['b', 'c', 'a']],
    ['binpack', {}, ['a', 'c', 'b']],
    ['mutex', {}, ['b', 'c', 'a']],
    ['binpack + numa-bind (numa descending, score ascending)', { 'nvidia.com/numa-bind': 'true' }, ['a', 'c', 'b']],
    ['spread + numa-bind (numa ascending, score descending)', { 'nvidia.com/numa-bind': 'true' }, ['b', 'c', 'a']],
    ['numa chain (numa ascending, index)', {}, ['c', 'b', 'a']],
    ['binpack,numa chain', {}, ['a', 'c', 'b']],
  ])('%s tries cards in order %j', (label, annotations, order) => {
    const policy = label.split(' ')[0]!;
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 100000 })], { annotations: { 'hami.io/gpu-scheduler-policy': policy, ...annotations } });
    const d = decide(input(p, [node('n1', devices(), { usage })]));
    expect(nodeEvidence(d).containers[0]!.cards.map((c) => c.uuid)).toEqual(order);
  });

  it('ties keep registration order for equal cards (stable sort) and fall back to numa', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 100000 })]);
    const d = decide(input(p, [node('n1', [card('x', { numa: 1 }), card('y', { numa: 0 }), card('z', { numa: 0 })])]));
    expect(nodeEvidence(d).containers[0]!.cards.map((c) => c.uuid)).toEqual(['x', 'z', 'y']);
  });
});

describe('Fit reason codes (docs/hami-parity.md §4.2), one table row per check', () => {
  const one = (extra = {}): ReturnType<typeof pod> => pod([gpu(1, { 'nvidia.com/gpumem': 1000, 'nvidia.com/gpucores': 10, ...extra })]);
  const cases: [string, DecideInput, string][] = [
    ['CardNotHealth', input(one(), [node('n1', [card('a', { health: false })])]), '1/1 CardNotHealth'],
    ['CardCordoned', input(one(), [node('n1', [card('a')], { cordoned: ['a'] })]), '1/1 CardCordoned'],
    ['CardTypeMismatch (use-gputype)', input(pod([gpu(1)], { annotations: { 'nvidia.com/use-gputype': 'H100' } }), [node('n1', [card('a')])]), '1/1 CardTypeMismatch'],
    ['CardTypeMismatch (vgpu-mode)', input(pod([gpu(1)], { annotations: { 'nvidia.com/vgpu-mode': 'mig' } }), [node('n1', [card('a')])]), '1/1 CardTypeMismatch'],
    ['CardUuidMismatch', input(pod([gpu(1)], { annotations: { 'nvidia.com/nouse-gpuuuid': 'a' } }), [node('n1', [card('a')])]), '1/1 CardUuidMismatch'],
    ['CardTimeSlicingExhausted', input(one(), [node('n1', [card('a', { count: 2 })], { usage: { a: { used: 2, usedmem: 0, usedcores: 0 } } })]), '1/1 CardTimeSlicingExhausted'],
    [
      'ExclusiveDeviceAllocateConflict (mutex)',
      input(pod([gpu(1)], { annotations: { 'hami.io/gpu-scheduler-policy': 'mutex' } }), [node('n1', [card('a')], { usage: { a: { used: 1, usedmem: 0, usedcores: 0 } } })]),
      '1/1 ExclusiveDeviceAllocateConflict',
    ],
    [
      'ExclusiveDeviceAllocateConflict (cores 100)',
      input(pod([gpu(1, { 'nvidia.com/gpumem': 10, 'nvidia.com/gpucores': 100 })]), [node('n1', [card('a')], { usage: { a: { used: 1, usedmem: 10, usedcores: 0 } } })]),
      '1/1 ExclusiveDeviceAllocateConflict',
    ],
    ['CardInsufficientMemory', input(one({ 'nvidia.com/gpumem': 9000 }), [node('n1', [card('a')])]), '1/1 CardInsufficientMemory'],
    ['CardInsufficientCore', input(one(), [node('n1', [card('a')], { usage: { a: { used: 1, usedmem: 0, usedcores: 95 } } })]), '1/1 CardInsufficientCore'],
    [
      'CardComputeUnitsExhausted',
      input(pod([gpu(1, { 'nvidia.com/gpumem': 10 })]), [node('n1', [card('a')], { usage: { a: { used: 1, usedmem: 0, usedcores: 100 } } })]),
      '1/1 CardComputeUnitsExhausted',
    ],
    ['ResourceQuotaNotFit', { ...input(one(), [node('n1', [card('a')])]), quota: { memLimit: 500, usedMem: 0, usedCores: 0 } }, '1/1 ResourceQuotaNotFit'],
    [
      'AllocatedCardsInsufficientRequest',
      input(pod([gpu(2, { 'nvidia.com/gpumem': 1000 })]), [node('n1', [card('a'), card('b', { health: false })])]),
      '1/2 AllocatedCardsInsufficientRequest, 1/2 CardNotHealth',
    ],
    ['NodeInsufficientDevice (bare)', input(pod([gpu(3)]), [node('n1', [card('a'), card('b')])]), 'NodeInsufficientDevice'],
  ];
  it.each(cases)('%s', (_label, decideInput, reason) => {
    const d = decide(decideInput);
    expect(reasonOf(d)).toBe(reason);
    expect(nodeEvidence(d).containers[0]).toMatchObject({ status: 'failed', reason });
  });

  it('records the numbers each failed check compared', () => {
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 5000, 'nvidia.com/gpucores': 10 })]), [node('n1', [card('a')], { usage: { a: { used: 2, usedmem: 4000, usedcores: 30 } } })]));
    expect(nodeEvidence(d).containers[0]!.cards).toEqual([
      {
        uuid: 'a',
        index: 0,
        outcome: 'CardInsufficientMemory',
        totalMem: 8192,
        usedMem: 4000,
        requestedMem: 5000,
        freeMem: 4192,
        totalCores: 100,
        usedCores: 30,
        requestedCores: 10,
        slots: 10,
        usedSlots: 2,
      },
    ]);
  });

  it('NumaNotFit: picks in one NUMA group are dropped when the next group starts', () => {
    const p = pod([gpu(2, { 'nvidia.com/gpumem': 1000 })], { annotations: { 'nvidia.com/numa-bind': 'true' } });
    const devices = [card('a', { numa: 0 }), card('b', { numa: 1 })];
    expect(reasonOf(decide(input(p, [node('n1', devices)])))).toBe('1/2 AllocatedCardsInsufficientRequest, 1/2 NumaNotFit');
    const fits = decide(input(p, [node('n1', [...devices, card('c', { numa: 1 })])]));
    expect(chosenUuids(fits)).toEqual([['c', 'b']]);
  });

  it('NumaNotFit evidence: a card given back with its NUMA group reads NumaNotFit, not Fit', () => {
    const p = pod([gpu(2, { 'nvidia.com/gpumem': 1000 })], { annotations: { 'nvidia.com/numa-bind': 'true' } });
    const failed = decide(input(p, [node('n1', [card('a', { numa: 0 }), card('b', { numa: 1 })])]));
    const outcomes = nodeEvidence(failed).containers[0]?.cards.map((c) => [c.uuid, c.outcome]);
    // One card was given back with its group (NumaNotFit), the other is the one collected at the end.
    expect(outcomes).toHaveLength(2);
    expect(outcomes?.filter(([, o]) => o === 'NumaNotFit')).toHaveLength(1);
    expect(outcomes?.filter(([, o]) => o === 'Fit')).toHaveLength(1);
  });

  it('clamps cores above 100 and books percentage memory of each card', () => {
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem-percentage': 25, 'nvidia.com/gpucores': 150 })]), [node('n1', [card('a', { devmem: 10001 })])]));
    expect(fit(d).devices).toEqual([[{ idx: 0, uuid: 'a', type: 'NVIDIA', usedmem: 2500, usedcores: 100 }]]);
  });

  it('sorts reasons as strings across several cards', () => {
    const devices = [card('a', { health: false }), ...cards('m', 10, { devmem: 100 }), card('z', { health: false })];
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), [node('n1', devices)]));
    expect(reasonOf(d)).toBe('10/12 CardInsufficientMemory, 2/12 CardNotHealth');
  });
});

describe('containers (docs/hami-parity.md §4.4)', () => {
  it('app containers share one copy: the second sees the first one booking', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 5000 }), gpu(1, { 'nvidia.com/gpumem': 5000 })]);
    const d = decide(input(p, [node('n1', [card('a'), card('b')])]));
    expect(chosenUuids(d)).toEqual([['b'], ['a']]);
    const tooSmall = decide(input(p, [node('n1', [card('a')])]));
    expect(reasonOf(tooSmall)).toBe('1/1 CardInsufficientMemory');
    expect(nodeEvidence(tooSmall).containers.map((c) => c.status)).toEqual(['passed', 'failed']);
  });

  it('init containers each fit on a fresh copy and do not consume app capacity', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 6000 })], { init: [gpu(1, { 'nvidia.com/gpumem': 6000 }), gpu(1, { 'nvidia.com/gpumem': 6000 })] });
    const d = decide(input(p, [node('n1', [card('a')])]));
    expect(chosenUuids(d)).toEqual([['a'], ['a'], ['a']]);
    expect(nodeEvidence(d).containers.map((c) => [c.name, c.init, c.index])).toEqual([
      ['init0', true, 0],
      ['init1', true, 1],
      ['c0', false, 2],
    ]);
  });

  it('aligned placeholders for containers without cards; containers after a failure are skipped', () => {
    const d = decide(input(pod([{}, gpu(1, { 'nvidia.com/gpumem': 100 })], { init: [{}] }), [node('n1', [card('a')])]));
    expect(fit(d).devices.map((c) => c.length)).toEqual([0, 0, 1]);
    const failed = decide(input(pod([gpu(2), {}, gpu(1)]), [node('n1', [card('a')])]));
    expect(nodeEvidence(failed).containers.map((c) => c.status)).toEqual(['failed', 'skipped', 'skipped']);
  });

  it('quota counts the pod own earlier containers', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 3000 }), gpu(1, { 'nvidia.com/gpumem': 3000 })]);
    const d = decide({ ...input(p, [node('n1', [card('a'), card('b')])]), quota: { memLimit: 7000, usedMem: 2000, usedCores: 0 } });
    expect(reasonOf(d)).toBe('2/2 ResourceQuotaNotFit');
    const coreQuota = decide({ ...input(pod([gpu(1, { 'nvidia.com/gpucores': 30 })]), [node('n1', [card('a')])]), quota: { coreLimit: 20, usedMem: 0, usedCores: 0 } });
    expect(reasonOf(coreQuota)).toBe('1/1 ResourceQuotaNotFit');
    // memoryFactor 2: 2000 requested books 4000, and the limit 4000 allows 8000.
    const scaled = pod([gpu(1, { 'nvidia.com/gpumem': 2000 })]);
    const factor = decide({ ...input(scaled, [node('n1', [card('a')])], { config: config({ memoryFactor: 2 }) }), quota: { memLimit: 4000, usedMem: 2000, usedCores: 0 } });
    expect(fit(factor).devices).toEqual([[{ idx: 0, uuid: 'a', type: 'NVIDIA', usedmem: 4000, usedcores: 0 }]]);
  });
});

describe('node choice: node policy x GPU policy', () => {
  const cluster = (): ReturnType<typeof node>[] => [
    node('full', [card('f0'), card('f1')], { usage: { f0: { used: 4, usedmem: 4000, usedcores: 40 }, f1: { used: 1, usedmem: 1000, usedcores: 10 } } }),
    node('empty', [card('e0'), card('e1')]),
    node('busy', [card('b0'), card('b1')], { usage: { b0: { used: 1, usedmem: 1000, usedcores: 10 } } }),
  ];
  it.each([
    ['binpack', 'spread', 'full', 'f1', ['empty', 'busy', 'full']],
    ['binpack', 'binpack', 'full', 'f0', ['empty', 'busy', 'full']],
    ['spread', 'spread', 'empty', 'e1', ['full', 'busy', 'empty']],
    ['spread', 'binpack', 'empty', 'e1', ['full', 'busy', 'empty']],
  ])('node %s, gpu %s -> %s card %s', (nodePolicy, gpuPolicy, chosen, cardId, order) => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 1000, 'nvidia.com/gpucores': 10 })], {
      annotations: { 'hami.io/node-scheduler-policy': nodePolicy, 'hami.io/gpu-scheduler-policy': gpuPolicy },
    });
    const d = fit(decide(input(p, cluster())));
    expect(d.node).toBe(chosen);
    expect(d.devices[0]![0]!.uuid).toBe(cardId);
    expect(d.fitNodes.map((n) => n.name)).toEqual(order);
  });

  it('equal scores are listed by node name and the last is chosen (docs/api.md §9)', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 100 })]);
    const nodes = [node('b', [card('b0')]), node('c', [card('c0')]), node('a', [card('a0')])];
    const binpack = fit(decide(input(p, nodes)));
    expect(binpack.message).toBe('find fit node(c), 0 nodes not fit, 3 nodes fit(a:0.00,b:0.00,c:0.00)');
    const spread = fit(decide(input(pod([gpu(1)], { annotations: { 'hami.io/node-scheduler-policy': 'spread' } }), nodes)));
    expect(spread.node).toBe('c');
  });

  it('success message counts unfit and unregistered candidates', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 5000 })]);
    const d = fit(
      decide(input(p, [node('n1', [card('a')]), node('n2', [card('b')], { usage: { b: { used: 1, usedmem: 8000, usedcores: 0 } } })], { candidates: ['n1', 'n2', 'ghost'] })),
    );
    expect(d.message).toBe('find fit node(n1), 2 nodes not fit, 1 nodes fit(n1:0.00)');
    expect(d.failedNodes).toEqual({ n2: '1/1 CardInsufficientMemory', ghost: 'node unregistered' });
    expect(nodeEvidence(d, 'ghost')).toEqual({ name: 'ghost', status: 'failed', score: 0, reason: 'node unregistered', containers: [] });
    expect(d.evidence.map((e) => e.name)).toEqual(['n1', 'n2', 'ghost']);
  });

  it('no fit: message, per-reason events and FailedNodes', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 9000 })]);
    const d = noFit(
      decide(input(p, [node('n2', [card('a')]), node('n1', [card('b'), card('c', { health: false })]), node('n3', [card('d')], { usage: {} })], { candidates: ['n2', 'n1', 'n3', 'n4'] })),
    );
    expect(d.message).toBe('no available node, 4 nodes do not meet');
    expect(d.failedNodes).toEqual({ n1: '1/2 CardInsufficientMemory, 1/2 CardNotHealth', n2: '1/1 CardInsufficientMemory', n3: '1/1 CardInsufficientMemory', n4: 'node unregistered' });
    expect(d.reasonEvents).toEqual(['3 nodes CardInsufficientMemory(n1,n2,n3)', '1 nodes CardNotHealth(n1)']);
  });

  it('an unregistered registration is "node unregistered"', () => {
    const d = decide(input(pod([gpu(1)]), [{ name: 'n1', registration: { registered: false, reason: 'no gpu found on node' }, usage: {} }]));
    expect(reasonOf(d)).toBe('node unregistered');
  });

  it('invalid scoring weights answer an error with HAMi text', () => {
    const d = decide(input(pod([gpu(1)], { annotations: { 'hami.io/device-scoring-weights': 'slot=1,core=-1,memory=1' } }), [node('n1', [card('a')])]));
    expect(d).toEqual({ kind: 'error', message: 'invalid hami.io/device-scoring-weights annotation "slot=1,core=-1,memory=1": "core" weight must not be negative' });
  });
});

describe('topology-aware (docs/hami-parity.md §4.2)', () => {
  const devices = (): ReturnType<typeof cards> => cards('g', 4);
  const pairScores = {
    'g-0': { 'g-1': 10, 'g-2': 100, 'g-3': 10 },
    'g-1': { 'g-0': 10, 'g-2': 10, 'g-3': 200 },
    'g-2': { 'g-0': 100, 'g-1': 10, 'g-3': 10 },
    'g-3': { 'g-0': 10, 'g-1': 200, 'g-2': 10 },
  };
  const annotations = { 'hami.io/gpu-scheduler-policy': 'topology-aware' };
  it('two cards: the best connected pair', () => {
    const d = decide(input(pod([gpu(2, { 'nvidia.com/gpumem': 100 })], { annotations }), [node('n1', devices(), { pairScores })]));
    expect(chosenUuids(d)[0]!.sort()).toEqual(['g-1', 'g-3']);
  });
  it('one card: the least connected card', () => {
    const scores = { ...pairScores, 'g-2': { 'g-0': 1, 'g-1': 1, 'g-3': 1 } };
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 100 })], { annotations }), [node('n1', devices(), { pairScores: scores })]));
    expect(chosenUuids(d)).toEqual([['g-2']]);
  });
  it('exactly as many fitting cards as requested: all of them', () => {
    const d = decide(input(pod([gpu(2, { 'nvidia.com/gpumem': 100 })], { annotations }), [node('n1', [card('x'), card('y')])]));
    expect(chosenUuids(d)[0]!.sort()).toEqual(['x', 'y']);
  });
});

describe('mutex and exclusive requests', () => {
  it('mutex takes idle cards only', () => {
    const p = pod([gpu(2)], { annotations: { 'hami.io/gpu-scheduler-policy': 'mutex' } });
    const usage = { a: { used: 1, usedmem: 10, usedcores: 1 } };
    expect(chosenUuids(decide(input(p, [node('n1', [card('a'), card('b'), card('c')], { usage })])))[0]!.sort()).toEqual(['b', 'c']);
  });
  it('a plain whole-card request (cores 100) never shares', () => {
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 100, 'nvidia.com/gpucores': 100 }), gpu(1, { 'nvidia.com/gpumem': 100, 'nvidia.com/gpucores': 100 })]);
    expect(reasonOf(decide(input(p, [node('n1', [card('a')])])))).toBe('1/1 CardInsufficientCore');
  });
});

describe('real-time check (docs/api.md §8)', () => {
  const now = 1_700_000_000_000;
  const report = (ageMs: number, usedMemMB: number, id = 'a'): { timeMs: number; devices: Record<string, { usedMemMB: number; totalMemMB: number }> } => ({
    timeMs: now - ageMs,
    devices: { [id]: { usedMemMB, totalMemMB: 8192 } },
  });
  type Data = 'fresh' | 'stale' | 'missing' | 'cardMissing';
  const realtimeFor = (data: Data): ReturnType<typeof report> | undefined =>
    data === 'fresh' ? report(1000, 6200) : data === 'stale' ? report(61_000, 6200) : data === 'cardMissing' ? report(1000, 6200, 'other') : undefined;
  // Request 2000 MiB; the ledger has the card idle; real use 6200 of 8192 leaves 1992 - 100 margin = 1892 < 2000.
  const cases: [boolean, RealtimeMode, string | undefined, Data, 'fit' | 'reject', string | undefined][] = [
    [true, 'strict', undefined, 'fresh', 'reject', 'failed'],
    [true, 'warning', undefined, 'fresh', 'fit', 'warned'],
    [true, 'disabled', undefined, 'fresh', 'fit', undefined],
    [false, 'strict', undefined, 'fresh', 'fit', undefined],
    [false, 'strict', 'true', 'fresh', 'reject', 'failed'],
    [true, 'strict', 'false', 'fresh', 'fit', undefined],
    [false, 'warning', 'true', 'fresh', 'fit', 'warned'],
    [true, 'disabled', 'true', 'fresh', 'fit', undefined],
    [true, 'strict', undefined, 'stale', 'fit', 'fallback'],
    [true, 'strict', undefined, 'missing', 'fit', 'fallback'],
    [true, 'strict', undefined, 'cardMissing', 'fit', 'fallback'],
    [true, 'warning', undefined, 'stale', 'fit', 'fallback'],
    [true, 'strict', 'nonsense', 'fresh', 'reject', 'failed'],
  ];
  it.each(cases)('enabled=%p mode=%s override=%p data=%s -> %s (note %p)', (enabled, mode, override, data, expected, note) => {
    const rt = realtimeFor(data);
    const p = pod([gpu(1, { 'nvidia.com/gpumem': 2000 })], { annotations: override === undefined ? {} : { 'hami.io/enable-realtime-check': override } });
    const cfg = config({ realtime: { enabled, mode, marginMiB: 100, maxAgeMs: 60_000 } });
    const d = decide(input(p, [node('n1', [card('a')], rt ? { realtime: rt } : {})], { config: cfg, nowMs: now }));
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.kind).toBe(expected === 'fit' ? 'fit' : 'noFit');
    expect(d.kind === 'noFit' ? d.failedNodes['n1'] : undefined).toBe(expected === 'reject' ? '1/1 CardRealtimeInsufficientMemory' : undefined);
    expect(d.realtime.map((n) => n.outcome)).toEqual(note === undefined ? [] : [note]);
  });

  it('passes when real free memory covers the request, and shows the real figures in evidence', () => {
    const cfg = config({ realtime: { enabled: true, mode: 'strict', marginMiB: 100, maxAgeMs: 60_000 } });
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), [node('n1', [card('a')], { realtime: report(0, 6000) })], { config: cfg, nowMs: now }));
    expect(fit(d).realtime).toEqual([{ node: 'n1', uuid: 'a', outcome: 'passed', requestedMem: 1000, realUsedMem: 6000, totalMem: 8192, cachedUsedMem: 0 }]);
    expect(nodeEvidence(d).containers[0]!.cards[0]).toMatchObject({ realtimeUsedMem: 6000, realtimeTotalMem: 8192, outcome: 'Fit' });
  });
});

describe('bad quantities are bad input (docs/api.md, "Quantities")', () => {
  it('answers an error naming container, resource and value instead of booking wrapped cores', () => {
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpucores': '4294967196' })]), [node('n1', [card('a')])]));
    expect(d).toEqual({
      kind: 'error',
      message: 'invalid GPU resource request: container "c0": nvidia.com/gpucores "4294967196" is larger than 2147483647 (HAMi computes it in int32)',
    });
  });

  it.each(['-1', 'abc', '0.5'])('gpumem %s is refused, not read as a pod without GPUs', (value) => {
    expect(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': value })]), [node('n1', [card('a')])])).kind).toBe('error');
  });
});

describe('claims: what the store must guard for the chosen cards', () => {
  it('a single container: adds its share, bounded by the checks that let the card through', () => {
    const d = fit(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 3000, 'nvidia.com/gpucores': 30 })]), [node('n1', [card('a')], { usage: { a: { used: 2, usedmem: 1000, usedcores: 10 } } })])));
    expect(d.claims).toEqual([{ uuid: 'a', slots: 1, mem: 3000, cores: 30, maxSlotsBefore: 9, maxMemBefore: 8192 - 3000, maxCoresBefore: 70, exclusive: false }]);
  });

  it('two app containers on one card: the second bound counts the first one; the add is their sum', () => {
    const d = fit(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 3000, 'nvidia.com/gpucores': 20 }), gpu(1, { 'nvidia.com/gpumem': 2000, 'nvidia.com/gpucores': 20 })]), [node('n1', [card('a')])])));
    expect(d.claims).toEqual([{ uuid: 'a', slots: 2, mem: 5000, cores: 40, maxSlotsBefore: 8, maxMemBefore: 8192 - 5000, maxCoresBefore: 60, exclusive: false }]);
  });

  it('init and app containers on one card: HAMi collapse (the larger share), the tighter bound', () => {
    const d = fit(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 2000, 'nvidia.com/gpucores': 5 })], { init: [gpu(1, { 'nvidia.com/gpumem': 4000, 'nvidia.com/gpucores': 10 })] }), [node('n1', [card('a')])])));
    expect(d.claims).toEqual([{ uuid: 'a', slots: 1, mem: 4000, cores: 10, maxSlotsBefore: 9, maxMemBefore: 8192 - 4000, maxCoresBefore: 90, exclusive: false }]);
  });

  it('a card without cores (devcore 0) is claimable by a request without cores', () => {
    const d = fit(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), [node('n1', [card('a', { devcore: 0 })])])));
    expect(d.claims[0]).toMatchObject({ cores: 0, maxCoresBefore: 0 });
  });

  it('a request without cores keeps one core free; whole-card and mutex requests are exclusive', () => {
    expect(fit(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), [node('n1', [card('a')])]))).claims[0]).toMatchObject({ maxCoresBefore: 99, exclusive: false });
    expect(fit(decide(input(pod([gpu(1, { 'nvidia.com/gpucores': 100 })]), [node('n1', [card('a')])]))).claims[0]).toMatchObject({ exclusive: true });
    const mutex = pod([gpu(1, { 'nvidia.com/gpumem': 10 })], { annotations: { 'hami.io/gpu-scheduler-policy': 'mutex' } });
    expect(fit(decide(input(mutex, [node('n1', [card('a')])]))).claims[0]).toMatchObject({ exclusive: true });
  });
});

describe('bad input never throws out of the engine', () => {
  it('odd numbers in usage and registrations still give a decision', () => {
    const weird = node('n1', [card('a', { count: 0, devmem: 0, devcore: 0 }), card('b', { numa: -3 })], {
      usage: { a: { used: -1, usedmem: -5, usedcores: 2 ** 40 }, zz: { used: 1, usedmem: 1, usedcores: 1 } },
    });
    expect(() => decide(input(pod([gpu(1), gpu(2 ** 31 + 1)]), [weird]))).not.toThrow();
  });
});
