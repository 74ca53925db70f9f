/**
 * HAMi's node lock end to end (docs/locks.md): fake Kubernetes API server + relay + the local control plane, with
 * kube-scheduler played by this test and HAMi's device plugin by a stand-in that, as the real one does, finds the pod
 * it allocates for by the Node's `hami.io/mutex.lock` value, reports the allocation and deletes the annotation.
 */
import { useRelayOnLocalControlPlane } from '../../support/relayRig';
import { eventually, gpuNode, gpuPod, postJson, recordingLogger } from './harness';

const TOKEN = 'lock-e2e-token';
const LOCK = 'hami.io/mutex.lock';
const oneCard = (id: string) => JSON.stringify([{ id, count: 10, devmem: 16384, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: 0, mode: 'hami-core' }]);

const rig = useRelayOnLocalControlPlane({
  per: 'suite',
  token: TOKEN,
  // Binds meeting the lock give up at once (HAMi's behaviour), so the nudge is what brings the pod back.
  env: { HAMI_BIND_LOCK_WAIT_SECONDS: '0' },
  prepare: ({ kube }) => {
    kube.create('Node', gpuNode('node-l', oneCard('GPU-l')));
    kube.create('Node', gpuNode('node-m', oneCard('GPU-m')));
  },
  // Without the relay's bind hand-over: the binds that meet the lock are refused as HAMi's are, and nudged.
  relay: { logger: recordingLogger(), env: { RELAY_BIND_HANDOVER_MS: '0' } },
  registered: ['node-l', 'node-m'],
});

/** kube-scheduler's calls for one pod: filter on the candidates, then bind to the chosen node. */
async function schedule(name: string, candidates: string[]): Promise<{ node: string | undefined; bindError: string }> {
  const pod = rig.kube.get('Pod', 'team-a', name)!;
  const { kind: _kind, apiVersion: _apiVersion, ...asSeen } = pod as Record<string, unknown>;
  const filter = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: asSeen, Nodes: null, NodeNames: candidates });
  const node = (filter.body.NodeNames as string[] | null)?.[0];
  if (node === undefined) return { node, bindError: 'not filtered' };
  const bind = await postJson(`${rig.relay.extenderUrl}/bind`, { PodName: name, PodNamespace: 'team-a', PodUID: pod.metadata?.uid, Node: node });
  return { node, bindError: String(bind.body.Error ?? '') };
}

const lockOn = (node: string): string | undefined => (rig.kube.get('Node', '', node)?.metadata?.annotations as Record<string, string> | undefined)?.[LOCK];

/** HAMi's device plugin on `node`: the pod named by the lock annotation is the one it allocates for. */
function devicePluginAllocates(node: string): string {
  const value = lockOn(node);
  if (value === undefined) throw new Error(`no allocation under way on ${node}`);
  const [, namespace = '', name = ''] = value.split(',');
  rig.kube.patch('Pod', namespace, name, { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
  rig.kube.patch('Node', '', node, { metadata: { annotations: { [LOCK]: null } } });
  return `${namespace}/${name}`;
}

describe('the node lock with the relay and HAMi’s device plugin', () => {
  it('mirrors the lock as HAMi writes it, steers the next pod elsewhere, nudges the pod that met the lock, and binds it once the allocation ends', async () => {
    rig.kube.create('Pod', gpuPod('first'));
    const first = await schedule('first', ['node-l']);
    expect(first).toEqual({ node: 'node-l', bindError: '' });
    // During the allocation the Node carries HAMi's value: <RFC 3339 time>,<namespace>,<pod>.
    expect(lockOn('node-l')).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z,team-a,first$/);

    // A second pod with a choice is passed over to the node nobody is allocating on.
    rig.kube.create('Pod', gpuPod('second'));
    expect(await schedule('second', ['node-l', 'node-m'])).toEqual({ node: 'node-m', bindError: '' });
    const second = devicePluginAllocates('node-m');
    expect(second).toBe('team-a/second');

    // A third pod that fits only the node being allocated meets the lock, with HAMi's text.
    rig.kube.create('Pod', gpuPod('third'));
    const third = await schedule('third', ['node-l']);
    expect(third.node).toBe('node-l');
    expect(third.bindError).toMatch(/^node node-l has been locked within 5m0s: node lock contention$/);

    // The device plugin finds the first pod by the annotation, allocates it and deletes the annotation...
    expect(devicePluginAllocates('node-l')).toBe('team-a/first');
    await eventually(() => expect(lockOn('node-l')).toBeUndefined());
    // ...the lock ends, and the pod that gave up is nudged so kube-scheduler retries it at once.
    await eventually(() => expect((rig.kube.get('Pod', 'team-a', 'third')?.metadata?.annotations as Record<string, string>)['hami.io/requeue']).toBeDefined());
    // Its retry binds.
    expect(await schedule('third', ['node-l'])).toEqual({ node: 'node-l', bindError: '' });
    expect(lockOn('node-l')).toMatch(/,team-a,third$/);
    expect((rig.kube.get('Pod', 'team-a', 'third')?.spec as { nodeName?: string }).nodeName).toBe('node-l');
  });
});
