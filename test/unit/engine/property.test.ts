import fc from 'fast-check';
import { claimAdmits } from '../../../lib/engine/claims';
import { decide } from '../../../lib/engine/decide';
import { decodePodDevices } from '../../../lib/engine/podAnnotations';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import type { DeviceInfo, DeviceUsage, NodeState } from '../../../lib/engine/types';
import { config, input, pod } from './fixtures';
import type { Limits } from './fixtures';

const cardArb = fc.record({
  count: fc.integer({ min: 0, max: 10 }),
  devmem: fc.integer({ min: 0, max: 40000 }),
  devcore: fc.constantFrom(0, 100, 200),
  numa: fc.integer({ min: 0, max: 1 }),
  health: fc.boolean(),
  used: fc.integer({ min: 0, max: 10 }),
  usedmem: fc.integer({ min: 0, max: 40000 }),
  usedcores: fc.integer({ min: 0, max: 200 }),
});
const nodeArb = fc.array(cardArb, { minLength: 0, maxLength: 6 });
const containerArb: fc.Arbitrary<Limits> = fc.oneof(
  fc.constant({}),
  fc.record(
    {
      'nvidia.com/gpu': fc.integer({ min: 1, max: 3 }),
      'nvidia.com/gpumem': fc.integer({ min: 0, max: 30000 }),
      'nvidia.com/gpumem-percentage': fc.integer({ min: -1, max: 120 }),
      'nvidia.com/gpucores': fc.integer({ min: 0, max: 150 }),
    },
    { requiredKeys: ['nvidia.com/gpu'] },
  ),
);
const annotationsArb = fc.record(
  {
    'hami.io/gpu-scheduler-policy': fc.constantFrom('spread', 'binpack', 'mutex', 'topology-aware', 'numa', 'binpack,numa'),
    'hami.io/node-scheduler-policy': fc.constantFrom('spread', 'binpack'),
    'nvidia.com/numa-bind': fc.constantFrom('true', 'false'),
  },
  { requiredKeys: [] },
);

interface CardSpec {
  count: number;
  devmem: number;
  devcore: number;
  numa: number;
  health: boolean;
  used: number;
  usedmem: number;
  usedcores: number;
}

function buildNodes(specs: CardSpec[][]): NodeState[] {
  return specs.map((cardSpecs, n) => {
    const devices: DeviceInfo[] = cardSpecs.map((c, i) => ({
      id: `GPU-${n}-${i}`,
      index: i,
      count: c.count,
      devmem: c.devmem,
      devcore: c.devcore,
      type: 'NVIDIA-T4',
      numa: c.numa,
      mode: 'hami-core',
      health: c.health,
    }));
    const usage: Record<string, DeviceUsage> = {};
    cardSpecs.forEach((c, i) => (usage[`GPU-${n}-${i}`] = { used: c.used, usedmem: c.usedmem, usedcores: c.usedcores }));
    return { name: `node-${n}`, registration: { registered: true, devices, cordoned: [], pairScores: {} }, usage };
  });
}

describe('property: accepted placements fit every card', () => {
  it('never over-books memory, cores or slots, and never shares a card under mutex/exclusive', () => {
    fc.assert(
      fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 4 }), fc.array(containerArb, { minLength: 1, maxLength: 3 }), fc.array(containerArb, { maxLength: 2 }), annotationsArb, (specs, app, init, annotations) => {
        const nodes = buildNodes(specs);
        const decision = decide(input(pod(app, { init, annotations }), nodes));
        if (decision.kind !== 'fit') return;
        const chosen = nodes.find((n) => n.name === decision.node)!;
        if (!chosen.registration.registered) throw new Error('chosen node is not registered');
        const devices = new Map(chosen.registration.devices.map((d) => [d.id, d]));
        const initCount = init.length;
        const mutex = annotations['hami.io/gpu-scheduler-policy'] === 'mutex';
        // App containers accumulate on one copy; each init container is checked alone.
        const check = (containers: (typeof decision.devices)[number][]): void => {
          const booked = new Map<string, { slots: number; mem: number; cores: number }>();
          for (const container of containers) {
            for (const d of container) {
              const b = booked.get(d.uuid) ?? { slots: 0, mem: 0, cores: 0 };
              b.slots += 1;
              b.mem += d.usedmem;
              b.cores += d.usedcores;
              booked.set(d.uuid, b);
              const info = devices.get(d.uuid)!;
              const before = chosen.usage[d.uuid]!;
              expect(info.health).toBe(true);
              expect(before.usedmem + b.mem).toBeLessThanOrEqual(info.devmem);
              expect(before.usedcores + b.cores).toBeLessThanOrEqual(info.devcore);
              expect(before.used + b.slots).toBeLessThanOrEqual(info.count);
              const mustBeAlone = mutex || (d.usedcores === 100 && info.devcore === 100);
              expect(!mustBeAlone || before.used + b.slots === 1).toBe(true);
            }
          }
        };
        decision.devices.slice(0, initCount).forEach((c) => check([c]));
        check(decision.devices.slice(initCount));
        // Each container got exactly the number of cards it asked for, all distinct.
        decision.devices.forEach((c) => expect(new Set(c.map((d) => d.uuid)).size).toBe(c.length));
      }),
      { numRuns: 300 },
    );
  });

  it('bad annotations never throw out of the engine', () => {
    const text = fc.oneof(fc.string(), fc.json(), fc.constantFrom('[{"id":"GPU-0","count":-1}]', '[{"id":"GPU-0","devmem":1e309}]', 'a,b:', '[null]', ';;,,:'));
    fc.assert(
      fc.property(text, text, text, (register, score, weights) => {
        const n = { metadata: { name: 'n', annotations: { 'hami.io/node-nvidia-register': register, 'hami.io/node-nvidia-score': score } } };
        const registration = parseNodeRegistration(n, config());
        const state: NodeState = { name: 'n', registration, usage: {} };
        const decision = decide(input(pod([{ 'nvidia.com/gpu': 1 }], { annotations: { 'hami.io/device-scoring-weights': weights, 'hami.io/gpu-scheduler-policy': score } }), [state]));
        // Whatever the annotations hold, the answer is one a caller can act on: a placement on a card the node
        // really registered, the node refused with a reason, or the pod's own bad annotation named.
        const registered = new Set(registration.registered ? registration.devices.map((d) => d.id) : []);
        const unusable =
          decision.kind === 'fit'
            ? decision.node !== 'n' || decision.devices.flat().some((card) => !registered.has(card.uuid))
            : decision.kind === 'noFit'
              ? Object.keys(decision.failedNodes).join() !== 'n' || !/\S/.test(decision.failedNodes.n ?? '')
              : !decision.message.includes('invalid hami.io/device-scoring-weights annotation');
        expect({ kind: decision.kind, unusable }).toEqual({ kind: decision.kind, unusable: false });
        const decodeError = ((): string => {
          try {
            decodePodDevices(register);
            return 'none';
          } catch (error) {
            return (error as Error).name;
          }
        })();
        expect(['none', 'PodAnnotationFormatError']).toContain(decodeError);
      }),
      { numRuns: 300 },
    );
  });
});

describe('property: claims are exactly what the store can admit', () => {
  // Mostly readable values (so placements happen), now and then a hostile one.
  const quantity = fc.oneof(
    { weight: 12, arbitrary: fc.oneof(fc.constant('0'), fc.integer({ min: 0, max: 40000 }).map(String)) },
    { weight: 1, arbitrary: fc.constantFrom('-1', '4294967196', 'abc', '0.5', '1e3', '16Gi', '99999999999999999999', '2147483647', '') },
  );
  const hostileContainer: fc.Arbitrary<Limits> = fc.record(
    {
      'nvidia.com/gpu': fc.oneof({ weight: 12, arbitrary: fc.integer({ min: 0, max: 3 }).map(String) }, { weight: 1, arbitrary: fc.constantFrom('-1', '1.5', '4294967297', 'x') }),
      'nvidia.com/gpumem': quantity,
      'nvidia.com/gpumem-percentage': quantity,
      'nvidia.com/gpucores': quantity,
    },
    { requiredKeys: ['nvidia.com/gpu'] },
  );
  const hostileCard = fc.record({
    // Mostly distinct UUIDs; now and then a repeated or empty one (the node is then unregistered).
    id: fc.oneof({ weight: 8, arbitrary: fc.constant('own') }, { weight: 1, arbitrary: fc.constantFrom('GPU-dup', '') }),
    count: fc.integer({ min: 0, max: 4 }),
    devmem: fc.integer({ min: 0, max: 20000 }),
    devcore: fc.constantFrom(0, 1, 100, 200),
    numa: fc.integer({ min: -1, max: 1 }),
    health: fc.boolean(),
    // Now and then a MIG card (its instances book their profile's memory and cores, guarded the same way).
    mig: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      {
        weight: 1,
        arbitrary: fc.uniqueArray(
          fc.record({ name: fc.constantFrom('1g.5gb', '2g.10gb', '3g.20gb'), memoryMB: fc.integer({ min: 0, max: 20000 }), core: fc.integer({ min: 0, max: 200 }), sliceCount: fc.integer({ min: 1, max: 4 }), placements: fc.array(fc.record({ start: fc.integer({ min: 0, max: 6 }), size: fc.integer({ min: 1, max: 3 }) }), { maxLength: 4 }) }),
          { maxLength: 3, selector: (p) => p.name },
        ),
      },
    ),
  });
  // Idle cards are common, and are where off-by-one bounds show.
  const some = (max: number) => fc.oneof(fc.constant(0), fc.integer({ min: 0, max }));
  const usageArb = fc.record({ used: some(6), usedmem: some(25000), usedcores: some(250) });

  it('decide never throws; every fit emits claims the guards admit on the same view, for exactly the cards taken, never negative', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.array(hostileCard, { maxLength: 5 }), fc.array(usageArb, { minLength: 5, maxLength: 5 })), { minLength: 1, maxLength: 3 }),
        fc.array(hostileContainer, { minLength: 1, maxLength: 3 }),
        fc.array(hostileContainer, { maxLength: 2 }),
        annotationsArb,
        (specs, app, init, annotations) => {
          const nodes: NodeState[] = specs.map(([cardSpecs, usages], n) => {
            const withIds = cardSpecs.map(({ mig, ...c }, i) => ({
              ...c,
              id: c.id === 'own' ? `GPU-${n}-${i}` : c.id,
              index: i,
              type: 'NVIDIA-T4',
              mode: mig === undefined ? 'hami-core' : 'mig',
              ...(mig === undefined ? {} : { migProfiles: mig }),
            }));
            const register = JSON.stringify(withIds);
            const registration = parseNodeRegistration({ metadata: { name: `node-${n}`, annotations: { 'hami.io/node-nvidia-register': register } } }, config());
            const usage: Record<string, DeviceUsage> = {};
            withIds.forEach((c, i) => (usage[c.id] = usages[i]!));
            return { name: `node-${n}`, registration, usage };
          });
          const decision = decide(input(pod(app, { init, annotations }), nodes));
          // A refusal accounts for every node; only the pod's own bad annotation refuses without looking at nodes.
          const refused = decision.kind === 'noFit' ? Object.keys(decision.failedNodes).sort() : nodes.map((n) => n.name).sort();
          expect(refused).toEqual(nodes.map((n) => n.name).sort());
          if (decision.kind !== 'fit') return;
          const chosen = nodes.find((n) => n.name === decision.node)!;
          if (!chosen.registration.registered) throw new Error('chosen node is not registered');
          const taken = new Set(decision.devices.flat().map((d) => d.uuid));
          expect(new Set(decision.claims.map((c) => c.uuid))).toEqual(taken);
          for (const claim of decision.claims) {
            const device = chosen.registration.devices.find((d) => d.id === claim.uuid)!;
            expect(claimAdmits(claim, chosen.usage[claim.uuid] ?? { used: 0, usedmem: 0, usedcores: 0 })).toBe(true);
            expect(Math.min(claim.slots, claim.mem, claim.cores)).toBeGreaterThanOrEqual(0);
            // Whatever usage the guard admits, the card stays within its capacity once the pod is added.
            expect(claim.maxSlotsBefore + claim.slots).toBeLessThanOrEqual(device.count);
            expect(claim.maxMemBefore + claim.mem).toBeLessThanOrEqual(device.devmem);
            expect(claim.maxCoresBefore + claim.cores).toBeLessThanOrEqual(Math.max(device.devcore, 0));
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
