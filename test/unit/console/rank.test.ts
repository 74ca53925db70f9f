import type { NodeDevicesView } from '../../../lib/control/views';
import { sortNodes, summarise, type SortKey } from '../../../lib/console/web/rank';

type Device = NodeDevicesView['devices'][number];

function device(id: string, overrides: Partial<Device> = {}): Device {
  return { id, index: 0, type: 'NVIDIA-A100', count: 10, devmem: 81920, devcore: 100, numa: 0, health: true, used: 0, usedmem: 0, usedcores: 0, freemem: 81920, pods: [], ...overrides };
}

function node(name: string, devices: Device[], overrides: Partial<NodeDevicesView> = {}): NodeDevicesView {
  return { name, registered: true, allocatable: {}, devices, lock: null, handshake: { value: null, state: 'absent' }, registrationUpdated: null, registrationAgeSeconds: null, realtime: null, ...overrides };
}

const booked = (id: string, mem: number, pods = 1) => device(id, { used: pods, usedmem: mem, usedcores: 10 * pods, freemem: 81920 - mem, pods: Array.from({ length: pods }, (_, i) => `ns/${id}-${i}`) });
const lock = (ageSeconds: number) => ({ holder: 'ns/p', since: '2026-11-28T00:00:00Z', ageSeconds, expires: '2026-11-28T00:05:00Z' });

const NODES = [
  node('node10', [device('a')]),
  node('node2', [booked('b', 8000)]),
  node('busy', [booked('c', 70000, 3)]),
  node('over', [device('d', { overcommitted: ['memory'], used: 2, usedmem: 90000, freemem: -8080, pods: ['x/1', 'x/2'] })]),
  node('sick', [device('e', { health: false })]),
  node('locked-new', [device('f')], { lock: lock(5) }),
  node('locked-old', [booked('g', 1000)], { lock: lock(60) }),
  node('gone', [], { registered: false, reason: 'NodeUnregistered' }),
].map(summarise);

describe('the overview puts first what needs a look', () => {
  it.each<[SortKey, string[]]>([
    ['attention', ['over', 'sick', 'gone', 'locked-old', 'locked-new', 'busy', 'node2', 'node10']],
    ['usage', ['over', 'busy', 'node2', 'locked-old', 'gone', 'locked-new', 'node10', 'sick']],
    ['free', ['locked-new', 'node10', 'sick', 'locked-old', 'node2', 'busy', 'gone', 'over']],
    ['pending', ['locked-old', 'locked-new', 'over', 'busy', 'node2', 'gone', 'node10', 'sick']],
    ['name', ['busy', 'gone', 'locked-new', 'locked-old', 'node2', 'node10', 'over', 'sick']],
  ])('sorted by %s', (key, names) => {
    expect(sortNodes(NODES, key).map((s) => s.node.name)).toEqual(names);
  });

  it('calls a node empty only when nothing is booked, wrong or in progress on it', () => {
    expect(NODES.filter((s) => s.empty).map((s) => s.node.name)).toEqual(['node10']);
  });

  it('counts NeuronCores apart from memory and per-cent cores', () => {
    const neuron = summarise(node('inf2', [device('n', { devmem: 0, devcore: 2, freemem: 0, used: 1, coreIndexes: { used: [0], free: [1] } })]));
    expect([neuron.mem, neuron.cores, neuron.neuronUsed, neuron.neuron, neuron.empty]).toEqual([0, 0, 1, 2, false]);
  });
});
