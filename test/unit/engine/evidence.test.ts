/**
 * The evidence is recorded as packed numbers while deciding and built into objects on first read
 * (lib/engine/evidence.ts). These tests hold it to the plain objects other code reads and
 * serialises: same values, same keys in the same order, through JSON and spreads, and unchanged by
 * later decisions.
 */
import fc from 'fast-check';
import { decide } from '../../../lib/engine/decide';
import { unpackStoredEvidence } from '../../../lib/store/storedEvidence';
import type { ContainerEvidence, DeviceInfo, DeviceUsage, NodeEvidence, NodeState } from '../../../lib/engine/types';
import type { Decision } from '../../../lib/engine/decision';
import { card, cardFiguresArb, cardUsageArb, cards, config, gpu, input, node, pod } from './fixtures';
import { a, b, cardEvidence, decided, idle, mixedEvidence, mixedInput, registeredIn } from './mixedDecision';

/** Same values and the same key order everywhere (the scheduler log and stored records depend on both). */
function expectSerialisedAs(decision: Exclude<Decision, { kind: 'error' }>, expected: readonly NodeEvidence[]): void {
  expect(decision.evidence).toEqual(expected);
  expect(JSON.stringify(decision.evidence)).toBe(JSON.stringify(expected));
  expect(JSON.parse(JSON.stringify(decision.evidence))).toEqual(JSON.parse(JSON.stringify(expected)));
  expect(JSON.parse(JSON.stringify(decision)).evidence).toEqual(JSON.parse(JSON.stringify(expected)));
  expect({ ...decision }.evidence).toEqual(expected);
}

describe('evidence as plain data', () => {

  it('mixed containers, a failed node and an unregistered one: values, key order, JSON and spreads', () => {
    const d = decided(decide(mixedInput()));
    expect(d.kind).toBe('fit');
    expectSerialisedAs(d, mixedEvidence);
  });

  it('stores one registration version per node, as runs (a few bytes however many nodes)', () => {
    const cluster = Array.from({ length: 50 }, (_, i) => node(`n${i}`, [card(`c${i}`)], { registrationVersion: i < 40 ? 1 : 3 }));
    const packed = decided(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), cluster))).packEvidence();
    expect(packed.nodes.registrationVersion).toEqual([1, 40, 3, 10]);
  });

  it('keeps container keys in the order they always had', () => {
    const d = decided(decide(mixedInput()));
    const keys = (c: ContainerEvidence | undefined): string[] => Object.keys(c ?? {});
    expect(keys(d.evidence[0]!.containers[0])).toEqual(['name', 'index', 'init', 'status', 'request', 'devices', 'cards']);
    expect(keys(d.evidence[0]!.containers[2])).toEqual(['name', 'index', 'init', 'status', 'cards']);
    expect(keys(d.evidence[1]!.containers[0])).toEqual(['name', 'index', 'init', 'status', 'reason', 'request', 'cards']);
    expect(keys(d.evidence[1]!.containers[1])).toEqual(['name', 'index', 'init', 'status', 'request', 'cards']);
    expect(Object.keys(d)).toEqual(['kind', 'node', 'score', 'devices', 'claims', 'bookWholeNode', 'podAnnotations', 'fitNodes', 'nodePolicy', 'passedOver', 'failedNodes', 'message', 'evidence', 'realtime']);
  });

  it('a decision not read yet serialises and spreads with its evidence, in the same place', () => {
    const fresh = decided(decide(mixedInput()));
    expect(Object.keys(fresh)).toEqual(['kind', 'node', 'score', 'devices', 'claims', 'bookWholeNode', 'podAnnotations', 'fitNodes', 'nodePolicy', 'passedOver', 'failedNodes', 'message', 'evidence', 'realtime']);
    expect(JSON.parse(JSON.stringify(fresh)).evidence).toEqual(JSON.parse(JSON.stringify(mixedEvidence)));
    const spreadFirst = decided(decide(mixedInput()));
    expect({ ...spreadFirst }.evidence).toEqual(mixedEvidence);
    expect(spreadFirst.evidence).toEqual(mixedEvidence);
    const noFit = decided(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 9000 })]), [node('n1', [a])])));
    expect(Object.keys(noFit)).toEqual(['kind', 'failedNodes', 'requestType', 'message', 'reasonEvents', 'evidence', 'realtime']);
    expect(JSON.parse(JSON.stringify(noFit)).evidence).toEqual([
      {
        name: 'n1',
        status: 'failed',
        score: 0,
        reason: '1/1 CardInsufficientMemory',
        containers: [
          {
            name: 'c0',
            index: 0,
            init: false,
            status: 'failed',
            reason: '1/1 CardInsufficientMemory',
            request: { nums: 1, type: 'NVIDIA', memreq: 9000, mempercentagereq: 101, coresreq: 0 },
            cards: [cardEvidence(a, 'CardInsufficientMemory', idle, { mem: 9000, cores: 0 })],
          },
        ],
      },
    ]);
  });

  it('is built once and not changed by later decisions (which reuse the engine scratch space)', () => {
    const first = decided(decide(mixedInput()));
    const second = decided(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 7000 })]), [node('n1', [a, b]), node('zz', [card('q')])])));
    expect(second.evidence.map((n) => n.name)).toEqual(['n1', 'zz']);
    expect(second.evidence[0]!.containers[0]!.cards).toEqual([cardEvidence(b, 'Fit', idle, { mem: 7000, cores: 0 })]);
    expect(first.evidence).toBe(first.evidence);
    expect(first.evidence).toEqual(mixedEvidence);
  });

  it('a frozen decision still reads its evidence', () => {
    const frozen = Object.freeze(decided(decide(mixedInput())));
    expect(frozen.evidence).toEqual(mixedEvidence);
    expect(JSON.parse(JSON.stringify(frozen)).evidence).toEqual(JSON.parse(JSON.stringify(mixedEvidence)));
  });

  it('fitting nodes, built when first read as the evidence is, serialise, spread and freeze alike', () => {
    const fitted = (): Extract<Decision, { kind: 'fit' }> => {
      const d = decide(mixedInput());
      if (d.kind !== 'fit') throw new Error(`expected a fit, got ${d.kind}`);
      return d;
    };
    const listed = fitted().fitNodes;
    expect(listed.length).toBeGreaterThan(0);
    expect(fitted().fitNodeCount).toBe(listed.length);
    expect(JSON.parse(JSON.stringify(fitted())).fitNodes).toEqual(listed);
    expect({ ...fitted() }.fitNodes).toEqual(listed);
    const read = fitted();
    expect(read.fitNodes).toBe(read.fitNodes);
    expect(Object.freeze(fitted()).fitNodes).toEqual(listed);
  });

  it('the chosen devices are the evidence devices of the chosen node', () => {
    const d = decide(mixedInput());
    if (d.kind !== 'fit') throw new Error('expected a fit');
    expect(d.devices).toEqual(d.evidence[0]!.containers.map((c) => c.devices ?? []));
  });
});

describe('evidence of checks that look back or choose among picks', () => {
  it('topology-aware: all fitting cards are tried, the chosen pair is in pick order', () => {
    const devices = cards('g', 4);
    const pairScores = { 'g-3': { 'g-1': 200 }, 'g-1': { 'g-3': 200 } };
    const d = decided(decide(input(pod([gpu(2, { 'nvidia.com/gpumem': 100 })], { annotations: { 'hami.io/gpu-scheduler-policy': 'topology-aware' } }), [node('n1', devices, { pairScores })])));
    const container = d.evidence[0]!.containers[0]!;
    expect(container.devices).toEqual([
      { idx: 3, uuid: 'g-3', type: 'NVIDIA', usedmem: 100, usedcores: 0 },
      { idx: 1, uuid: 'g-1', type: 'NVIDIA', usedmem: 100, usedcores: 0 },
    ]);
    expect(container.cards).toEqual([3, 2, 1, 0].map((i) => cardEvidence(devices[i]!, 'Fit', idle, { mem: 100, cores: 0 })));
    expect(JSON.parse(JSON.stringify(d)).evidence).toEqual(JSON.parse(JSON.stringify(d.evidence)));
  });

  it('namespace quota counts the cards the earlier container took on this node', () => {
    const a = card('a', { index: 0 });
    const b = card('b', { index: 1 });
    const two = pod([gpu(1, { 'nvidia.com/gpumem': 3000 }), gpu(1, { 'nvidia.com/gpumem': 3000 })]);
    const d = decided(decide({ ...input(two, [node('n1', [a, b])]), quota: { memLimit: 5000, usedMem: 0, usedCores: 0 } }));
    expect(d.kind).toBe('noFit');
    const [taken, refused] = d.evidence[0]!.containers;
    expect(taken).toMatchObject({ status: 'passed', devices: [{ uuid: 'b', usedmem: 3000 }] });
    expect(refused).toEqual({
      name: 'c1',
      index: 1,
      init: false,
      status: 'failed',
      reason: '2/2 ResourceQuotaNotFit',
      request: { nums: 1, type: 'NVIDIA', memreq: 3000, mempercentagereq: 101, coresreq: 0 },
      // b now carries the first container's booking, so spread tries a first.
      cards: [
        cardEvidence(a, 'ResourceQuotaNotFit', idle, { mem: 3000, cores: 0 }),
        cardEvidence(b, 'ResourceQuotaNotFit', { mem: 3000, cores: 0, slots: 1 }, { mem: 3000, cores: 0 }),
      ],
    });
  });

  it('real-time figures appear only on cards the real-time check measured', () => {
    const cfg = config({ realtime: { enabled: true, mode: 'strict', marginMiB: 100, maxAgeMs: 60_000 } });
    const now = 1_700_000_000_000;
    const a = card('a', { index: 0 });
    const b = card('b', { index: 1 });
    const realtime = { timeMs: now - 1000, devices: { b: { usedMemMB: 7500, totalMemMB: 8192 } } };
    const d = decided(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), [node('n1', [a, b], { realtime })], { config: cfg, nowMs: now })));
    // b is short of real memory (8192 - 7500 - 100 < 1000); a has no report and falls back to the ledger.
    expectSerialisedAs(d, [
      {
        name: 'n1',
        status: 'passed',
        score: 0,
        containers: [
          {
            name: 'c0',
            index: 0,
            init: false,
            status: 'passed',
            request: { nums: 1, type: 'NVIDIA', memreq: 1000, mempercentagereq: 101, coresreq: 0 },
            devices: [{ idx: 0, uuid: 'a', type: 'NVIDIA', usedmem: 1000, usedcores: 0 }],
            cards: [
              cardEvidence(b, 'CardRealtimeInsufficientMemory', idle, { mem: 1000, cores: 0 }, { usedMem: 7500, totalMem: 8192 }),
              cardEvidence(a, 'Fit', idle, { mem: 1000, cores: 0 }),
            ],
          },
        ],
      },
    ]);
  });

  it('thousands of nodes (rows beyond the first allocation) keep every node its own evidence', () => {
    const nodes: NodeState[] = [];
    for (let n = 0; n < 3000; n++) {
      // Every node: card 0 full, card 1 with room; one container of 2 cards fails, one of 1 fits.
      const devices = cards(`n${n}`, 2);
      nodes.push(node(`node-${n}`, devices, { usage: { [`n${n}-0`]: { used: 10, usedmem: 0, usedcores: 0 } } }));
    }
    const d = decided(decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 500 })]), nodes)));
    expect(d.evidence).toHaveLength(3000);
    d.evidence.forEach((evidence, n) => {
      const devices = cards(`n${n}`, 2);
      expect(evidence.name).toBe(`node-${n}`);
      expect(evidence.containers[0]!.devices).toEqual([{ idx: 1, uuid: `n${n}-1`, type: 'NVIDIA', usedmem: 500, usedcores: 0 }]);
      expect(evidence.containers[0]!.cards).toEqual([cardEvidence(devices[1]!, 'Fit', idle, { mem: 500, cores: 0 })]);
    });
    const twoCards = decided(decide(input(pod([gpu(2, { 'nvidia.com/gpumem': 500 })]), nodes)));
    expect(twoCards.kind).toBe('noFit');
    twoCards.evidence.forEach((evidence, n) => {
      const devices = cards(`n${n}`, 2);
      expect(evidence).toMatchObject({ name: `node-${n}`, status: 'failed', reason: '1/2 AllocatedCardsInsufficientRequest, 1/2 CardTimeSlicingExhausted' });
      expect(evidence.containers[0]!.cards).toEqual([
        cardEvidence(devices[1]!, 'Fit', idle, { mem: 500, cores: 0 }),
        cardEvidence(devices[0]!, 'CardTimeSlicingExhausted', { mem: 0, cores: 0, slots: 10 }, { mem: 500, cores: 0 }),
      ]);
    });
  });
});

describe('evidence property: random clusters', () => {
  const cardArb = fc.tuple(cardFiguresArb({ count: 6, devmem: 30000 }), fc.option(cardUsageArb({ used: 6, usedmem: 30000 }))).map(([figures, usage]) => ({ ...figures, usage }));
  const containerArb = fc.oneof(
    fc.constant({}),
    fc.record({ 'nvidia.com/gpu': fc.integer({ min: 1, max: 3 }), 'nvidia.com/gpumem': fc.integer({ min: 1, max: 20000 }), 'nvidia.com/gpucores': fc.integer({ min: 0, max: 120 }) }),
  );
  const policyArb = fc.constantFrom('spread', 'binpack', 'mutex', 'topology-aware');

  it('JSON carries exactly what is read, and every tried card shows its device and the ledger usage', () => {
    fc.assert(
      fc.property(fc.array(fc.array(cardArb, { maxLength: 5 }), { minLength: 1, maxLength: 6 }), fc.array(containerArb, { minLength: 1, maxLength: 3 }), policyArb, (specs, app, policy) => {
        const nodes = specs.map((cardSpecs, n) => {
          const devices: DeviceInfo[] = cardSpecs.map((c, i) => ({ ...card(`GPU-${n}-${i}`, { index: i }), count: c.count, devmem: c.devmem, devcore: c.devcore, numa: c.numa, health: c.health }));
          const usage: Record<string, DeviceUsage> = {};
          cardSpecs.forEach((c, i) => {
            if (c.usage) usage[`GPU-${n}-${i}`] = { ...c.usage };
          });
          return node(`n${n}`, devices, { usage });
        });
        const given = input(pod(app, { annotations: { 'hami.io/gpu-scheduler-policy': policy } }), nodes);
        const decision = decide(given);
        const packed = decision.kind === 'error' ? undefined : JSON.parse(JSON.stringify(decision.packEvidence()));
        const d = decided(decision);
        expect(JSON.parse(JSON.stringify(d.evidence))).toEqual(d.evidence);
        // Stored packed and read back, the evidence is the same, key order included.
        expect(JSON.stringify(unpackStoredEvidence(packed, registeredIn(given)).evidence())).toBe(JSON.stringify(d.evidence));
        d.evidence.forEach((evidence, n) => {
          const state = nodes[n]!;
          if (!state.registration.registered) throw new Error('fixture nodes are registered');
          const { devices } = state.registration;
          // The first container Fit ran on sees the ledger as booked (no init containers here).
          const first = evidence.containers.find((c) => c.status === 'passed' || c.status === 'failed');
          for (const tried of first?.cards ?? []) {
            const device = devices[tried.index]!;
            const booked = state.usage[device.id] ?? { used: 0, usedmem: 0, usedcores: 0 };
            expect(tried).toMatchObject({ uuid: device.id, totalMem: device.devmem, totalCores: device.devcore, slots: device.count });
            expect(tried).toMatchObject({ usedMem: booked.usedmem, usedCores: booked.usedcores, usedSlots: booked.used, freeMem: device.devmem - booked.usedmem });
          }
          for (const container of evidence.containers) {
            const fitCards = container.cards.filter((c) => c.outcome === 'Fit').map((c) => c.uuid);
            for (const chosen of container.devices ?? []) expect(fitCards).toContain(chosen.uuid);
          }
        });
      }),
      { numRuns: 300, seed: 20240611 },
    );
  });
});
