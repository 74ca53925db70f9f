/**
 * The relay's store of decisions made ahead (lib/relay/aheadDecisions.ts), with a control plane and an API server
 * played in memory: which pods are claimed and batched, when kube-scheduler's filter may use a decision, and why not.
 */
import { AheadDecisions, podFingerprint, type AheadOptions } from '../../../lib/relay/aheadDecisions';
import type { ControlPlaneClient } from '../../../lib/relay/controlPlane';
import { ControlPlaneTimeoutError } from '../../../lib/relay/errors';
import type { ClusterWriter } from '../../../lib/relay/effects';
import type { AheadDecision } from '../../../lib/wire/decidedAhead';
import type { AppLogger } from '../../../lib/powertools';

const quiet = (): void => undefined;
const logger = { debug: quiet, info: quiet, warn: quiet, error: quiet } as unknown as AppLogger;

function pendingPod(name: string, extra: { annotations?: Record<string, string>; mem?: string; nodeName?: string } = {}) {
  return {
    metadata: { name, namespace: 'ml', uid: `uid-${name}`, resourceVersion: '1', annotations: extra.annotations ?? {} },
    spec: {
      schedulerName: 'hami-scheduler',
      ...(extra.nodeName ? { nodeName: extra.nodeName } : {}),
      containers: [{ name: 'main', resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': extra.mem ?? '4000' } } }],
    },
    status: { phase: 'Pending' },
  };
}

/** A control plane that places every pod on `node` (the HAMi annotations and the mark, as the route answers). */
/** `held`: each batch's answer waits until the test sends it (`answer(i)`, or `answer(i, 'timeout')`), so batches stay in flight. */
function setup(node = 'n1', overrides: Partial<AheadOptions> = {}, held = false) {
  let clock = 1_800_000_000_000;
  const batches: unknown[][] = [];
  const patched = new Map<string, Record<string, string | null>>();
  const claims: string[] = [];
  const answers: ((outcome: 'ok' | 'timeout') => void)[] = [];
  const controlPlane: ControlPlaneClient = {
    get: async () => ({ status: 200, body: {}, text: '' }),
    post: async (_path, body) => {
      const pods = (body as { pods: ReturnType<typeof pendingPod>[] }).pods;
      batches.push(pods);
      const outcome = held ? await new Promise<'ok' | 'timeout'>((resolve) => answers.push(resolve)) : 'ok';
      if (outcome === 'timeout') throw new ControlPlaneTimeoutError('/filter/ahead', 1000);
      const time = String(Math.floor(clock / 1000));
      const decisions: AheadDecision[] = pods.map((p) => ({
        uid: p.metadata.uid,
        namespace: p.metadata.namespace,
        name: p.metadata.name,
        status: 'fit',
        node,
        Effects: [{ kind: 'PatchPodAnnotations', namespace: 'ml', name: p.metadata.name, uid: p.metadata.uid, annotations: { 'hami.io/vgpu-node': node, 'hami.io/vgpu-time': time, 'hami.io/decided-ahead': `${node}@${time}` } }],
      }));
      return { status: 200, body: { decisions, view: { seq: 3, ageMs: 0 }, decidedAt: new Date(clock).toISOString() }, text: '' };
    },
  };
  let release: () => void = () => undefined;
  const windows: Promise<void>[] = [];
  /** A filter's waits for a batch: they end when the test says so (`elapseWaits`). */
  const waits: (() => void)[] = [];
  const ahead = new AheadDecisions({
    controlPlane,
    writer: {
      patchPodMetadata: async (e) => {
        patched.set(e.name, e.annotations);
      },
      bindPod: async () => undefined,
      recordEvent: async () => undefined,
      patchNodeMetadata: async () => undefined,
      // Decide-ahead never preempts (docs/relay.md, "Deciding ahead"): an eviction fails the batch's apply.
      evictPod: async () => {
        throw new Error('decide-ahead must not evict');
      },
    },
    claim: async (target) => {
      claims.push(target.name);
      return 'nudged';
    },
    logger,
    schedulerName: 'hami-scheduler',
    managedResources: ['nvidia.com/gpu', 'nvidia.com/gpumem'],
    windowMs: 20,
    maxPods: 100,
    maxBatches: 1,
    coldAfterMs: 60_000,
    waitMs: 1000,
    reservationTtlMs: 600_000,
    requestTimeoutMs: 1000,
    now: () => clock,
    // The batch window ends when the test says so, and so do waits for a batch.
    delay: (ms) => {
      if (ms !== 20) return new Promise<void>((resolve) => waits.push(resolve));
      const window = new Promise<void>((resolve) => {
        release = resolve;
      });
      windows.push(window);
      return window;
    },
    viewSeq: () => 3,
    ...overrides,
  });
  const flush = async () => {
    // Claims settle in microtasks; then the window closes and the batch is decided and applied.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    release();
    for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
  };
  /** The pod as the API server holds it after the relay's patches. */
  const current = (name: string, extra: Parameters<typeof pendingPod>[1] = {}) => {
    const annotations: Record<string, string> = {};
    for (const [k, v] of Object.entries(patched.get(name) ?? {})) if (v !== null) annotations[k] = v;
    return pendingPod(name, { ...extra, annotations: { ...annotations, ...(extra.annotations ?? {}) } });
  };
  const answer = async (i: number, outcome: 'ok' | 'timeout' = 'ok') => {
    answers[i]?.(outcome);
    for (let k = 0; k < 50; k++) await new Promise<void>((r) => setImmediate(r));
  };
  const elapseWaits = async () => {
    for (let k = 0; k < 10; k++) await Promise.resolve();
    for (const end of waits.splice(0)) end();
    for (let k = 0; k < 10; k++) await new Promise<void>((r) => setImmediate(r));
  };
  return { ahead, batches, claims, patched, flush, current, answer, elapseWaits, waiting: () => waits.length, advance: (ms: number) => (clock += ms) };
}

describe('decide-ahead in the relay', () => {
  it('claims and batches pending pods of our scheduler, and answers their filters with the decided node', async () => {
    const t = setup();
    t.ahead.observe('ADDED', pendingPod('a'));
    t.ahead.observe('ADDED', pendingPod('b'));
    // Not ours: another scheduler, already bound, asking for no GPU, filtered live already.
    t.ahead.observe('ADDED', { ...pendingPod('other'), spec: { ...pendingPod('other').spec, schedulerName: 'default-scheduler' } });
    t.ahead.observe('ADDED', pendingPod('bound', { nodeName: 'n9' }));
    t.ahead.observe('ADDED', { ...pendingPod('cpu'), spec: { schedulerName: 'hami-scheduler', containers: [{ name: 'c', resources: { limits: { cpu: '1' } } }] } });
    t.ahead.observe('ADDED', pendingPod('live', { annotations: { 'hami.io/vgpu-node': 'n2' } }));
    await t.flush();
    expect(t.claims.sort()).toEqual(['a', 'b']);
    expect(t.batches.map((b) => b.length)).toEqual([2]);
    // The relay adds the fingerprint of the pod decided on.
    expect(t.patched.get('a')?.['hami.io/decided-ahead-pod']).toBe(podFingerprint(pendingPod('a')));
    expect(await t.ahead.lookup(t.current('a'), ['n1', 'n2'])).toEqual({ use: 'n1', decidedAt: expect.any(String) });
    // When the filter used it, for the bind's report to the control plane; b's was not used.
    expect(t.ahead.usedAt('uid-a')).toBe(new Date(1_800_000_000_000).toISOString());
    expect(t.ahead.usedAt('uid-b')).toBeUndefined();
    // Used once: a second filter of the same pod is decided live.
    expect(await t.ahead.lookup(t.current('a'), ['n1', 'n2'])).toEqual({ live: true });
  });

  it('says why a decision is not used: node not sent, pod changed, too old', async () => {
    const t = setup('n1');
    for (const name of ['excluded', 'changed', 'old']) t.ahead.observe('ADDED', pendingPod(name));
    await t.flush();
    const excluded = await t.ahead.lookup(t.current('excluded'), ['n2', 'n3']);
    expect(excluded).toEqual({ live: true, note: expect.stringContaining('node n1 is not among the 2 nodes kube-scheduler sent') });
    const changed = await t.ahead.lookup(t.current('changed', { mem: '9000' }), ['n1']);
    expect(changed).toEqual({ live: true, note: expect.stringContaining('the pod changed since') });
    t.advance(301_000);
    const old = await t.ahead.lookup(t.current('old'), ['n1']);
    expect(old).toEqual({ live: true, note: expect.stringContaining('past half the reservation TTL (600 s)') });
  });

  it('says why too when kube-scheduler sent Node objects, the batch found no fit, or its patch could not be written', async () => {
    const t = setup('n1');
    t.ahead.observe('ADDED', pendingPod('objects'));
    await t.flush();
    expect(await t.ahead.lookup(t.current('objects'), null)).toEqual({ live: true, note: expect.stringContaining('kube-scheduler sent Node objects, not names') });

    const noFit: ControlPlaneClient = {
      get: async () => ({ status: 200, body: {}, text: '' }),
      post: async (_path, body) => {
        const pods = (body as { pods: ReturnType<typeof pendingPod>[] }).pods;
        const decisions: AheadDecision[] = pods.map((p) => ({ uid: p.metadata.uid, namespace: 'ml', name: p.metadata.name, status: 'noFit', failedNodes: { n1: 'CardInsufficientMemory' }, Effects: [] }));
        return { status: 200, body: { decisions, view: { seq: 3, ageMs: 0 }, decidedAt: new Date(0).toISOString() }, text: '' };
      },
    };
    const none = setup('n1', { controlPlane: noFit });
    none.ahead.observe('ADDED', pendingPod('full'));
    await none.flush();
    // Other replicas learn there is no decision to wait for; the filter decides live, and may preempt.
    expect(none.patched.get('full')).toEqual({ 'hami.io/decided-ahead': 'none' });
    expect(await none.ahead.lookup(none.current('full'), ['n1'])).toEqual({ live: true, note: expect.stringContaining('found no fit (1 nodes failed)') });

    const refusing: ClusterWriter = {
      patchPodMetadata: async () => {
        throw new Error('the API server is unavailable');
      },
      bindPod: async () => undefined,
      recordEvent: async () => undefined,
      patchNodeMetadata: async () => undefined,
      evictPod: async () => ({ kind: 'refused', message: 'not in this test', disruptionBudget: false }),
    };
    const unwritten = setup('n1', { writer: refusing });
    unwritten.ahead.observe('ADDED', pendingPod('lost'));
    await unwritten.flush();
    expect(await unwritten.ahead.lookup(pendingPod('lost'), ['n1'])).toEqual({ live: true, note: expect.stringContaining('could not be written to the pod') });
  });

  it('claims only pending pods that are not being deleted, and a replica waiting for another’s claim stops at its “none”', async () => {
    const t = setup('n1');
    t.ahead.observe('ADDED', { ...pendingPod('running'), status: { phase: 'Running' } });
    t.ahead.observe('ADDED', { ...pendingPod('leaving'), metadata: { ...pendingPod('leaving').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });
    await t.flush();
    expect(t.claims).toEqual([]);

    const claimed = pendingPod('elsewhere', { annotations: { 'hami.io/decided-ahead': 'claimed' } });
    t.ahead.observe('MODIFIED', claimed);
    const filter = t.ahead.lookup(claimed, ['n1']);
    // The deciding replica found no node: it says so on the pod, and the wait ends without one.
    t.ahead.observe('MODIFIED', pendingPod('elsewhere', { annotations: { 'hami.io/decided-ahead': 'none' } }));
    expect(await filter).toEqual({ live: true });
    expect(t.waiting()).toBe(1);
  });

  it('the fingerprint ignores the scheduler’s own annotations and nudges, not the pod’s requests or steering', () => {
    const base = pendingPod('p');
    const stamped = pendingPod('p', { annotations: { 'hami.io/vgpu-node': 'n1', 'hami.io/decided-ahead': 'claimed', 'hami.io/requeue': 'now', 'other.io/x': 'y' } });
    expect(podFingerprint(stamped)).toBe(podFingerprint(base));
    expect(podFingerprint(pendingPod('p', { annotations: { 'nvidia.com/use-gputype': 'A100' } }))).not.toBe(podFingerprint(base));
    expect(podFingerprint(pendingPod('p', { mem: '5000' }))).not.toBe(podFingerprint(base));
  });

  it('another replica’s decision is learnt from the pod’s annotations and used here', async () => {
    const decider = setup('n4');
    decider.ahead.observe('ADDED', pendingPod('shared'));
    await decider.flush();
    const other = setup('n4');
    // This replica saw the claim first (it waits for that decision), then the decision itself.
    other.ahead.observe('MODIFIED', pendingPod('shared', { annotations: { 'hami.io/decided-ahead': 'claimed' } }));
    // An older event (the pod before the claim) does not end the wait.
    other.ahead.observe('ADDED', pendingPod('shared'));
    other.ahead.observe('MODIFIED', decider.current('shared'));
    expect(other.claims).toEqual([]);
    expect(await other.ahead.lookup(decider.current('shared'), ['n4'])).toEqual({ use: 'n4', decidedAt: expect.any(String) });
  });

  it('a filter that waited in vain for another replica’s batch answers “try again”, at once after that, until the claim is too old to land', async () => {
    const other = setup('n4');
    other.ahead.observe('MODIFIED', pendingPod('shared', { annotations: { 'hami.io/decided-ahead': 'claimed' } }));
    const pod = pendingPod('shared', { annotations: { 'hami.io/decided-ahead': 'claimed' } });
    const first = other.ahead.lookup(pod, ['n4']);
    await other.elapseWaits();
    // Deciding live now could be overwritten by the other replica's decision when its batch lands.
    expect(await first).toEqual({ retry: expect.stringContaining('another relay replica') });
    // kube-scheduler's next try does not hold up its queue again.
    const again = other.ahead.lookup(pod, ['n4']);
    expect(other.waiting()).toBe(0);
    expect(await again).toEqual({ retry: expect.stringContaining('another relay replica') });
    // Past the request timeout and one more wait (the options: 1,000 ms each), that replica drops its answer: decided live.
    other.advance(2000);
    expect(await other.ahead.lookup(pod, ['n4'])).toEqual({ live: true, note: expect.stringContaining('had not answered within 1000 ms') });
  });

  it('a filter that waited in vain for this replica’s batch is decided live: the claim is given up and the late answer is not applied', async () => {
    const t = setup('n1', {}, true);
    t.ahead.observe('ADDED', pendingPod('a'));
    await t.flush();
    const filter = t.ahead.lookup(t.current('a'), ['n1']);
    await t.elapseWaits();
    expect(await filter).toEqual({ live: true, note: expect.stringContaining('had not answered within 1000 ms') });
    // Other replicas learn there is no decision to wait for.
    expect(t.patched.get('a')?.['hami.io/decided-ahead']).toBe('none');
    await t.answer(0);
    expect(t.patched.get('a')?.['hami.io/vgpu-node']).toBeUndefined();
  });

  it('a batch that fails, or answers after the claim is too old, gives its claims up and applies nothing', async () => {
    const t = setup('n1', { maxPods: 1, maxBatches: 2 }, true);
    t.ahead.observe('ADDED', pendingPod('failed'));
    await t.flush();
    await t.answer(0, 'timeout');
    expect(t.patched.get('failed')).toEqual({ 'hami.io/decided-ahead': 'none' });
    t.ahead.observe('ADDED', pendingPod('late'));
    await t.flush();
    t.advance(1000);
    await t.answer(1);
    expect(t.patched.get('late')).toEqual({ 'hami.io/decided-ahead': 'none' });
    expect(await t.ahead.lookup(t.current('late'), ['n1'])).toEqual({ live: true, note: expect.stringContaining('too late to be used') });
  });

  it('once the control plane has answered, keeps up to maxBatches batches in flight, the next taking the most urgent pods queued, each pod in one batch', async () => {
    const t = setup('n1', { maxBatches: 2 }, true);
    const names = (batch: unknown[]) => batch.map((p) => (p as { metadata: { name: string } }).metadata.name);
    // The first batch warms the control plane (the ramp, tested below).
    t.ahead.observe('ADDED', pendingPod('w'));
    await t.flush();
    await t.answer(0);
    t.ahead.observe('ADDED', pendingPod('a'));
    await t.flush();
    t.ahead.observe('ADDED', pendingPod('b'));
    await t.flush();
    // Two batches out, neither answered yet.
    expect(t.batches.map(names)).toEqual([['w'], ['a'], ['b']]);
    // A filter for b waits for its batch; pods that come now wait for a free slot, then go most urgent first.
    const filterB = t.ahead.lookup(t.current('b'), ['n1']);
    const low = pendingPod('low');
    const high = { ...pendingPod('high'), spec: { ...pendingPod('high').spec, priority: 100 } };
    t.ahead.observe('ADDED', low);
    t.ahead.observe('ADDED', high);
    await t.flush();
    expect(t.batches).toHaveLength(3);
    await t.answer(2);
    expect(await filterB).toEqual({ use: 'n1', decidedAt: expect.any(String) });
    expect(t.batches.map(names)).toEqual([['w'], ['a'], ['b'], ['high', 'low']]);
    await t.answer(1);
    await t.answer(3);
    // Every pod decided once, in one batch, and its decision used by its filter.
    expect(t.batches.flatMap(names).sort()).toEqual(['a', 'b', 'high', 'low', 'w']);
    for (const name of ['w', 'a', 'high', 'low']) expect(await t.ahead.lookup(t.current(name), ['n1'])).toEqual({ use: 'n1', decidedAt: expect.any(String) });
  });

  it('with maxBatches 1, pods that come while a batch is out wait for it to answer', async () => {
    const t = setup('n1', { maxBatches: 1 }, true);
    t.ahead.observe('ADDED', pendingPod('a'));
    await t.flush();
    t.ahead.observe('ADDED', pendingPod('b'));
    await t.flush();
    expect(t.batches).toHaveLength(1);
    await t.answer(0);
    expect(t.batches).toHaveLength(2);
  });

  describe('the ramp: one batch in flight until the control plane has answered one', () => {
    // One pod a batch, so every pod queued is a batch of its own waiting for a slot.
    const names = (t: ReturnType<typeof setup>) => t.batches.map((b) => b.map((p) => (p as { metadata: { name: string } }).metadata.name).join());
    const queue = async (t: ReturnType<typeof setup>, pods: string[]) => {
      for (const name of pods) t.ahead.observe('ADDED', pendingPod(name));
      await t.flush();
    };

    it('sends one batch on a cold control plane however many pods are queued, then up to maxBatches once it answered', async () => {
      const t = setup('n1', { maxPods: 1, maxBatches: 3 }, true);
      await queue(t, ['a', 'b', 'c', 'd', 'e', 'f']);
      expect(names(t)).toEqual(['a']);
      // Answered: warm. The next batches go while the first one's Effects are applied, three in flight at most.
      await t.answer(0);
      expect(names(t)).toEqual(['a', 'b', 'c', 'd']);
      await t.answer(1);
      expect(names(t)).toEqual(['a', 'b', 'c', 'd', 'e']);
      await t.answer(2);
      await t.answer(3);
      await t.answer(4);
      await t.answer(5);
      for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) expect(await t.ahead.lookup(t.current(name), ['n1'])).toEqual({ use: 'n1', decidedAt: expect.any(String) });
    });

    it('sends the batches waiting as soon as the first is answered, not after its Effects are applied', async () => {
      // The API server does not answer the first batch's patches.
      const stalled: ClusterWriter = {
        patchPodMetadata: () => new Promise<void>(() => undefined),
        bindPod: async () => undefined,
        recordEvent: async () => undefined,
        patchNodeMetadata: async () => undefined,
        evictPod: async () => ({ kind: 'refused', message: 'not in this test', disruptionBudget: false }),
      };
      const t = setup('n1', { maxPods: 1, maxBatches: 3, writer: stalled }, true);
      await queue(t, ['a', 'b', 'c']);
      expect(names(t)).toEqual(['a']);
      await t.answer(0);
      expect(names(t)).toEqual(['a', 'b', 'c']);
    });

    it('starts again after a failed batch (a timeout): one batch in flight until one is answered', async () => {
      const t = setup('n1', { maxPods: 1, maxBatches: 2 }, true);
      await queue(t, ['warm']);
      await t.answer(0);
      await queue(t, ['a', 'b', 'c', 'd']);
      expect(names(t)).toEqual(['warm', 'a', 'b']);
      // a's batch timed out: b is still out, so c waits though a slot of two is free.
      await t.answer(1, 'timeout');
      expect(names(t)).toEqual(['warm', 'a', 'b']);
      expect(await t.ahead.lookup(t.current('a'), ['n1'])).toEqual({ live: true, note: expect.stringContaining('the batch deciding this pod ahead failed') });
      // b answered: warm again, c and d go together.
      await t.answer(2);
      expect(names(t)).toEqual(['warm', 'a', 'b', 'c', 'd']);
    });

    it('starts again after coldAfterMs without an answer (the environment may have been reclaimed), not before', async () => {
      const t = setup('n1', { maxPods: 1, maxBatches: 2, coldAfterMs: 60_000 }, true);
      await queue(t, ['warm']);
      await t.answer(0);
      t.advance(60_000);
      await queue(t, ['a', 'b']);
      // Still warm at the limit: two batches at once.
      expect(names(t)).toEqual(['warm', 'a', 'b']);
      await t.answer(1);
      await t.answer(2);
      t.advance(60_001);
      await queue(t, ['c', 'd', 'e']);
      expect(names(t)).toEqual(['warm', 'a', 'b', 'c']);
      await t.answer(3);
      expect(names(t)).toEqual(['warm', 'a', 'b', 'c', 'd', 'e']);
    });
  });
});
