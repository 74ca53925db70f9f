/**
 * Taking over a live cluster of 1,000 nodes x 8 cards with 40,000 running pods, forwarded through
 * /cluster/events as the relay's first list does (nodes, then pods sorted by node, in batches): nothing is
 * rejected, no item grows with the cluster, the ledger shows the right usage, and new pods are placed.
 */
import { card, gpuNode, gpuPod } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

const NODES = 1000;
const CARDS = 8;
const PODS_PER_CARD = 5;
const BATCH = 500;

const { api } = useControlPlane({ per: 'suite' });

function runningPod(node: string, c: number, k: number) {
  const pod = gpuPod(`run-${node}-${c}-${k}`, [{ name: 'main', gpu: 1, mem: 8000, cores: 10 }], { namespace: 'prod' });
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    ...pod,
    metadata: {
      ...pod.metadata,
      annotations: { 'hami.io/vgpu-node': node, 'hami.io/vgpu-devices-allocated': `GPU-${node}-${c},NVIDIA,8000,10:;`, 'hami.io/bind-phase': 'success' },
    },
    spec: { ...pod.spec, nodeName: node },
    status: { phase: 'Running' },
  };
}

it(
  'takes 40,000 running pods on 1,000 nodes through /cluster/events, then places new pods',
  async () => {
    const names = Array.from({ length: NODES }, (_, i) => `gpu-${String(i).padStart(4, '0')}`);
    const events: { type: string; object: unknown }[] = names.map((name) => ({
      type: 'ADDED',
      object: gpuNode(name, Array.from({ length: CARDS }, (_, c) => card(`GPU-${name}-${c}`, { devmem: 81920 }))),
    }));
    for (const name of names) for (let c = 0; c < CARDS; c++) for (let k = 0; k < PODS_PER_CARD; k++) events.push({ type: 'ADDED', object: runningPod(name, c, k) });

    for (let i = 0; i < events.length; i += BATCH) {
      const res = await api.events(events.slice(i, i + BATCH));
      expect(res.status).toBe(200);
      expect(res.json.rejected).toEqual([]);
      expect(res.json.accepted).toBe(Math.min(BATCH, events.length - i));
    }

    // The ledger holds each node's pods, and nothing else.
    for (const name of [names[0]!, names[499]!, names[999]!]) {
      const view = (await api.devices(name)).json;
      expect(view.registered).toBe(true);
      for (const device of view.devices) expect(device).toMatchObject({ used: PODS_PER_CARD, usedmem: PODS_PER_CARD * 8000, usedcores: PODS_PER_CARD * 10 });
      expect(view.devices[3].pods).toHaveLength(PODS_PER_CARD);
    }

    // New pods land, on every candidate list kube-scheduler may send.
    for (let i = 0; i < 20; i++) {
      const res = await api.filter(gpuPod(`new-${i}`, [{ name: 'c', gpu: 1, mem: 30000, cores: 40 }]), names);
      expect(res.json.Error).toBe('');
      expect(res.json.NodeNames).toHaveLength(1);
    }
  },
  300_000,
);
