/** The bench's cluster: card ids shaped like the GPU UUIDs HAMi registers, stable across runs, one per card. */
import { cardId, CARDS, nodeNames, nodeObject, runningPod } from '../../../bench/workload';

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

describe('bench workload: node names', () => {
  it('are EC2 private DNS names with --node-names aws: distinct, valid node names, the same on every run', () => {
    const names = nodeNames(65_536, 'aws');
    expect(new Set(names).size).toBe(names.length);
    for (const name of names.slice(0, 500)) expect(name).toMatch(/^ip-10-0-(25[0-5]|2[0-4]\d|1?\d?\d)-(25[0-5]|2[0-4]\d|1?\d?\d)\.eu-west-1\.compute\.internal$/);
    expect(nodeNames(3, 'aws')).toEqual(names.slice(0, 3));
    expect(() => nodeNames(65_537, 'aws')).toThrow(/at most 65,536/);
  });

  it('are node-00000, node-00001, … by default', () => {
    expect(nodeNames(3, 'short')).toEqual(['node-00000', 'node-00001', 'node-00002']);
  });
});
