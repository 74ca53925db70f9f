import { InMemoryPods, type HeldPod } from '../../../lib/relay/inMemoryPods';

const pod = (name: string, annotations: Record<string, string> = {}): HeldPod => ({
  metadata: { name, namespace: 'batch', uid: `uid-${name}`, resourceVersion: '1', annotations },
  spec: { schedulerName: 'hami-scheduler' },
});

function held() {
  const forwarded: HeldPod[] = [];
  const seen: string[] = [];
  const pods = new InMemoryPods((p) => {
    forwarded.push(p);
  });
  pods.informers.push({ observe: (type, obj) => seen.push(`${type} ${(obj as HeldPod).metadata.resourceVersion}`) });
  return { pods, forwarded, seen };
}

describe('pods held in memory for the relay run in one process (demo, bench)', () => {
  it('claims a pod only at the resourceVersion the claimer saw, as the API server does a conditional patch', async () => {
    const { pods } = held();
    pods.create(pod('a'));
    expect(await pods.claim({ namespace: 'batch', name: 'a', uid: 'uid-a', resourceVersion: '1' }, { 'hami.io/decided-ahead': 'claimed' })).toBe('nudged');
    expect(pods.get('batch', 'a')?.metadata).toEqual(expect.objectContaining({ resourceVersion: '2', annotations: { 'hami.io/decided-ahead': 'claimed' } }));
    // Another replica's claim, made on what it saw before: refused.
    expect(await pods.claim({ namespace: 'batch', name: 'a', uid: 'uid-a', resourceVersion: '1' }, { 'hami.io/decided-ahead': 'claimed' })).toBe('changed');
    expect(await pods.claim({ namespace: 'batch', name: 'a', uid: 'uid-other', resourceVersion: '2' }, { 'hami.io/decided-ahead': 'claimed' })).toBe('gone');
    expect(await pods.claim({ namespace: 'batch', name: 'b', uid: 'uid-b', resourceVersion: '1' }, { 'hami.io/decided-ahead': 'claimed' })).toBe('gone');
  });

  it('shows every change to the informers and forwards a pod to the control plane once the scheduler annotated it', async () => {
    const { pods, forwarded, seen } = held();
    pods.create(pod('a'));
    await pods.patch('batch', 'a', { 'hami.io/decided-ahead': 'claimed' });
    expect(forwarded).toEqual([]);
    await pods.patch('batch', 'a', { 'hami.io/vgpu-node': 'node1', 'hami.io/decided-ahead': null });
    expect(forwarded.map((p) => p.metadata.annotations)).toEqual([{ 'hami.io/vgpu-node': 'node1' }]);
    pods.bound('batch', 'a', 'node1');
    expect(seen).toEqual(['ADDED 1', 'MODIFIED 2', 'MODIFIED 3', 'MODIFIED 3']);
  });

  it("writes the relay's annotation patches to the pods and hands Events to the caller; evictions are refused", async () => {
    const events: unknown[] = [];
    const { pods } = held();
    pods.create(pod('a'));
    const writer = pods.writer(async (event) => {
      events.push(event);
    });
    await writer.patchPodMetadata({ kind: 'PatchPodAnnotations', namespace: 'batch', name: 'a', uid: 'uid-a', annotations: { 'hami.io/vgpu-node': 'node2' } });
    expect(pods.get('batch', 'a')?.metadata.annotations).toEqual({ 'hami.io/vgpu-node': 'node2' });
    const event = { kind: 'RecordEvent', namespace: 'batch', name: 'a', uid: 'uid-a', type: 'Normal', reason: 'FilteringSucceed', message: 'm' } as const;
    await writer.recordEvent(event);
    expect(events).toEqual([event]);
    const eviction = { kind: 'EvictPod', namespace: 'batch', name: 'a', uid: 'uid-a', node: 'node2', preemptor: { namespace: 'batch', name: 'b', uid: 'uid-b' } } as const;
    expect(await writer.evictPod(eviction)).toEqual(expect.objectContaining({ kind: 'refused' }));
    expect(pods.get('batch', 'a')).toBeDefined();
  });
});
