/**
 * Decide-ahead end to end (docs/relay.md, "Deciding ahead"): fake Kubernetes API server + relay + the local control
 * plane. A burst of pods created at once is decided in batches before kube-scheduler (played by this test) asks; its
 * filters are answered from those decisions and every pod is bound. A pod whose decided node kube-scheduler filtered
 * out is placed elsewhere by the live path, and its scheduler log says why.
 */
import { DECIDED_AHEAD_ANNOTATION, markedDecision } from '../../../lib/wire/decidedAhead';
import { useRelayOnLocalControlPlane } from '../../support/relayRig';
import { eventually, gpuNode, postJson, recordingLogger } from './harness';

const TOKEN = 'ahead-control-plane-token';
const cards = (prefix: string) =>
  JSON.stringify(
    [0, 1].map((index) => ({ id: `GPU-${prefix}-${index}`, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index, mode: 'hami-core' })),
  );

let logger: ReturnType<typeof recordingLogger>;

function pendingPod(name: string) {
  return {
    metadata: { name, namespace: 'team-a' },
    spec: {
      schedulerName: 'hami-scheduler',
      containers: [{ name: 'main', image: 'cuda:12', resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '3000', 'nvidia.com/gpucores': '30' } } }],
    },
    status: { phase: 'Pending' },
  };
}

/** The pod as kube-scheduler's informer holds it: no kind/apiVersion. */
function schedulerView(pod: Record<string, unknown>): Record<string, unknown> {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = pod;
  return rest;
}

const annotationsOf = (name: string) => (rig.kube.get('Pod', 'team-a', name)?.metadata?.annotations ?? {}) as Record<string, string>;

async function usage(node: string): Promise<{ used: number; usedmem: number }[]> {
  const res = await fetch(`${rig.local.url}/api/v1/nodes/${node}/devices`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return ((await res.json()) as { devices: { used: number; usedmem: number }[] }).devices;
}

const AHEAD = { HAMI_DECIDE_AHEAD: 'true', RELAY_AHEAD_WINDOW_MS: '20' };

const rig = useRelayOnLocalControlPlane({
  per: 'test',
  token: TOKEN,
  prepare: ({ kube }) => {
    kube.create('Node', gpuNode('node-1', cards('a')));
    kube.create('Node', gpuNode('node-2', cards('b')));
  },
  relay: () => {
    logger = recordingLogger();
    return { logger, env: AHEAD };
  },
  registered: ['node-1', 'node-2'],
});

describe('decide-ahead through the relay', () => {
  it('decides a burst of pods before kube-scheduler asks, answers every filter from those decisions, and binds them all', async () => {
    // 4 cards of 8,192 MiB hold two 3,000 MiB pods each: a burst of 8 fills them exactly.
    const names = Array.from({ length: 8 }, (_, i) => `burst-${i}`);
    const created = names.map((name) => rig.kube.create('Pod', pendingPod(name)));
    await eventually(() => {
      for (const name of names) expect(markedDecision(annotationsOf(name))).toBeDefined();
    }, 15000);

    for (const pod of created) {
      const name = pod.metadata?.name as string;
      const filter = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: schedulerView(pod), Nodes: null, NodeNames: ['node-1', 'node-2'] });
      expect(filter.body.Error ?? '').toBe('');
      expect(filter.body.NodeNames).toEqual([markedDecision(annotationsOf(name))!.node]);
      const bind = await postJson(`${rig.relay.extenderUrl}/bind`, { PodName: name, PodNamespace: 'team-a', PodUID: pod.metadata?.uid, Node: (filter.body.NodeNames as string[])[0] });
      expect(bind.body).toEqual({ Error: '' });
      // HAMi's device plugin allocates and reports it, which ends the node lock for the next bind there.
      rig.kube.patch('Pod', 'team-a', name, { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
    }
    // Every filter was answered ahead: none reached the control plane's /filter.
    expect(logger.lines.filter((l) => l.message === 'FilterAnsweredAhead')).toHaveLength(8);
    expect(logger.lines.filter((l) => l.message === 'FilterRelayed')).toHaveLength(0);
    expect(rig.relay.ahead!.stats()).toEqual({ answeredAhead: 8, asked: 8 });
    for (const name of names) expect((rig.kube.get('Pod', 'team-a', name)?.spec as { nodeName?: string }).nodeName).toMatch(/^node-[12]$/);
    await eventually(async () => {
      for (const node of ['node-1', 'node-2']) for (const card of await usage(node)) expect(card).toMatchObject({ used: 2, usedmem: 6000 });
    }, 10000);
    // Each pod's scheduler log: the attempt made ahead, and when kube-scheduler's filter used it (told with the bind).
    const res = await fetch(`${rig.local.url}/api/v1/namespaces/team-a/pods/burst-0/schedulerlog`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const log = (await res.json()) as { ahead?: { kind: string }; bind: { status: string; filterUsedAhead?: string } };
    expect(log.ahead).toEqual({ kind: 'decided' });
    expect(log.bind.status).toBe('passed');
    expect(Date.parse(log.bind.filterUsedAhead ?? '')).not.toBeNaN();
  });

  it('a filter that comes while its pod’s batch is still on its way waits for it and is answered from the decision', async () => {
    const pod = rig.kube.create('Pod', pendingPod('early'));
    // kube-scheduler pops the pod at once: the relay's watch has just seen it, its batch window is still open.
    const filter = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: schedulerView(pod), Nodes: null, NodeNames: ['node-1', 'node-2'] });
    expect(filter.body.Error ?? '').toBe('');
    expect(filter.body.NodeNames).toEqual([markedDecision(annotationsOf('early'))!.node]);
    expect(logger.lines.filter((l) => l.message === 'FilterAnsweredAhead')).toHaveLength(1);
    expect(logger.lines.filter((l) => l.message === 'FilterRelayed')).toHaveLength(0);
  });

  it('with two replicas, each pod is claimed and decided once, and either replica answers its filter from that decision', async () => {
    const second = await rig.startRelay({ logger: recordingLogger(), env: AHEAD });
    try {
      const names = Array.from({ length: 4 }, (_, i) => `pair-${i}`);
      const created = names.map((name) => rig.kube.create('Pod', pendingPod(name)));
      await eventually(() => {
        for (const name of names) expect(markedDecision(annotationsOf(name))).toBeDefined();
      }, 15000);
      // Both replicas saw every pod; each decision was written once (the claim's precondition let one replica decide it).
      const decisionPatches = rig.kube.writes().filter((w) => w.method === 'PATCH' && JSON.stringify(w.body).includes('hami.io/decided-ahead-pod'));
      expect(decisionPatches.map((w) => w.path).sort()).toEqual(names.map((name) => `/api/v1/namespaces/team-a/pods/${name}`).sort());
      for (const [i, pod] of created.entries()) {
        const to = i % 2 === 0 ? rig.relay : second;
        const filter = await postJson(`${to.extenderUrl}/filter`, { Pod: schedulerView(pod), Nodes: null, NodeNames: ['node-1', 'node-2'] });
        expect(filter.body.NodeNames).toEqual([markedDecision(annotationsOf(pod.metadata?.name as string))!.node]);
      }
      expect(rig.relay.ahead!.stats().answeredAhead + second.ahead!.stats().answeredAhead).toBe(4);
      // One booking per pod: 4 pods of 3,000 MiB in all.
      await eventually(async () => {
        const used = [...(await usage('node-1')), ...(await usage('node-2'))].reduce((n, c) => n + c.usedmem, 0);
        expect(used).toBe(12000);
      }, 10000);
    } finally {
      await second.close();
    }
  });

  it('a filter for a pod another replica claimed and has not decided yet is answered “try again”, not decided live over it', async () => {
    const second = await rig.startRelay({ logger: recordingLogger(), env: { ...AHEAD, RELAY_AHEAD_WAIT_MS: '100' } });
    try {
      // Claimed by a replica whose batch is still on its way.
      const pod = rig.kube.create('Pod', { ...pendingPod('claimed-elsewhere'), metadata: { name: 'claimed-elsewhere', namespace: 'team-a', annotations: { [DECIDED_AHEAD_ANNOTATION]: 'claimed' } } });
      const filter = await postJson(`${second.extenderUrl}/filter`, { Pod: schedulerView(pod), Nodes: null, NodeNames: ['node-1', 'node-2'] });
      expect(filter.body.NodeNames).toBeNull();
      expect(filter.body.Error).toContain('being decided ahead by another relay replica');
      expect(annotationsOf('claimed-elsewhere')['hami.io/vgpu-node']).toBeUndefined();
    } finally {
      await second.close();
    }
  });

  it('a pod whose decided node kube-scheduler filtered out is placed elsewhere live, and its scheduler log says why', async () => {
    const pod = rig.kube.create('Pod', pendingPod('tainted'));
    await eventually(() => expect(markedDecision(annotationsOf('tainted'))).toBeDefined(), 15000);
    const decided = markedDecision(annotationsOf('tainted'))!.node;
    const other = decided === 'node-1' ? 'node-2' : 'node-1';
    // A taint added to the decided node since: kube-scheduler's own filter leaves it out of NodeNames.
    const filter = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: schedulerView(pod), Nodes: null, NodeNames: [other] });
    expect(filter.body.NodeNames).toEqual([other]);
    expect(annotationsOf('tainted')['hami.io/vgpu-node']).toBe(other);
    // The mark no longer names the pod's booking: no replica uses it.
    expect(markedDecision(annotationsOf('tainted'))).toBeUndefined();
    expect(annotationsOf('tainted')[DECIDED_AHEAD_ANNOTATION]).toMatch(new RegExp(`^${decided}@`));

    const res = await fetch(`${rig.local.url}/api/v1/namespaces/team-a/pods/tainted/schedulerlog?history=true`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const log = (await res.json()) as { ahead?: { kind: string; reason?: string }; filter: { status: string }; history: { ahead?: { kind: string } }[] };
    expect(log.filter.status).toBe('passed');
    expect(log.ahead?.kind).toBe('notUsed');
    expect(log.ahead?.reason).toContain(`node ${decided} is not among the 1 nodes kube-scheduler sent`);
    expect(log.history.map((h) => h.ahead?.kind)).toEqual(['decided']);
    // The earlier booking was given back: only the live one counts.
    await eventually(async () => {
      expect((await usage(decided)).reduce((n, c) => n + c.used, 0)).toBe(0);
      expect((await usage(other)).reduce((n, c) => n + c.used, 0)).toBe(1);
    }, 10000);
  });
});
