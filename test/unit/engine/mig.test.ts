/**
 * NVIDIA MIG as HAMi v2.10 places it (docs/devices.md, "NVIDIA MIG"). Cases marked "HAMi:" are translated from
 * HAMi's own tests (pkg/device/nvidia/mig_topology_test.go, pkg/scheduler/mig_allocation_test.go,
 * pkg/scheduler/score_test.go "mode is mig"); the others pin what the scheduler must hold around them.
 */
import fc from 'fast-check';
import { decide } from '../../../lib/engine/decide';
import { decodeMigAllocations, freePlacement, migHeld, MigAllocationsError, placeMigInstances, selectMigCandidate } from '../../../lib/engine/devices/nvidia/mig';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { hintFor } from '../../../lib/diagnostics/hints';
import type { DeviceInfo, MigPlacement, MigProfile, NodeState } from '../../../lib/engine/types';
import { card, config, gpu, input, node, pod } from './fixtures';

const slices = (...starts: number[]): MigPlacement[] => starts.map((start) => ({ start, size: 1 }));

/** A100-40GB's profiles as HAMi's test lists them. */
const a100: MigProfile[] = [
  { name: '1g.5gb', memoryMB: 4864, core: 14, sliceCount: 1, placements: slices(0, 1, 2, 3, 4, 5, 6) },
  { name: '2g.10gb', memoryMB: 9984, core: 28, sliceCount: 2, placements: [0, 2, 4].map((start) => ({ start, size: 2 })) },
  { name: '3g.20gb', memoryMB: 19968, core: 42, sliceCount: 3, placements: [0, 4].map((start) => ({ start, size: 4 })) },
];

function migCard(id: string, profiles: MigProfile[], overrides: Partial<DeviceInfo> = {}): DeviceInfo {
  return card(id, { count: 7, devmem: 40960, devcore: 100, mode: 'mig', type: 'NVIDIA-NVIDIA A100-PCIE-40GB', migProfiles: profiles, ...overrides });
}

function decided(state: NodeState[], limits = gpu(2, { 'nvidia.com/gpumem': 4000 }), annotations: Record<string, string> = {}) {
  return decide(input(pod([limits], { annotations }), state));
}

describe('MIG placement', () => {
  it('HAMi: packs placements balanced — 1g and 3g from the highest start, the others from the lowest', () => {
    const occupied: MigPlacement[] = [];
    const starts = ['3g.20gb', '2g.10gb', '1g.5gb', '1g.5gb'].map((name) => {
      const placement = freePlacement(a100.find((p) => p.name === name)!, occupied)!;
      occupied.push(placement);
      return placement.start;
    });
    expect(starts).toEqual([4, 0, 3, 2]);
  });

  it('takes the smallest profile that holds the memory and still has a free placement', () => {
    expect(selectMigCandidate(a100, [], 4000)?.profile.name).toBe('1g.5gb');
    expect(selectMigCandidate(a100, [], 9000)?.profile.name).toBe('2g.10gb');
    // A card whose 1g profile offers slices 0-3 only, all taken: the next larger profile with room is chosen.
    const narrow = [{ ...a100[0]!, placements: slices(0, 1, 2, 3) }, a100[1]!];
    expect(selectMigCandidate(narrow, slices(0, 1, 2, 3), 4000)).toEqual({ profile: a100[1], placement: { start: 4, size: 2 } });
    expect(selectMigCandidate(a100, [{ start: 0, size: 4 }, { start: 4, size: 4 }], 1)).toBeUndefined();
    expect(selectMigCandidate(a100, [], 20_000)).toBeUndefined();
  });
});

describe('MIG fit', () => {
  it('HAMi: several instances of one container on a single card, each at its own placement, profile memory and cores booked', () => {
    const d = decided([node('n1', [migCard('GPU-a', [a100[0]!])])]);
    if (d.kind !== 'fit') throw new Error(d.message);
    expect(d.devices).toEqual([
      [
        { idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 4864, usedcores: 14 },
        { idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 4864, usedcores: 14 },
      ],
    ]);
    expect(d.podAnnotations['hami.io/vgpu-devices-allocated']).toBe('GPU-a,NVIDIA,4864,14:GPU-a,NVIDIA,4864,14:;');
    expect(JSON.parse(d.podAnnotations['hami.io/vgpu-mig-allocations']!)).toEqual([
      { containerIndex: 0, deviceIndex: 0, gpuUUID: 'GPU-a', profile: '1g.5gb', placement: { start: 6, size: 1 } },
      { containerIndex: 0, deviceIndex: 1, gpuUUID: 'GPU-a', profile: '1g.5gb', placement: { start: 5, size: 1 } },
    ]);
    expect(d.parts).toBe(d.podAnnotations['hami.io/vgpu-mig-allocations']);
    // A placement cannot be told apart by counters: the booking is written under the node's version.
    expect(d.bookWholeNode).toBe(true);
  });

  it('HAMi: too few free placements on the card fail with CardMigTopologyInfeasible after the first instance', () => {
    const d = decided([node('n1', [migCard('GPU-a', [{ ...a100[0]!, placements: slices(6) }])])]);
    expect(d.kind).toBe('noFit');
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.failedNodes).toEqual({ n1: '1/1 AllocatedCardsInsufficientRequest, 1/1 CardMigTopologyInfeasible' });
    // The card was tried twice: taken for the first instance, then refused for the second.
    expect(d.evidence[0]!.containers[0]!.cards.map((c) => c.outcome)).toEqual(['Fit', 'CardMigTopologyInfeasible']);
  });

  it('fixed: a card gives one container no more instances than its slots (HAMi books past count), and the claim holds the card', () => {
    const d = decided([node('n1', [migCard('GPU-a', [a100[0]!], { count: 1 })])]);
    expect(d.kind).toBe('noFit');
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.failedNodes).toEqual({ n1: '1/1 AllocatedCardsInsufficientRequest, 1/1 CardTimeSlicingExhausted' });
    const two = decided([node('n1', [migCard('GPU-a', [a100[0]!], { count: 2 })])]);
    if (two.kind !== 'fit') throw new Error('two slots should hold two instances');
    expect(two.claims).toEqual([expect.objectContaining({ uuid: 'GPU-a', slots: 2, mem: 2 * 4864, cores: 28, maxSlotsBefore: 0, maxMemBefore: 40960 - 2 * 4864, maxCoresBefore: 100 - 28 - 1 })]);
    // (-1: the request asks no cores, so the card must keep one: CardComputeUnitsExhausted.)
  });

  it('gives one container more instances than the arena first holds picks for (17 over three cards)', () => {
    const cards = ['GPU-a', 'GPU-b', 'GPU-c'].map((id) => migCard(id, [a100[0]!]));
    const d = decided([node('n1', cards)], gpu(17, { 'nvidia.com/gpumem': 4000 }));
    if (d.kind !== 'fit') throw new Error(d.kind === 'error' ? d.message : JSON.stringify(d.failedNodes));
    expect(d.devices[0]).toHaveLength(17);
    const starts = JSON.parse(d.podAnnotations['hami.io/vgpu-mig-allocations']!) as { gpuUUID: string; placement: { start: number } }[];
    // Every instance at its own placement on its card.
    expect(new Set(starts.map((a) => `${a.gpuUUID}@${a.placement.start}`)).size).toBe(17);
  });

  it('fixed: profiles whose instances together hold more memory than the card are refused by the engine, not by the store forever', () => {
    // A hostile registration: one profile as large as the card, with two placements.
    const whole: MigProfile = { name: '1g.5gb', memoryMB: 1425, core: 0, sliceCount: 1, placements: slices(0, 1) };
    const d = decided([node('n1', [migCard('GPU-a', [whole], { count: 2, devmem: 1425, devcore: 0 })])], gpu(2));
    expect(d.kind).toBe('noFit');
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.failedNodes).toEqual({ n1: 'MIG profile and placement allocation failed' });
    // The scheduler log explains it like any other reason.
    expect(hintFor(d.failedNodes.n1!)?.fix).toContain('migProfiles');
  });

  it('HAMi ("mode is mig"): a profile with one placement serves one instance of two; figures are the ledger’s', () => {
    const d = decide(
      input(pod([gpu(2, { 'nvidia.com/gpumem': 1024, 'nvidia.com/gpucores': 1 })]), [
        node('n1', [migCard('test-0', [{ name: '1g.test', memoryMB: 2048, core: 1, sliceCount: 1, placements: slices(0) }], { count: 4, devmem: 8192, devcore: 4 })], {
          usage: { 'test-0': { used: 1, usedmem: 2048, usedcores: 1 } },
        }),
      ]),
    );
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.failedNodes).toEqual({ n1: '1/1 AllocatedCardsInsufficientRequest, 1/1 CardMigTopologyInfeasible' });
  });

  it('HAMi: a card in hami-core mode keeps the physical count check (NodeInsufficientDevice)', () => {
    const d = decided([node('n1', [card('GPU-a', { count: 7, devmem: 40960 })])]);
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.failedNodes).toEqual({ n1: 'NodeInsufficientDevice' });
  });

  it.each([
    ['no vgpu-mode annotation', {}, 'fit'],
    ['nvidia.com/vgpu-mode: mig', { 'nvidia.com/vgpu-mode': 'mig' }, 'fit'],
    ['nvidia.com/vgpu-mode: hami-core', { 'nvidia.com/vgpu-mode': 'hami-core' }, 'NodeInsufficientDevice'],
  ])('HAMi (isMIGRequest): %s on a MIG node', (_label, annotations, expected) => {
    const d = decided([node('n1', [migCard('GPU-a', [a100[0]!])])], gpu(2, { 'nvidia.com/gpumem': 4000 }), annotations);
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.kind === 'fit' ? 'fit' : d.failedNodes.n1).toBe(expected);
  });

  it('a pod asking for hami-core is not given a MIG card (CardTypeMismatch), and the other way round', () => {
    const nodes = [node('mig', [migCard('GPU-m', a100)]), node('core', [card('GPU-c', { devmem: 40960 })])];
    const toCore = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 4000 })], { annotations: { 'nvidia.com/vgpu-mode': 'hami-core' } }), nodes));
    const toMig = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 4000 })], { annotations: { 'nvidia.com/vgpu-mode': 'mig' } }), nodes));
    if (toCore.kind !== 'fit' || toMig.kind !== 'fit') throw new Error('expected fits');
    expect([toCore.node, toCore.failedNodes.mig]).toEqual(['core', '1/1 CardTypeMismatch']);
    expect([toMig.node, toMig.failedNodes.core]).toEqual(['mig', '1/1 CardTypeMismatch']);
    expect(toCore.bookWholeNode).toBe(false);
    expect(toCore.podAnnotations['hami.io/vgpu-mig-allocations']).toBeUndefined();
  });

  it('placements already in use are avoided, and a later app container sees what an earlier one took', () => {
    const state = { ...node('n1', [migCard('GPU-a', a100)]), placementsInUse: { 'GPU-a': slices(6) } };
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 4000 }), gpu(1, { 'nvidia.com/gpumem': 4000 })]), [state]));
    if (d.kind !== 'fit') throw new Error(d.message);
    expect(JSON.parse(d.podAnnotations['hami.io/vgpu-mig-allocations']!).map((a: { placement: MigPlacement }) => a.placement.start)).toEqual([5, 4]);
  });

  it('a card its bookings cannot account for (failed closed) is not healthy to the filter', () => {
    const state = { ...node('n1', [migCard('GPU-a', a100)]), failClosed: ['GPU-a'] };
    const d = decide(input(pod([gpu(1, { 'nvidia.com/gpumem': 4000 })]), [state]));
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.failedNodes).toEqual({ n1: '1/1 CardNotHealth' });
  });
});

describe('MIG usage from bookings and pod annotations', () => {
  const cards = [migCard('GPU-a', [{ ...a100[0]!, placements: slices(5, 6) }])];
  const oneInstance = [[{ idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 4864, usedcores: 14 }]];

  it('HAMi: restores an allocation by its profile and placement (runtime identity added by the device plugin)', () => {
    const text = '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1},"migUUID":"MIG-a","gpuInstanceID":7,"computeInstanceID":0}]';
    expect(migHeld(oneInstance, text, cards)).toEqual({ placements: { 'GPU-a': slices(6) }, failClosed: [] });
  });

  it('HAMi: fails closed when a pod on a MIG card has no allocation for it', () => {
    expect(migHeld(oneInstance, undefined, cards)).toEqual({ placements: {}, failClosed: ['GPU-a'] });
  });

  it('HAMi: restores reservations beyond the pod’s device entries, and stays healthy', () => {
    const text = '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}},{"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":5,"size":1}}]';
    expect(migHeld(oneInstance, text, cards)).toEqual({ placements: { 'GPU-a': slices(6, 5) }, failClosed: [] });
  });

  it('an allocation on a card in hami-core mode fails that card closed; one on a card the node lacks, every MIG card', () => {
    const core = [card('GPU-c', { count: 7, devmem: 40960 })];
    const onCore = '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-c","profile":"1g.5gb","placement":{"start":6,"size":1}}]';
    expect(migHeld([[{ idx: 0, uuid: 'GPU-c', type: 'NVIDIA', usedmem: 4864, usedcores: 14 }]], onCore, core).failClosed).toEqual(['GPU-c']);
    const elsewhere = '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-gone","profile":"1g.5gb","placement":{"start":6,"size":1}}]';
    expect(migHeld([], elsewhere, [...cards, ...core]).failClosed).toEqual(['GPU-a']);
  });

  it.each([
    ['an entry without a placement size', '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":0}}]', 'MIG allocation 0 is incomplete'],
    ['a negative index', '[{"containerIndex":-1,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}}]', 'MIG allocation 0 is incomplete'],
    ['part of the runtime identity', '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1},"migUUID":"MIG-a"}]', 'MIG allocation 0 has partial runtime identity'],
    [
      'two entries for one container device',
      '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}},{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":5,"size":1}}]',
      'duplicate MIG allocation for container 0 device 0',
    ],
  ])('HAMi: refuses allocations with %s', (_label, text, message) => {
    expect(() => decodeMigAllocations(text)).toThrow(new MigAllocationsError(message));
  });

  it('places init containers each on their own copy, app containers one after another', () => {
    const devices = [[{ idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 4000, usedcores: 0 }], [{ idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 4000, usedcores: 0 }], [{ idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 4000, usedcores: 0 }]];
    const placed = placeMigInstances(devices, 1, [migCard('GPU-a', a100)], {});
    expect(placed?.allocations.map((a) => [a.containerIndex, a.placement.start])).toEqual([
      [0, 6],
      [1, 6],
      [2, 5],
    ]);
  });
});

describe('MIG registration', () => {
  it('reads migProfiles from HAMi’s register annotation (field names as HAMi writes them)', () => {
    const register = JSON.stringify([
      { id: 'GPU-a', count: 7, devmem: 40960, devcore: 100, type: 'NVIDIA-NVIDIA A100-PCIE-40GB', mode: 'mig', health: true, migProfiles: [{ name: '2g.10gb', memoryMB: 9984, core: 29, sliceCount: 2, placements: [{ start: 0, size: 2 }, { start: 2, size: 2 }, { start: 4, size: 2 }] }] },
    ]);
    const registration = parseNodeRegistration({ metadata: { name: 'n1', annotations: { 'hami.io/node-nvidia-register': register } } }, config());
    if (!registration.registered) throw new Error(registration.reason);
    expect(registration.devices[0]!.migProfiles).toEqual([{ name: '2g.10gb', memoryMB: 9984, core: 29, sliceCount: 2, placements: [{ start: 0, size: 2 }, { start: 2, size: 2 }, { start: 4, size: 2 }] }]);
  });

  it('leaves the node unregistered when a profile is larger than its card (its instances would over-book the card)', () => {
    const register = JSON.stringify([{ id: 'GPU-a', count: 7, devmem: 40960, devcore: 100, type: 'NVIDIA', mode: 'mig', health: true, migProfiles: [{ name: '7g.80gb', memoryMB: 81920, core: 100, sliceCount: 7, placements: [{ start: 0, size: 8 }] }] }]);
    expect(parseNodeRegistration({ metadata: { name: 'n1', annotations: { 'hami.io/node-nvidia-register': register } } }, config())).toEqual({
      registered: false,
      reason: 'hami.io/node-nvidia-register device "GPU-a" offers MIG profile "7g.80gb" (81920 MiB, 100 cores) larger than the card (40960 MiB, 100 cores)',
    });
  });

  it('leaves the node unregistered when a placement has no slices (it would overlap nothing, and HAMi refuses it read back)', () => {
    for (const [placement, problem] of [
      [{ start: 0, size: 0 }, '"size" 0 is out of range [1, 2147483647]'],
      [{ start: 0 }, '"size" is missing'],
    ] as const) {
      const register = JSON.stringify([{ id: 'GPU-a', count: 7, devmem: 40960, devcore: 100, type: 'NVIDIA', mode: 'mig', health: true, migProfiles: [{ name: '1g.5gb', memoryMB: 4864, core: 14, sliceCount: 1, placements: [placement] }] }]);
      const registration = parseNodeRegistration({ metadata: { name: 'n1', annotations: { 'hami.io/node-nvidia-register': register } } }, config());
      expect(registration.registered).toBe(false);
      expect(!registration.registered && registration.reason).toContain(`placement 0 ${problem}`);
    }
  });

  it('leaves the node unregistered, saying which field is wrong, when a profile cannot be read', () => {
    const register = JSON.stringify([{ id: 'GPU-a', count: 7, devmem: 40960, devcore: 100, type: 'NVIDIA', mode: 'mig', health: true, migProfiles: [{ name: '1g', placements: 'all' }] }]);
    expect(parseNodeRegistration({ metadata: { name: 'n1', annotations: { 'hami.io/node-nvidia-register': register } } }, config())).toEqual({
      registered: false,
      reason: 'hami.io/node-nvidia-register device 0 "migProfiles" 0 "placements" must be an array',
    });
  });
});

describe('property: MIG instances never overlap and are legal', () => {
  const profileArb = fc.record({
    name: fc.constantFrom('1g.5gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb'),
    memoryMB: fc.integer({ min: 0, max: 40960 }),
    core: fc.integer({ min: 0, max: 100 }),
    sliceCount: fc.integer({ min: 1, max: 7 }),
    placements: fc.array(fc.record({ start: fc.integer({ min: 0, max: 7 }), size: fc.integer({ min: 1, max: 4 }) }), { maxLength: 7 }),
  });
  const inUseArb = fc.array(fc.record({ start: fc.integer({ min: 0, max: 7 }), size: fc.integer({ min: 1, max: 4 }) }), { maxLength: 3 });
  const containerArb = fc.record({ 'nvidia.com/gpu': fc.integer({ min: 1, max: 3 }), 'nvidia.com/gpumem': fc.integer({ min: 0, max: 30000 }) });

  it('decide never throws; every MIG instance of a fit has its own legal placement, free before the pod, holding the memory asked', () => {
    // The checks below run on fits with MIG instances: the run must have met some, or it proved nothing.
    let instances = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.uniqueArray(profileArb, { maxLength: 3, selector: (p) => p.name }), inUseArb, fc.boolean()), { minLength: 1, maxLength: 3 }), fc.array(containerArb, { minLength: 1, maxLength: 2 }), (cardSpecs, app) => {
        const devices = cardSpecs.map(([profiles, , mig], i) => (mig ? migCard(`GPU-${i}`, profiles, { index: i }) : card(`GPU-${i}`, { index: i, devmem: 40960, count: 7 })));
        const inUse = Object.fromEntries(cardSpecs.map(([, used], i) => [`GPU-${i}`, used]));
        const state: NodeState = { ...node('n1', devices), placementsInUse: inUse };
        const decision = decide(input(pod(app), [state]));
        // The requests are well-formed: the node is either chosen or refused with a reason, never an error.
        if (decision.kind === 'error') throw new Error(`well-formed request answered with an error: ${decision.message}`);
        if (decision.kind === 'noFit' && !/\S/.test(decision.failedNodes.n1 ?? '')) throw new Error('node refused without a reason');
        if (decision.kind !== 'fit') return;
        const allocations = decision.podAnnotations['hami.io/vgpu-mig-allocations'] === undefined ? [] : decodeMigAllocations(decision.podAnnotations['hami.io/vgpu-mig-allocations']);
        const overlaps = (a: MigPlacement, b: MigPlacement) => a.start < b.start + b.size && b.start < a.start + a.size;
        const taken = new Map<string, MigPlacement[]>();
        for (const a of allocations) {
          const device = devices.find((d) => d.id === a.gpuUUID)!;
          expect(device.mode).toBe('mig');
          const profile = device.migProfiles!.find((p) => p.name === a.profile)!;
          expect(profile.placements).toContainEqual(a.placement);
          const asked = Number(app[a.containerIndex]!['nvidia.com/gpumem']);
          // Memory 0 asks for the whole card (HAMi's percentage default): a profile holding it is what was chosen.
          expect(profile.memoryMB).toBeGreaterThanOrEqual(asked === 0 ? device.devmem : asked);
          const held = taken.get(a.gpuUUID) ?? [...(inUse[a.gpuUUID] ?? [])];
          expect(held.some((p) => overlaps(p, a.placement))).toBe(false);
          held.push(a.placement);
          taken.set(a.gpuUUID, held);
        }
        // Every device entry on a MIG card has its allocation.
        const onMig = decision.devices.flat().filter((d) => devices.find((c) => c.id === d.uuid)?.mode === 'mig').length;
        expect(allocations).toHaveLength(onMig);
        instances += allocations.length;
      }),
      { numRuns: 400 },
    );
    expect(instances).toBeGreaterThan(0);
  });
});
