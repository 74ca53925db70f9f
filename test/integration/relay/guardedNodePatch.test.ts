/**
 * The guarded Node patch (docs/api.md §3, `PatchNodeAnnotations.ifAnnotations`; docs/locks.md, "The mirror follows the
 * lock") through the relay's real writer against the fake API server: the ended lock's annotation is deleted only while
 * the Node still names that lock, so a late or repeated clear never deletes the next holder's value.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { EventCorrelator } from '../../../lib/relay/eventCorrelator';
import { createKubeWriter } from '../../../lib/relay/kubeWriter';
import type { ClusterWriter } from '../../../lib/relay/effects';
import { startFakeKube, type FakeKube } from '../../support/fakeKube';
import { gpuNode } from './harness';

const LOCK = 'hami.io/mutex.lock';
const first = '2026-11-28T10:00:00Z,team-a,first';
const next = '2026-11-28T10:00:01Z,team-a,next';

let kube: FakeKube;
let writer: ClusterWriter;

beforeAll(async () => {
  kube = await startFakeKube();
  writer = createKubeWriter(kube.kubeConfig().makeApiClient(CoreV1Api), new EventCorrelator('hami-scheduler'));
});

afterAll(async () => {
  await kube.close();
});

const lockOn = (node: string) => (kube.get('Node', '', node)?.metadata?.annotations as Record<string, string> | undefined)?.[LOCK];
const clear = (node: string, value: string) => writer.patchNodeMetadata({ kind: 'PatchNodeAnnotations', name: node, annotations: { [LOCK]: null }, ifAnnotations: { [LOCK]: value } });

describe('a guarded Node patch', () => {
  it('deletes the lock annotation while it names the ended lock', async () => {
    kube.create('Node', gpuNode('guard-1'));
    kube.patch('Node', '', 'guard-1', { metadata: { annotations: { [LOCK]: first } } });
    await clear('guard-1', first);
    expect(lockOn('guard-1')).toBeUndefined();
    // Again (a resent answer, another replica): nothing to do, no error.
    await clear('guard-1', first);
    expect(lockOn('guard-1')).toBeUndefined();
  });

  it('leaves the next holder’s value alone, without writing the Node', async () => {
    kube.create('Node', gpuNode('guard-2'));
    kube.patch('Node', '', 'guard-2', { metadata: { annotations: { [LOCK]: next } } });
    const writes = kube.writes().length;
    await clear('guard-2', first);
    expect(lockOn('guard-2')).toBe(next);
    expect(kube.writes().length).toBe(writes);
  });

  it('reads again after a conflict (the Node changed between its read and its write), and clears what still names the lock', async () => {
    kube.create('Node', gpuNode('guard-3'));
    kube.patch('Node', '', 'guard-3', { metadata: { annotations: { [LOCK]: first } } });
    kube.failNext('PATCH', /\/nodes\/guard-3$/, 409);
    const patches = () => kube.writes().filter((w) => w.method === 'PATCH' && w.path.endsWith('/nodes/guard-3')).length;
    const before = patches();
    await clear('guard-3', first);
    expect(lockOn('guard-3')).toBeUndefined();
    expect(patches() - before).toBe(2);
  });

  it('finds nothing to clear on a Node that is gone', async () => {
    await expect(clear('never-there', first)).resolves.toBeUndefined();
  });
});
