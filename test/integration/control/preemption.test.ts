/**
 * GPU-aware preemption through the public routes (docs/api.md §2 and §3, docs/preemption.md), over real HTTP against
 * the local server and its DynamoDB-compatible store: a high-priority pod on a full cluster is answered no fit with
 * the plan as Effects, the freed cards are not given to a third pod, and a refused eviction reported on
 * `/preemption/refused` ends the hold.
 */
import { schedulerLogSchema } from '../../../lib/diagnostics/schedulerLog';
import { card, forwardedPod, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

describe('preemption over HTTP', () => {
  const { api } = useControlPlane({
    per: 'test',
    nodes: [gpuNode('n1', [card('GPU-a', { devmem: 16384 })])],
    // Two running pods fill the card: 12 GiB at priority 0, 4 GiB at priority 10.
    prepare: async (api) => {
      for (const [name, mem, priority] of [['batch', 12288, 0], ['service', 4096, 10]] as const) {
        const pod = gpuPod(name, [{ name: 'c', gpu: 1, mem }], { priority });
        const placed = await api.filter(pod, ['n1']);
        await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, patchedAnnotations(placed.json), { phase: 'Running' }) }]);
      }
    },
  });

  const usedmem = async () => ((await api.devices('n1')).json.devices as { usedmem: number }[]).map((d) => d.usedmem);

  it('answers no fit with the eviction plan as Effects, and keeps the freed memory from a third pod', async () => {
    expect(await usedmem()).toEqual([16384]);
    const urgent = gpuPod('urgent', [{ name: 'c', gpu: 1, mem: 8192 }], { priority: 1000 });
    const res = await api.filter(urgent, ['n1']);
    expect(res.status).toBe(200);
    expect(res.json.NodeNames).toBeNull();
    expect(res.json.FailedNodes).toEqual({ n1: expect.stringContaining('CardInsufficientMemory') });
    const effects = res.json.Effects as { kind: string; name: string; reason?: string }[];
    expect(effects.filter((e) => e.kind === 'EvictPod')).toEqual([
      { kind: 'EvictPod', namespace: 'default', name: 'batch', uid: 'uid-default-batch', node: 'n1', preemptor: { namespace: 'default', name: 'urgent', uid: urgent.metadata.uid } },
    ]);
    expect(effects.filter((e) => e.kind === 'RecordEvent').map((e) => `${e.reason}:${e.name}`)).toEqual(
      expect.arrayContaining(['Preempting:urgent', 'Preempted:batch']),
    );
    expect(await usedmem()).toEqual([4096 + 8192]);

    const third = await api.filter(gpuPod('third', [{ name: 'c', gpu: 1, mem: 8192 }], { priority: 5 }), ['n1']);
    expect(third.json.NodeNames).toBeNull();
    expect((third.json.Effects as { kind: string }[]).some((e) => e.kind === 'EvictPod')).toBe(false);

    const log = await api.schedulerLog('default', 'urgent');
    expect(schedulerLogSchema.safeParse(log.json).success).toBe(true);
    expect(log.json.filter.preemption).toMatchObject({ outcome: 'evicting', node: 'n1', cards: ['GPU-a'], victims: [{ pod: 'default/batch', priority: 0 }] });
  });

  it('a refusal reported on /preemption/refused ends the hold and answers the explanation and a nudge', async () => {
    const urgent = gpuPod('urgent', [{ name: 'c', gpu: 1, mem: 8192 }], { priority: 1000 });
    await api.filter(urgent, ['n1']);
    const report = {
      preemptor: { namespace: 'default', name: 'urgent', uid: urgent.metadata.uid },
      victim: { namespace: 'default', name: 'batch', uid: 'uid-default-batch' },
      node: 'n1',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      disruptionBudget: true,
    };
    const res = await api.call('POST', '/preemption/refused', report);
    expect(res.status).toBe(200);
    expect(res.json.Effects.map((e: { kind: string; reason?: string }) => e.reason ?? e.kind)).toEqual(['PreemptionRefused', 'PatchPodAnnotations']);
    expect(await usedmem()).toEqual([16384]);

    const bad = await api.call('POST', '/preemption/refused', { ...report, node: '' });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain('node');
  });
});
