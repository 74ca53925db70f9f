import fc from 'fast-check';
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
        expect(['fit', 'noFit', 'error']).toContain(decision.kind);
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
