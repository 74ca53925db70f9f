/**
 * `POST /filter/ahead` over real HTTP (local server, embedded dynalite): a batch decided in queue order, booked under
 * the guards without over-booking a card, with answers the relay applies and a scheduler log that says so; it never
 * preempts (docs/api.md §2, "Decide ahead").
 */
import { aheadAnswerSchema } from '../../../lib/wire/decidedAhead';
import { schedulerLogSchema } from '../../../lib/diagnostics/schedulerLog';
import { card, forwardedPod, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

describe('decide-ahead over HTTP', () => {
  const { api } = useControlPlane({
    per: 'test',
    nodes: Array.from({ length: 4 }, (_, n) => gpuNode(`node${n}`, [card(`GPU-${n}a`, { devmem: 16000 }), card(`GPU-${n}b`, { devmem: 16000 })])),
  });

  it('decides a batch in queue order, fills every card exactly, and leaves the rest to the live filter', async () => {
    // 8 cards of 16,000 MiB hold two 7,000 MiB pods each: 16 of these 24 fit.
    const pods = Array.from({ length: 24 }, (_, i) => {
      const pod = gpuPod(`p${i}`, [{ name: 'c', gpu: 1, mem: 7000, cores: 10 }]);
      // Sent newest first, with the last one urgent: the queue's order is not the order sent.
      return { ...pod, metadata: { ...pod.metadata, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 24 - i)).toISOString() }, spec: { ...pod.spec, ...(i === 0 ? { priority: -5 } : {}) } };
    });
    const res = await api.call('POST', '/filter/ahead', { pods });
    expect(res.status).toBe(200);
    const answer = aheadAnswerSchema.parse(res.json);
    expect(answer.decisions.map((d) => d.name)).toEqual(pods.map((p) => p.metadata.name));
    const placed = answer.decisions.filter((d) => d.status === 'fit').map((d) => d.name);
    // Oldest first (p23 … p8), p0's low priority puts it last.
    expect(placed.sort()).toEqual(Array.from({ length: 16 }, (_, i) => `p${i + 8}`).sort());
    expect(answer.decisions.find((d) => d.name === 'p0')).toMatchObject({ status: 'noFit', Effects: [] });
    for (let n = 0; n < 4; n++) {
      const devices = await api.devices(`node${n}`);
      for (const device of devices.json.devices as { usedmem: number; used: number }[]) expect(device).toMatchObject({ usedmem: 14000, used: 2 });
    }
    const fit = answer.decisions.find((d) => d.status === 'fit')!;
    expect(fit.Effects.map((e) => e.kind)).toEqual(['PatchPodAnnotations', 'RecordEvent']);
    const log = await api.schedulerLog('default', fit.name);
    const parsed = schedulerLogSchema.parse(log.json);
    expect(parsed.ahead).toEqual({ kind: 'decided' });
    expect(parsed.filter.status).toBe('passed');
  });

  it('never preempts: a pod that fits only by evicting is answered no fit without Effects, and the live filter preempts', async () => {
    const names = Array.from({ length: 4 }, (_, n) => `node${n}`);
    // Every card full with a pod of priority 0, running.
    for (let i = 0; i < 8; i++) {
      const pod = gpuPod(`batch${i}`, [{ name: 'c', gpu: 1, mem: 16000 }], { priority: 0 });
      const placed = await api.filter(pod, names);
      await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, patchedAnnotations(placed.json), { phase: 'Running' }) }]);
    }
    const usedmem = async () => Promise.all(names.map(async (n) => ((await api.devices(n)).json.devices as { usedmem: number }[]).map((d) => d.usedmem)));
    const full = await usedmem();
    expect(full.flat()).toEqual(Array.from({ length: 8 }, () => 16000));

    const urgent = gpuPod('urgent', [{ name: 'c', gpu: 1, mem: 8000 }], { priority: 1000 });
    const res = await api.call('POST', '/filter/ahead', { pods: [urgent] });
    expect(res.status).toBe(200);
    expect(aheadAnswerSchema.parse(res.json).decisions).toEqual([expect.objectContaining({ name: 'urgent', status: 'noFit', Effects: [] })]);
    // No cards held for it: nothing was planned for eviction.
    expect(await usedmem()).toEqual(full);
    const log = schedulerLogSchema.parse((await api.schedulerLog('default', 'urgent')).json);
    expect(log.filter.preemption).toBeUndefined();

    const live = await api.filter(urgent, names);
    expect((live.json.Effects as { kind: string }[]).filter((e) => e.kind === 'EvictPod')).toHaveLength(1);
  });

  it('refuses a batch it cannot read, naming the field', async () => {
    const res = await api.call('POST', '/filter/ahead', { pods: [] });
    expect(res.status).toBe(400);
    expect(res.text).toContain('pods');
  });
});
