/** The bench's cluster: card ids shaped like the GPU UUIDs HAMi registers, stable across runs, one per card. */
import { cardId, CARDS, nodeObject, runningPod } from '../../../bench/workload';

describe('bench workload: card ids', () => {
  it('are GPU UUIDs, the same on every run, distinct per card', () => {
    const ids = ['node-00000', 'node-00001', 'node-00002'].flatMap((node) => Array.from({ length: CARDS }, (_, card) => cardId(node, card)));
    for (const id of ids) expect(id).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(cardId('node-00001', 3)).toBe(ids[CARDS + 3]);
  });

  it('the node registers and the running pods use the same ids', () => {
    const registered = JSON.parse(nodeObject('node-00007', 1).metadata.annotations['hami.io/node-nvidia-register']) as { id: string }[];
    expect(registered.map((d) => d.id)).toEqual(Array.from({ length: CARDS }, (_, card) => cardId('node-00007', card)));
    expect(runningPod('node-00007', 5, 0).metadata.annotations['hami.io/vgpu-devices-allocated']).toBe(`${cardId('node-00007', 5)},NVIDIA,8000,10:;`);
  });
});
