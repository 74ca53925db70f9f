import { addPodUsage, collapsePodUsage } from '../../../lib/engine/usage';
import type { ContainerDevice, DeviceUsage } from '../../../lib/engine/types';

const dev = (uuid: string, usedmem: number, usedcores: number): ContainerDevice => ({ idx: 0, uuid, type: 'NVIDIA', usedmem, usedcores });

describe('collapsePodUsage (docs/hami-parity.md §7.3)', () => {
  it('init peak 20000/10 and app 10000/5 on one GPU -> 20000 MiB, 10 cores, one slot', () => {
    expect(collapsePodUsage([[dev('GPU-a', 20000, 10)], [dev('GPU-a', 10000, 5)]], 1)).toEqual([
      { idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 20000, usedcores: 10, slots: 1 },
    ]);
  });

  it('two app containers 10000/5 on one GPU -> summed, two slots', () => {
    expect(collapsePodUsage([[dev('GPU-a', 10000, 5)], [dev('GPU-a', 10000, 5)]], 0)).toEqual([
      { idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 20000, usedcores: 10, slots: 2 },
    ]);
  });

  it('init containers count their peak, not their sum; result sorted by UUID', () => {
    const collapsed = collapsePodUsage([[dev('GPU-b', 3000, 30)], [dev('GPU-b', 5000, 10)], [dev('GPU-a', 1000, 1)], []], 2);
    expect(collapsed.map((d) => [d.uuid, d.usedmem, d.usedcores, d.slots])).toEqual([
      ['GPU-a', 1000, 1, 1],
      ['GPU-b', 5000, 30, 1],
    ]);
  });

  it('after init containers finished, only app containers count', () => {
    expect(collapsePodUsage([[dev('GPU-a', 20000, 10)], [dev('GPU-a', 10000, 5)]], 1, true)).toEqual([
      { idx: 0, uuid: 'GPU-a', type: 'NVIDIA', usedmem: 10000, usedcores: 5, slots: 1 },
    ]);
  });
});

describe('addPodUsage (docs/hami-parity.md §7.2)', () => {
  it('adds max(slots,1), memory and cores, creating entries for idle cards', () => {
    const usage: Record<string, DeviceUsage> = { 'GPU-a': { used: 1, usedmem: 100, usedcores: 10 } };
    addPodUsage(usage, collapsePodUsage([[dev('GPU-a', 1000, 5)], [dev('GPU-a', 1000, 5), dev('GPU-b', 50, 0)]], 0));
    expect(usage).toEqual({
      'GPU-a': { used: 3, usedmem: 2100, usedcores: 20 },
      'GPU-b': { used: 1, usedmem: 50, usedcores: 0 },
    });
    addPodUsage(usage, [{ ...dev('GPU-b', 1, 1), slots: 0 }]);
    expect(usage['GPU-b']).toEqual({ used: 2, usedmem: 51, usedcores: 1 });
  });
});
