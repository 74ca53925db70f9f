/**
 * GPU-aware preemption through the control plane's services on the in-memory store (docs/preemption.md): the plan
 * answered as Effects, the freed cards held for the preemptor (no third pod takes them, no card promised twice), the
 * wait while victims leave and the nudge when the last is gone, the placement on the freed cards, the dry run, a
 * refused eviction, and what the scheduler logs say.
 */
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { filterPod, type FilterAnswer } from '../../../lib/control/filter';
import { evictionRefused } from '../../../lib/control/preemption';
import { readNodeDevices, readSchedulerLog } from '../../../lib/control/views';
import { REQUEUE_ANNOTATION } from '../../../lib/control/effects';
import { card, forwardedPod, gpuNode, gpuPod } from '../../support/cluster';
import { filterOf, placedPatch, world, type Environment } from './fixtures';

const added = (object: unknown) => ({ type: 'ADDED', object });
const modified = (object: unknown) => ({ type: 'MODIFIED', object });
const deleted = (object: unknown) => ({ type: 'DELETED', object });

type Pod = ReturnType<typeof gpuPod>;

/** One 16 GiB card on n1, filled by two running pods of priority 0 and 10 (12 and 4 GiB). */
async function fullCluster(env: Environment) {
  await ingestClusterEvents(env.deps, [added(gpuNode('n1', [card('GPU-0', { devmem: 16384 })]))]);
  const running: Record<string, Pod> = {};
  for (const [name, mem, priority] of [['batch', 12288, 0], ['service', 4096, 10]] as const) {
    const pod = gpuPod(name, [{ name: 'c', gpu: 1, mem }], { priority });
    const annotations = placedPatch(await filterPod(env.deps, filterOf(pod, ['n1'])));
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations, { phase: 'Running' }))]);
    running[name] = pod;
  }
  return running as { batch: Pod; service: Pod };
}

const kinds = (answer: FilterAnswer) => answer.effects.map((e) => (e.kind === 'RecordEvent' ? `${e.reason}:${e.name}` : `${e.kind}:${e.name}`));
const urgentPod = (options: { priority?: number; preemptionPolicy?: 'Never' } = {}) => gpuPod('urgent', [{ name: 'c', gpu: 1, mem: 8192 }], { priority: 1000, ...options });

describe('GPU-aware preemption in the control plane', () => {
  it('evicts the lower-priority pod whose cards make the pod fit, holds them for it, and places it there once the victim is gone', async () => {
    const w = world();
    const env = w.environment();
    const { batch } = await fullCluster(env);
    const urgent = urgentPod();

    const answer = await filterPod(env.deps, filterOf(urgent, ['n1']));
    expect(answer.result.NodeNames).toBeNull();
    // The batch pod (priority 0) leaves; the service (priority 10) is reprieved: 4096 + 8192 fit the card.
    expect(kinds(answer)).toEqual(['FilteringFailed:urgent', 'FilteringFailed:urgent', 'Preempting:urgent', 'Preempted:batch', 'EvictPod:batch']);
    expect(answer.effects.find((e) => e.kind === 'EvictPod')).toEqual({ kind: 'EvictPod', namespace: 'default', name: 'batch', uid: batch.metadata.uid, node: 'n1', preemptor: { namespace: 'default', name: 'urgent', uid: urgent.metadata.uid } });

    // The ledger never promises a card twice: the victim stopped counting, the preemptor's hold counts.
    const card0 = (await readNodeDevices(env.deps, 'n1')).devices[0]!;
    expect(card0.usedmem).toBe(4096 + 8192);

    // A third pod finds the freed memory taken, and may not preempt for it (priority 0 outranks nobody).
    const third = gpuPod('third', [{ name: 'c', gpu: 1, mem: 8192 }], { priority: 0 });
    const thirdAnswer = await filterPod(env.deps, filterOf(third, ['n1']));
    expect(thirdAnswer.result.NodeNames).toBeNull();
    expect(thirdAnswer.effects.some((e) => e.kind === 'EvictPod')).toBe(false);

    // While the victim is still there, the preemptor waits for it.
    const waiting = await filterPod(env.deps, filterOf(urgent, ['n1']));
    expect(waiting.result.FailedNodes?.n1).toMatch(/^waiting for the pods preempted for it to leave node n1: default\/batch/);
    expect(waiting.effects).toEqual([]);
    const waitingLog = await readSchedulerLog(env.deps, { namespace: 'default', name: 'urgent', history: false });
    expect(waitingLog.answer?.sentence).toMatch(/: waiting for the pods preempted for it to leave node n1: default\/batch \(cards held until .+\)\.$/);
    expect(waitingLog.filter.preemption).toMatchObject({ outcome: 'waiting', node: 'n1', cards: ['GPU-0'] });

    // The victim goes: the answer nudges the preemptor.
    const gone = await ingestClusterEvents(env.deps, [deleted(forwardedPod(batch, {}, { rv: '9' }))]);
    expect(gone.effects).toEqual([expect.objectContaining({ kind: 'PatchPodAnnotations', name: 'urgent', annotations: { [REQUEUE_ANNOTATION]: expect.any(String) } })]);

    const placed = await filterPod(env.deps, filterOf(urgent, ['n1']));
    expect(placed.result.NodeNames).toEqual(['n1']);
    expect(placedPatch(placed)['hami.io/vgpu-devices-allocated']).toContain('GPU-0,NVIDIA,8192');
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]!.usedmem).toBe(4096 + 8192);

    // Both scheduler logs explain it.
    const urgentLog = await readSchedulerLog(env.deps, { namespace: 'default', name: 'urgent', history: true });
    const planned = urgentLog.history?.find((a) => a.filter.preemption?.outcome === 'evicting')?.filter.preemption;
    expect(planned).toMatchObject({
      node: 'n1',
      cards: ['GPU-0'],
      victims: [{ pod: 'default/batch', priority: 0, cards: [{ uuid: 'GPU-0', mem: 12288, cores: 0 }] }],
      why: expect.stringContaining('the only node where evicting lower-priority pods makes the pod fit'),
    });
    const batchLog = await readSchedulerLog(env.deps, { namespace: 'default', name: 'batch', history: false });
    expect(batchLog.preemptedBy).toEqual({ pod: 'default/urgent', node: 'n1', time: expect.any(String) });
  });

  it('HAMI_PREEMPTION=log: explains the plan and evicts nothing, holds nothing', async () => {
    const w = world();
    const env = w.environment({ HAMI_PREEMPTION: 'log' });
    await fullCluster(env);
    const answer = await filterPod(env.deps, filterOf(urgentPod(), ['n1']));
    expect(kinds(answer)).toEqual(['FilteringFailed:urgent', 'FilteringFailed:urgent', 'PreemptionDryRun:urgent']);
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]!.usedmem).toBe(12288 + 4096);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'urgent', history: false });
    expect(log.filter.preemption).toMatchObject({ outcome: 'dryRun', victims: [{ pod: 'default/batch' }] });
  });

  it.each([
    ['HAMI_PREEMPTION=off', { HAMI_PREEMPTION: 'off' }, {}, {}, undefined],
    ['the relay (the chart) says off, the control plane on: the stricter wins', {}, { preemptionMode: 'off' as const }, {}, undefined],
    ['preemptionPolicy Never', {}, {}, { preemptionPolicy: 'Never' as const }, 'none'],
  ])('%s: nothing is evicted', async (_label, env0, request, podOptions, outcome) => {
    const w = world();
    const env = w.environment(env0);
    await fullCluster(env);
    const urgent = urgentPod(podOptions);
    const answer = await filterPod(env.deps, { ...filterOf(urgent, ['n1']), ...request });
    expect(answer.effects.some((e) => e.kind === 'EvictPod')).toBe(false);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'urgent', history: false });
    expect(log.filter.preemption?.outcome).toBe(outcome);
  });

  it('a refused eviction drops the hold, remembers the budget, nudges the preemptor, and its next plan avoids the protected pod', async () => {
    const w = world();
    const env = w.environment();
    // Two cards, each full with a priority-0 pod; the one on GPU-1 placed later (less important).
    await ingestClusterEvents(env.deps, [added(gpuNode('n1', [card('GPU-0', { devmem: 16384 }), card('GPU-1', { devmem: 16384 })]))]);
    const pods: Pod[] = [];
    for (const name of ['first', 'second']) {
      const pod = gpuPod(name, [{ name: 'c', gpu: 1, mem: 16384 }], { priority: 0 });
      const annotations = placedPatch(await filterPod(env.deps, filterOf(pod, ['n1'])));
      await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations, { phase: 'Running' }))]);
      w.clock.now += 1000;
      pods.push(pod);
    }
    const urgent = urgentPod();
    const first = await filterPod(env.deps, filterOf(urgent, ['n1']));
    const evicted = first.effects.find((e) => e.kind === 'EvictPod');
    if (evicted?.kind !== 'EvictPod') throw new Error('expected an eviction');
    expect(evicted.name).toBe('second');

    const answer = await evictionRefused(env.deps, {
      preemptor: evicted.preemptor,
      victim: { namespace: 'default', name: 'second', uid: evicted.uid },
      node: 'n1',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      disruptionBudget: true,
    });
    expect(answer.map((e) => (e.kind === 'RecordEvent' ? e.reason : e.kind))).toEqual(['PreemptionRefused', 'PatchPodAnnotations']);
    // The hold is gone and the victim counts again: both cards full, as before.
    expect((await readNodeDevices(env.deps, 'n1')).devices.map((d) => d.usedmem)).toEqual([16384, 16384]);

    const again = await filterPod(env.deps, filterOf(urgent, ['n1']));
    const next = again.effects.find((e) => e.kind === 'EvictPod');
    expect(next?.kind === 'EvictPod' ? next.name : undefined).toBe('first');
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'urgent', history: false });
    expect(log.filter.preemption?.spared).toEqual(['default/second']);
  });

  it('when every plan would break a PodDisruptionBudget, nothing is evicted and the log says why', async () => {
    const w = world();
    const env = w.environment();
    const { batch } = await fullCluster(env);
    const urgent = urgentPod();
    const first = await filterPod(env.deps, filterOf(urgent, ['n1']));
    expect(first.effects.some((e) => e.kind === 'EvictPod')).toBe(true);
    await evictionRefused(env.deps, { preemptor: { namespace: 'default', name: 'urgent', uid: urgent.metadata.uid }, victim: { namespace: 'default', name: 'batch', uid: batch.metadata.uid }, node: 'n1', message: 'Cannot evict pod', disruptionBudget: true });
    const again = await filterPod(env.deps, filterOf(urgent, ['n1']));
    expect(again.effects.some((e) => e.kind === 'EvictPod')).toBe(false);
    expect(kinds(again)).toContain('PreemptionRefused:urgent');
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'urgent', history: false });
    expect(log.filter.preemption).toMatchObject({ outcome: 'refused', victims: [{ pod: 'default/batch', violatesPdb: true }] });
  });

  it('a preemptor deleted while its victim is still terminating ends the hold, and the victim counts again', async () => {
    const w = world();
    const env = w.environment();
    const { batch } = await fullCluster(env);
    const urgent = urgentPod();
    const answer = await filterPod(env.deps, filterOf(urgent, ['n1']));
    expect(answer.effects.some((e) => e.kind === 'EvictPod')).toBe(true);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(batch, {}, { rv: '5', phase: 'Running', deletionTimestamp: '2027-01-15T08:00:00Z' }))]);
    await ingestClusterEvents(env.deps, [deleted(forwardedPod(urgent, {}, { rv: '6' }))]);
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]!.usedmem).toBe(12288 + 4096);
  });

  it('the hold is bounded: past HAMI_PREEMPTION_HOLD_SECONDS a victim still there counts again and the cards are free of the hold', async () => {
    const w = world();
    const env = w.environment({ HAMI_PREEMPTION_HOLD_SECONDS: '60' });
    await fullCluster(env);
    await filterPod(env.deps, filterOf(urgentPod(), ['n1']));
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]!.usedmem).toBe(4096 + 8192);
    w.clock.now += 61_000;
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]!.usedmem).toBe(12288 + 4096);
  });
});
