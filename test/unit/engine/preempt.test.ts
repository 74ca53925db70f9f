/**
 * GPU-aware preemption's choice (docs/preemption.md, lib/engine/preempt.ts): which pods leave, on which node, by HAMi's
 * own Fit on the ledger with their bookings removed. Nodes are ledgers as the control plane holds them, and pods are
 * placed on them by the engine itself where their cards depend on it (MIG), so the tables exercise the real rules.
 */
import { emptyLedger, nextLedger, cardUsesOf, appContainersNeedLock, toNodeState, type Booking, type NodeLedger } from '../../../lib/control/ledger';
import { preemptionNodeOf } from '../../../lib/control/preemption';
import { decide } from '../../../lib/engine/decide';
import { encodePodDevices } from '../../../lib/engine/podAnnotations';
import { planPreemption, Unhelpful, type PreemptionOutcome } from '../../../lib/engine/preempt';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { NVIDIA, type ContainerDevice, type DeviceInfo, type MigPlacement, type MigProfile, type NodeLike, type PodLike } from '../../../lib/engine/types';
import { card, config, gpu, pod, type Limits } from './fixtures';

const NOW = 1_800_000_000_000;
const NEURON = 'aws.amazon.com/neuron';

interface Held {
  readonly priority?: number;
  /** Placed this many ms before NOW (earlier is more important among equal priorities). */
  readonly age?: number;
  readonly pdb?: boolean;
  readonly adopted?: boolean;
}

function ledgerOf(name: string, devices: DeviceInfo[], bookings: Record<string, Booking> = {}): NodeLedger {
  return nextLedger({ ...emptyLedger(name), registration: { registered: true, devices, cordoned: [], pairScores: {} } }, NOW, { bookings });
}

function booking(name: string, devices: ContainerDevice[][], held: Held, parts?: string): Booking {
  return {
    namespace: 'default',
    name,
    state: 'confirmed',
    devices: encodePodDevices(devices),
    initCount: 0,
    initDone: false,
    uses: cardUsesOf(devices, 0, false),
    holdsAppCards: appContainersNeedLock(devices, 0),
    origin: held.adopted ? 'adopted' : 'decided',
    placedAtMs: NOW - (held.age ?? 0),
    ...(held.priority !== undefined ? { priority: held.priority } : {}),
    ...(held.pdb ? { pdbBlockedUntilMs: NOW + 60_000 } : {}),
    ...(parts !== undefined ? { parts } : {}),
  };
}

/** A booking of `mem` MiB and `cores` % on card `uuid`, for each given card. */
function on(name: string, uuids: string[], mem: number, held: Held, cores = 0): [string, Booking] {
  return [`uid-${name}`, booking(name, [uuids.map((uuid) => ({ idx: 0, uuid, type: NVIDIA, usedmem: mem, usedcores: cores }))], held)];
}

/** Places `limits` on the node by the engine (as the filter would) and books it there. */
function place(ledger: NodeLedger, name: string, limits: Limits, held: Held): NodeLedger {
  const d = decide({ pod: pod([limits]), candidates: [ledger.name], nodes: new Map([[ledger.name, toNodeState(ledger, NOW)]]), config: config(), nowMs: NOW });
  if (d.kind !== 'fit') throw new Error(`${name} does not fit: ${d.kind === 'noFit' ? JSON.stringify(d.failedNodes) : d.message}`);
  return nextLedger(ledger, NOW, { bookings: { ...ledger.bookings, [`uid-${name}`]: booking(name, d.devices.map((c) => [...c]), held, d.parts) } });
}

function preemptor(limits: Limits, priority: number, spec: Partial<NonNullable<PodLike['spec']>> = {}): PodLike {
  const base = pod([limits]);
  return { ...base, metadata: { ...base.metadata, name: 'urgent', uid: 'uid-urgent' }, spec: { ...base.spec, priority, ...spec } };
}

function plan(p: PodLike, ledgers: NodeLedger[]): PreemptionOutcome {
  return planPreemption({ pod: p, nodes: ledgers.map((l) => preemptionNodeOf(l, NOW, 'uid-urgent')), config: config(), nowMs: NOW });
}

const victimsOf = (outcome: PreemptionOutcome): string[] => {
  if (outcome.kind !== 'plan') throw new Error(`expected a plan, got: ${outcome.reason} ${JSON.stringify(outcome.unhelpful)}`);
  return outcome.plans[0]!.victims.map((v) => v.pod);
};
const nodeOf = (outcome: PreemptionOutcome): string => (outcome.kind === 'plan' ? outcome.plans[0]!.node : `none: ${outcome.reason}`);

const g8 = (id: string, overrides: Partial<DeviceInfo> = {}) => card(id, { devmem: 8192, count: 10, ...overrides });

describe('victims on one node', () => {
  it.each<[string, DeviceInfo[], [string, Booking][], Limits, number, string[]]>([
    [
      'memory: the less important pod leaves, the one the pod still fits beside is reprieved',
      [g8('GPU-0')],
      [on('low', ['GPU-0'], 4000, { priority: 0 }), on('mid', ['GPU-0'], 3000, { priority: 10 })],
      gpu(1, { 'nvidia.com/gpumem': 5000 }),
      100,
      ['default/low'],
    ],
    [
      'memory: both must leave when one is not enough',
      [g8('GPU-0')],
      [on('low', ['GPU-0'], 4000, { priority: 0 }), on('mid', ['GPU-0'], 3000, { priority: 10 })],
      gpu(1, { 'nvidia.com/gpumem': 8000 }),
      100,
      ['default/mid', 'default/low'],
    ],
    [
      'cores: the pod holding the cores it needs leaves, the more important one stays',
      [g8('GPU-0')],
      [on('big', ['GPU-0'], 100, { priority: 1 }, 60), on('small', ['GPU-0'], 100, { priority: 2 }, 30)],
      gpu(1, { 'nvidia.com/gpumem': 100, 'nvidia.com/gpucores': 50 }),
      100,
      ['default/big'],
    ],
    [
      'slots: of two equal pods the one placed later leaves (kube-scheduler reprieves the earlier first)',
      [g8('GPU-0', { count: 2 })],
      [on('older', ['GPU-0'], 100, { priority: 0, age: 2000 }), on('newer', ['GPU-0'], 100, { priority: 0, age: 1000 })],
      gpu(1, { 'nvidia.com/gpumem': 100 }),
      100,
      ['default/newer'],
    ],
    [
      'gpu count: two cards needed, each held by a lower-priority pod: both leave',
      [g8('GPU-0', { count: 1 }), g8('GPU-1', { count: 1, index: 1 })],
      [on('a', ['GPU-0'], 100, { priority: 0 }), on('b', ['GPU-1'], 100, { priority: 0, age: 10 })],
      gpu(2, { 'nvidia.com/gpumem': 100 }),
      100,
      ['default/b', 'default/a'],
    ],
    [
      'exclusivity: a whole card (100 % cores) frees the card of the lowest priority, though memory was enough',
      [g8('GPU-0'), g8('GPU-1', { index: 1 })],
      [on('x', ['GPU-0'], 100, { priority: 5 }), on('y', ['GPU-1'], 100, { priority: 1 })],
      gpu(1, { 'nvidia.com/gpumem': 1000, 'nvidia.com/gpucores': 100 }),
      100,
      ['default/y'],
    ],
    [
      'PDB: a pod whose eviction a PodDisruptionBudget refused is reprieved first, so the other one leaves',
      [g8('GPU-0')],
      [on('protected', ['GPU-0'], 4000, { priority: 0, age: 1000, pdb: true }), on('plain', ['GPU-0'], 4000, { priority: 0, age: 2000 })],
      gpu(1, { 'nvidia.com/gpumem': 4000 }),
      100,
      ['default/plain'],
    ],
    [
      'without the PDB the same pods leave in importance order: the later one goes',
      [g8('GPU-0')],
      [on('protected', ['GPU-0'], 4000, { priority: 0, age: 1000 }), on('plain', ['GPU-0'], 4000, { priority: 0, age: 2000 })],
      gpu(1, { 'nvidia.com/gpumem': 4000 }),
      100,
      ['default/protected'],
    ],
  ])('%s', (_label, devices, bookings, limits, priority, victims) => {
    expect(victimsOf(plan(preemptor(limits, priority), [ledgerOf('n1', devices, Object.fromEntries(bookings))]))).toEqual(victims);
  });

  it.each<[string, [string, Booking][], Partial<NonNullable<PodLike['spec']>>, number, string]>([
    ['pods of equal priority are never victims', [on('peer', ['GPU-0'], 8000, { priority: 100 })], {}, 100, Unhelpful.NoLowerPriority],
    ['pods of higher priority are never victims', [on('boss', ['GPU-0'], 8000, { priority: 1000 })], {}, 100, Unhelpful.NoLowerPriority],
    ['pods adopted from someone else\'s annotations are not ours to evict', [on('foreign', ['GPU-0'], 8000, { priority: 0, adopted: true })], {}, 100, Unhelpful.NoLowerPriority],
    ['pods booked without a known priority are not weighed', [on('unknown', ['GPU-0'], 8000, {})], {}, 100, Unhelpful.NoLowerPriority],
    [
      'evicting every lower-priority pod is not enough: no plan',
      [on('boss', ['GPU-0'], 5000, { priority: 1000 }), on('low', ['GPU-0'], 3000, { priority: 0 })],
      {},
      100,
      Unhelpful.StillNoFit,
    ],
  ])('%s', (_label, bookings, spec, priority, why) => {
    const outcome = plan(preemptor(gpu(1, { 'nvidia.com/gpumem': 4000 }), priority, spec), [ledgerOf('n1', [g8('GPU-0')], Object.fromEntries(bookings))]);
    expect(outcome).toMatchObject({ kind: 'none', unhelpful: { n1: why } });
  });

  it('preemptionPolicy Never: no preemption at all', () => {
    const outcome = plan(preemptor(gpu(1, { 'nvidia.com/gpumem': 4000 }), 100, { preemptionPolicy: 'Never' }), [
      ledgerOf('n1', [g8('GPU-0')], Object.fromEntries([on('low', ['GPU-0'], 8000, { priority: 0 })])),
    ]);
    expect(outcome).toEqual({ kind: 'none', reason: 'the pod\'s preemptionPolicy is Never', unhelpful: {} });
  });

  it('the plan carries the cards the pod takes once the victims are gone, as Fit chose them', () => {
    const outcome = plan(preemptor(gpu(1, { 'nvidia.com/gpumem': 5000 }), 100), [
      ledgerOf('n1', [g8('GPU-0'), g8('GPU-1', { index: 1 })], Object.fromEntries([on('a', ['GPU-0'], 4000, { priority: 0 }), on('b', ['GPU-1'], 6000, { priority: 0, age: 2000 })])),
    ]);
    if (outcome.kind !== 'plan') throw new Error('expected a plan');
    const best = outcome.plans[0]!;
    // b, placed earlier, is reprieved first and the pod still fits on GPU-0 without a: a goes.
    expect(best.victims.map((v) => v.pod)).toEqual(['default/a']);
    expect(best.devices.flat().map((d) => [d.uuid, d.usedmem])).toEqual([['GPU-0', 5000]]);
    expect(best.memoryTaken).toBe(4000);
  });
});

describe('the node chosen', () => {
  const full = (name: string, victims: [string, Booking][], extra: [string, Booking][] = []) => ledgerOf(name, [g8(`${name}-GPU`)], Object.fromEntries([...victims, ...extra]));
  const ask = gpu(1, { 'nvidia.com/gpumem': 4000 });

  it.each<[string, NodeLedger[], string]>([
    [
      'fewest PDB violations first, even over a lower victim priority',
      [full('a', [on('a-protected', ['a-GPU'], 8000, { priority: 0, pdb: true })]), full('b', [on('b-plain', ['b-GPU'], 8000, { priority: 50 })])],
      'b',
    ],
    ['then the lowest highest-victim priority', [full('a', [on('a-v', ['a-GPU'], 8000, { priority: 5 })]), full('b', [on('b-v', ['b-GPU'], 8000, { priority: 3 })])], 'b'],
    [
      'then the fewest victims',
      // On a, two of the three pods must leave (5460 MiB); on b one (8000 MiB): fewer victims beats less memory.
      [
        full('a', [on('a-1', ['a-GPU'], 2730, { priority: 1 }), on('a-2', ['a-GPU'], 2730, { priority: 1 }), on('a-3', ['a-GPU'], 2730, { priority: 1 })]),
        full('b', [on('b-1', ['b-GPU'], 8000, { priority: 1 })]),
      ],
      'b',
    ],
    ['then the least GPU memory taken from victims', [full('a', [on('a-v', ['a-GPU'], 6000, { priority: 1 })], [on('a-hi', ['a-GPU'], 2000, { priority: 500 })]), full('b', [on('b-v', ['b-GPU'], 5000, { priority: 1 })], [on('b-hi', ['b-GPU'], 3000, { priority: 500 })])], 'b'],
    ['then the node name, for determinism', [full('b', [on('b-v', ['b-GPU'], 8000, { priority: 1 })]), full('a', [on('a-v', ['a-GPU'], 8000, { priority: 1 })])], 'a'],
  ])('%s', (_label, ledgers, chosen) => {
    const outcome = plan(preemptor(ask, 100), ledgers);
    expect(nodeOf(outcome)).toBe(chosen);
    // Every node helps here: each is a plan, ranked.
    expect(outcome.kind === 'plan' ? outcome.plans.length : 0).toBe(ledgers.length);
  });
});

describe('device kinds', () => {
  const slices = (...starts: number[]): MigPlacement[] => starts.map((start) => ({ start, size: 1 }));
  const a100: MigProfile[] = [
    { name: '1g.5gb', memoryMB: 4864, core: 14, sliceCount: 1, placements: slices(0, 1, 2, 3, 4, 5, 6) },
    { name: '2g.10gb', memoryMB: 9984, core: 28, sliceCount: 2, placements: [0, 2, 4].map((start) => ({ start, size: 2 })) },
    { name: '3g.20gb', memoryMB: 19968, core: 42, sliceCount: 3, placements: [0, 4].map((start) => ({ start, size: 4 })) },
  ];

  it('MIG: the instance of the less important pod is freed, and the pod takes a placement in its slices', () => {
    const mig = card('GPU-mig', { count: 7, devmem: 40960, devcore: 100, mode: 'mig', type: 'NVIDIA-NVIDIA A100-PCIE-40GB', migProfiles: a100 });
    let ledger = ledgerOf('m', [mig]);
    ledger = place(ledger, 'first', gpu(1, { 'nvidia.com/gpumem': 19000 }), { priority: 1, age: 2000 });
    ledger = place(ledger, 'second', gpu(1, { 'nvidia.com/gpumem': 19000 }), { priority: 2, age: 1000 });
    const outcome = plan(preemptor(gpu(1, { 'nvidia.com/gpumem': 9000 }), 100), [ledger]);
    expect(victimsOf(outcome)).toEqual(['default/first']);
    if (outcome.kind !== 'plan') throw new Error('expected a plan');
    // The 2g.10gb profile's memory and a placement inside the slices the victim held.
    expect(outcome.plans[0]!.devices.flat().map((d) => d.usedmem)).toEqual([9984]);
    // The victim's 3g instance sat at slices 4-7; the pod's 2g instance goes inside them, the other pod's stays put.
    const placementOf = (parts: string | undefined) => (JSON.parse(parts ?? '[]') as { profile: string; placement: MigPlacement }[]).map((p) => [p.profile, p.placement]);
    expect(placementOf(ledger.bookings['uid-first']!.parts)).toEqual([['3g.20gb', { start: 4, size: 4 }]]);
    expect(placementOf(outcome.plans[0]!.parts)).toEqual([['2g.10gb', { start: 4, size: 2 }]]);
  });

  it('Neuron: only a contiguous run of devices is freed, whatever the memory (inf2)', () => {
    const node: NodeLike = { metadata: { name: 'inf', labels: { 'node.kubernetes.io/instance-type': 'inf2.48xlarge' } }, status: { capacity: { [NEURON]: '12', 'aws.amazon.com/neuroncore': '24' } } };
    const registration = parseNodeRegistration(node, config());
    if (!registration.registered) throw new Error(registration.reason);
    let ledger = ledgerOf('inf', [...registration.devices]);
    // Twelve one-device pods; HAMi places single devices from the last index down.
    for (let i = 0; i < 12; i++) ledger = place(ledger, `p${i}`, { [NEURON]: 1 }, { priority: 0 });
    const deviceOf = (uid: string) => ledger.bookings[uid]!.uses[0]!.uuid;
    const low = new Set(['inf-AWSNeuron-3', 'inf-AWSNeuron-5', 'inf-AWSNeuron-6', 'inf-AWSNeuron-8']);
    const bookings: Record<string, Booking> = {};
    for (const [uid, b] of Object.entries(ledger.bookings)) {
      const device = deviceOf(uid);
      bookings[uid] = { ...b, name: device, priority: low.has(device) ? 1 : 1000, placedAtMs: NOW - 100 + Number(device.split('-').pop()) };
    }
    const outcome = plan(preemptor({ [NEURON]: 2 }, 100), [nextLedger(ledger, NOW, { bookings })]);
    // Devices 3, 5, 6 and 8 are the lower-priority ones; only 5 and 6 make a contiguous pair.
    expect(victimsOf(outcome).sort()).toEqual(['default/inf-AWSNeuron-5', 'default/inf-AWSNeuron-6']);
    if (outcome.kind !== 'plan') throw new Error('expected a plan');
    expect(outcome.plans[0]!.devices.flat().map((d) => d.idx)).toEqual([5, 6]);
  });
});
