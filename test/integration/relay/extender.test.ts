/**
 * The extender path over real HTTP: kube-scheduler -> relay -> fake control plane, Effects applied to the
 * fake API server.
 */
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { eventually, gatedDelay, gpuPod, postJson, recordingLogger } from './harness';

let logger: ReturnType<typeof recordingLogger>;
// The answer deadline is this gate: it passes when a test releases it, never because the machine was slow.
let deadline: ReturnType<typeof gatedDelay>;

const rig = useRelayOnFakeControlPlane({
  per: 'test',
  relay: () => {
    logger = recordingLogger();
    deadline = gatedDelay();
    return { logger, env: { RELAY_EXTENDER_DEADLINE_MS: '1500' }, extenderDelay: deadline.delay };
  },
});

function pod(name: string) {
  return rig.kube.create('Pod', gpuPod(name, 'team-a', { annotations: { 'hami.io/stale': 'x' } }));
}

describe('POST /filter', () => {
  it('forwards the args, applies the merge patch and the event, and strips Effects from the answer', async () => {
    // Prepare
    const p = pod('job-0');
    const uid = String(p.metadata?.uid);
    rig.cp.on('POST', '/filter', {
      body: {
        NodeNames: ['node-1'],
        FailedNodes: null,
        Error: '',
        Effects: [
          {
            kind: 'PatchPodAnnotations',
            namespace: 'team-a',
            name: 'job-0',
            uid,
            annotations: { 'hami.io/vgpu-node': 'node-1', 'hami.io/vgpu-devices-to-allocate': 'GPU-0,NVIDIA,3000,0:;', 'hami.io/stale': null },
            labels: { 'hami.io/vgpu-node': 'node-1' },
          },
          { kind: 'RecordEvent', namespace: 'team-a', name: 'job-0', uid, type: 'Normal', reason: 'FilteringSucceed', message: 'find fit node(node-1)' },
        ],
      },
    });
    const args = { Pod: { metadata: { name: 'job-0', namespace: 'team-a', uid } }, Nodes: null, NodeNames: ['node-1', 'node-2'] };

    // Act
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, args);

    // Assess
    expect(answer).toEqual({ status: 200, body: { NodeNames: ['node-1'], FailedNodes: null, Error: '' } });
    // The control plane gets the pod as the cluster holds it (without managedFields), the rest of the args as sent.
    const clusterPod = { ...p, metadata: { ...p.metadata, managedFields: undefined } };
    delete clusterPod.metadata.managedFields;
    expect(rig.cp.callsTo('/filter')).toEqual([expect.objectContaining({ body: { ...args, Pod: clusterPod }, authorization: 'Bearer cp-secret-token' })]);
    const patched = rig.kube.get('Pod', 'team-a', 'job-0');
    expect(patched?.metadata?.annotations).toEqual({ 'hami.io/vgpu-node': 'node-1', 'hami.io/vgpu-devices-to-allocate': 'GPU-0,NVIDIA,3000,0:;' });
    expect(patched?.metadata?.labels).toEqual({ 'hami.io/vgpu-node': 'node-1' });
    const patch = rig.kube.writes().find((w) => w.method === 'PATCH' && w.path === '/api/v1/namespaces/team-a/pods/job-0');
    expect(patch?.contentType).toBe('application/merge-patch+json');
    expect(patch?.body).toEqual({
      metadata: {
        // The uid is the patch's precondition.
        uid,
        annotations: { 'hami.io/vgpu-node': 'node-1', 'hami.io/vgpu-devices-to-allocate': 'GPU-0,NVIDIA,3000,0:;', 'hami.io/stale': null },
        labels: { 'hami.io/vgpu-node': 'node-1' },
      },
    });
    expect(rig.kube.list('Event')).toEqual([
      expect.objectContaining({
        involvedObject: expect.objectContaining({ kind: 'Pod', namespace: 'team-a', name: 'job-0', uid }),
        reason: 'FilteringSucceed',
        message: 'find fit node(node-1)',
        type: 'Normal',
        count: 1,
        source: { component: 'hami-scheduler' },
      }),
    ]);
  });

  it('sends the journal position of its last forwarded events, and applies the Warning events the control plane returns for them', async () => {
    const p = pod('job-1');
    const uid = String(p.metadata?.uid);
    rig.cp.on('POST', '/cluster/events', (call) => ({
      body: {
        accepted: (call.body as { events: unknown[] }).events.length,
        rejected: [],
        viewSeq: 41,
        Effects: [{ kind: 'RecordEvent', namespace: 'team-a', name: 'job-1', uid, type: 'Warning', reason: 'SchedulerAnnotationsChanged', message: 'changed after placement' }],
      },
    }));
    rig.cp.on('POST', '/filter', { body: { NodeNames: ['node-1'], FailedNodes: null, Error: '' } });
    rig.kube.create('Node', { metadata: { name: 'node-9', annotations: { 'hami.io/node-nvidia-register': '[]' } } });
    await eventually(() => expect(rig.relay.forwarder.viewSeq).toBe(41));
    await eventually(() => expect(rig.kube.list('Event').map((e) => e.reason)).toContain('SchedulerAnnotationsChanged'));
    await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: { metadata: { name: 'job-1', namespace: 'team-a', uid } }, Nodes: null, NodeNames: ['node-1'] });
    expect(rig.cp.callsTo('/filter').at(-1)?.headers['x-hami-min-view-seq']).toBe('41');
  });

  it("sends the cluster's preemption mode (the chart's preemption.mode) when it is not on, and nothing when it is", async () => {
    const p = pod('job-p');
    const args = { Pod: { metadata: { name: 'job-p', namespace: 'team-a', uid: String(p.metadata?.uid) } }, Nodes: null, NodeNames: ['node-1'] };
    rig.cp.on('POST', '/filter', { body: { NodeNames: null, FailedNodes: { 'node-1': 'no' }, Error: '' } });
    const dryRun = await rig.startRelay({ logger: recordingLogger(), env: { HAMI_PREEMPTION: 'log' } });
    try {
      await postJson(`${dryRun.extenderUrl}/filter`, args);
      expect(rig.cp.callsTo('/filter').at(-1)?.headers['x-hami-preemption']).toBe('log');
    } finally {
      await dryRun.close();
    }
    await postJson(`${rig.relay.extenderUrl}/filter`, args);
    expect(rig.cp.callsTo('/filter').at(-1)?.headers).not.toHaveProperty('x-hami-preemption');
  });

  it('answers Error (HTTP 200) when a required patch fails, and still never hangs', async () => {
    // Prepare: the pod is deleted while the control plane decides, so the patch 404s
    const p = pod('ghost');
    rig.cp.on('POST', '/filter', () => {
      rig.kube.remove('Pod', 'team-a', 'ghost');
      return { body: { NodeNames: ['node-1'], Effects: [{ kind: 'PatchPodAnnotations', namespace: 'team-a', name: 'ghost', uid: String(p.metadata?.uid), annotations: { a: 'b' } }] } };
    });

    // Act
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: p, NodeNames: ['node-1'] });

    // Assess
    expect(answer.status).toBe(200);
    expect(answer.body.Error).toMatch(/patch pod team-a\/ghost: pods "ghost" not found/);
  });

  it('never patches a pod recreated under the same name with the decision made for its predecessor', async () => {
    // Prepare: while the control plane decides for the first pod, it is deleted and created again
    const first = pod('reborn');
    let second: Record<string, unknown> & { metadata?: Record<string, unknown> } = {};
    rig.cp.on('POST', '/filter', () => {
      rig.kube.remove('Pod', 'team-a', 'reborn');
      second = rig.kube.create('Pod', gpuPod('reborn'));
      return {
        body: {
          NodeNames: ['node-1'],
          Effects: [{ kind: 'PatchPodAnnotations', namespace: 'team-a', name: 'reborn', uid: String(first.metadata?.uid), annotations: { 'hami.io/vgpu-node': 'node-1' } }],
        },
      };
    });

    // Act
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: first, NodeNames: ['node-1'] });

    // Assess: the patch named the first pod's uid, the API server refused it, the new pod is untouched
    expect(answer.body.Error).toMatch(/patch pod team-a\/reborn: .*Precondition failed: UID in precondition/);
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    expect(rig.kube.get('Pod', 'team-a', 'reborn')?.metadata?.annotations).toEqual({});
  });

  it('answers a clear Error for a body that is not JSON, without calling the control plane', async () => {
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, '{not json');
    expect(answer.status).toBe(200);
    expect(answer.body.Error).toMatch(/not valid JSON/);
    expect(rig.cp.callsTo('/filter')).toHaveLength(0);
  });

  it('answers Error naming the configured deadline when the control plane does not answer', async () => {
    // Prepare
    rig.cp.on('POST', '/filter', 'hang');

    // Act: the request waits on the hanging control plane until the deadline passes
    const answering = postJson(`${rig.relay.extenderUrl}/filter`, { Pod: pod('x'), NodeNames: ['node-1'] });
    await rig.cp.arrived('/filter');
    expect(deadline.requested).toEqual([1500]);
    deadline.release();
    const answer = await answering;

    // Assess
    expect(answer).toEqual({ status: 200, body: { NodeNames: null, FailedNodes: null, Error: 'relay could not answer within 1500ms (control plane slow or unreachable)' } });
    expect(logger.lines.map((l) => l.message)).toContain('FilterDeadlineExceeded');
  });

  it('answers without waiting for the deadline when the control plane answers', async () => {
    rig.cp.on('POST', '/filter', { body: { NodeNames: ['node-1'], FailedNodes: null, Error: '' } });
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: pod('x'), NodeNames: ['node-1'] });
    expect(answer.body).toEqual({ NodeNames: ['node-1'], FailedNodes: null, Error: '' });
    // The deadline was armed and is still closed: the answer did not depend on it.
    expect(deadline.requested).toEqual([1500]);
  });

  it('answers Error at once when the control plane is unreachable', async () => {
    const x = pod('x');
    await rig.cp.close();
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: x, NodeNames: ['node-1'] });
    expect(answer.status).toBe(200);
    // The connection error itself, not the deadline fallback: the relay did not wait.
    expect(answer.body.Error).toMatch(/control plane unreachable for \/filter/);
  });

  it('answers an explained Error for a malformed answer, and applies none of its Effects', async () => {
    // Prepare: NodeNames that is not a list of names, with a booking patch beside it.
    const p = pod('job-m');
    const uid = String(p.metadata?.uid);
    const patch = { kind: 'PatchPodAnnotations', namespace: 'team-a', name: 'job-m', uid, annotations: { 'hami.io/vgpu-node': 'node-1' } };
    rig.cp.on('POST', '/filter', { body: { NodeNames: 'node-1', FailedNodes: null, Error: '', Effects: [patch] } });

    // Act
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: p, NodeNames: ['node-1'] });

    // Assess
    expect(answer).toEqual({ status: 200, body: { NodeNames: null, FailedNodes: null, Error: expect.stringMatching(/^control plane sent an invalid ExtenderFilterResult: NodeNames: /) } });
    expect(rig.kube.get('Pod', 'team-a', 'job-m')?.metadata?.annotations).not.toHaveProperty('hami.io/vgpu-node');
  });

  it('reads answer keys in any letter case, as kube-scheduler does, and passes them on under their own names', async () => {
    rig.cp.on('POST', '/filter', { body: { nodenames: ['node-1'], failedNODES: { 'node-2': 'x' }, error: '' } });
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: pod('job-c'), NodeNames: ['node-1', 'node-2'] });
    expect(answer.body).toEqual({ NodeNames: ['node-1'], FailedNodes: { 'node-2': 'x' }, Error: '' });
  });

  it('aggregates a repeated event like client-go: one Event, count 2, updated by PATCH', async () => {
    // Prepare
    const p = pod('job-1');
    const event = { kind: 'RecordEvent', namespace: 'team-a', name: 'job-1', uid: String(p.metadata?.uid), type: 'Warning', reason: 'FilteringFailed', message: 'no available node, 2 nodes do not meet' };
    rig.cp.on('POST', '/filter', { body: { NodeNames: [], FailedNodes: { 'node-1': 'x', 'node-2': 'y' }, Effects: [event] } });
    const args = { Pod: p, NodeNames: ['node-1', 'node-2'] };

    // Act
    await postJson(`${rig.relay.extenderUrl}/filter`, args);
    await postJson(`${rig.relay.extenderUrl}/filter`, args);

    // Assess
    const events = rig.kube.list('Event');
    expect(events).toHaveLength(1);
    expect(events[0]).toEqual(expect.objectContaining({ count: 2, reason: 'FilteringFailed', type: 'Warning' }));
    const eventWrites = rig.kube.writes().filter((w) => w.path.includes('/events'));
    expect(eventWrites.map((w) => w.method)).toEqual(['POST', 'PATCH']);
    expect(eventWrites[1]?.body).toEqual(expect.objectContaining({ count: 2, message: 'no available node, 2 nodes do not meet' }));
  });
});

describe('POST /bind', () => {
  const bindArgs = (name: string, node: string, uid: string) => ({ PodName: name, PodNamespace: 'team-a', PodUID: uid, Node: node });

  function bindAnswer(name: string, uid: string, node: string) {
    return {
      body: {
        Error: '',
        Effects: [
          { kind: 'PatchPodAnnotations', namespace: 'team-a', name, uid, annotations: { 'hami.io/bind-phase': 'allocating', 'hami.io/bind-time': '1746093600' } },
          { kind: 'BindPod', namespace: 'team-a', name, uid, node },
        ],
      },
    };
  }

  function outcomeAnswer() {
    rig.cp.on('POST', '/bind/outcome', (call) => {
      const b = call.body as { PodName: string; PodUID: string; Node: string; Error: string };
      const failed = b.Error !== '';
      return {
        body: {
          Effects: [
            {
              kind: 'RecordEvent',
              namespace: 'team-a',
              name: b.PodName,
              uid: b.PodUID,
              type: failed ? 'Warning' : 'Normal',
              reason: failed ? 'BindingFailed' : 'BindingSucceed',
              message: failed ? b.Error : `Successfully binding node [${b.Node}] to team-a/${b.PodName}`,
            },
          ],
        },
      };
    });
  }

  it('applies patch then Binding (201), reports the outcome, and records its event', async () => {
    // Prepare
    const uid = String(pod('job-2').metadata?.uid);
    rig.cp.on('POST', '/bind', bindAnswer('job-2', uid, 'node-1'));
    outcomeAnswer();

    // Act
    const answer = await postJson(`${rig.relay.extenderUrl}/bind`, bindArgs('job-2', 'node-1', uid));

    // Assess
    expect(answer).toEqual({ status: 200, body: { Error: '' } });
    const bound = rig.kube.get('Pod', 'team-a', 'job-2');
    expect((bound?.spec as { nodeName?: string }).nodeName).toBe('node-1');
    expect(bound?.metadata?.annotations).toEqual(expect.objectContaining({ 'hami.io/bind-phase': 'allocating' }));
    const writes = rig.kube.writes().map((w) => `${w.method} ${w.path}`);
    expect(writes.indexOf('PATCH /api/v1/namespaces/team-a/pods/job-2')).toBeLessThan(writes.indexOf('POST /api/v1/namespaces/team-a/pods/job-2/binding'));
    const binding = rig.kube.writes().find((w) => w.path.endsWith('/binding'));
    expect(binding?.body).toEqual(expect.objectContaining({ kind: 'Binding', metadata: expect.objectContaining({ name: 'job-2', uid }), target: expect.objectContaining({ kind: 'Node', name: 'node-1' }) }));
    expect(rig.cp.callsTo('/bind/outcome').map((c) => c.body)).toEqual([{ PodUID: uid, PodNamespace: 'team-a', PodName: 'job-2', Node: 'node-1', Error: '' }]);
    expect(rig.kube.list('Event').map((e) => e.reason)).toEqual(['BindingSucceed']);
  });

  it('counts a 409 for a pod already on the same node as success', async () => {
    // A bind that went through while the control plane answered (a retried call): the Binding meets 409.
    const uid = String(pod('job-3').metadata?.uid);
    rig.cp.on('POST', '/bind', () => {
      rig.kube.patch('Pod', 'team-a', 'job-3', { spec: { nodeName: 'node-1' } });
      return bindAnswer('job-3', uid, 'node-1');
    });
    outcomeAnswer();

    const answer = await postJson(`${rig.relay.extenderUrl}/bind`, bindArgs('job-3', 'node-1', uid));

    expect(answer.body).toEqual({ Error: '' });
    expect(rig.cp.callsTo('/bind/outcome').map((c) => (c.body as { Error: string }).Error)).toEqual(['']);
  });

  it('fails on a 409 for a pod on another node, and reports that text as the outcome', async () => {
    const uid = String(pod('job-4').metadata?.uid);
    rig.cp.on('POST', '/bind', () => {
      rig.kube.patch('Pod', 'team-a', 'job-4', { spec: { nodeName: 'node-2' } });
      return bindAnswer('job-4', uid, 'node-1');
    });
    outcomeAnswer();

    const answer = await postJson(`${rig.relay.extenderUrl}/bind`, bindArgs('job-4', 'node-1', uid));

    expect(answer.status).toBe(200);
    expect(answer.body.Error).toMatch(/pod job-4 is already assigned to node "node-2"/);
    const outcome = rig.cp.callsTo('/bind/outcome').map((c) => c.body as { Error: string });
    expect(outcome).toHaveLength(1);
    expect(outcome[0]?.Error).toBe(answer.body.Error);
    expect(rig.kube.list('Event').map((e) => [e.reason, e.message])).toEqual([['BindingFailed', answer.body.Error]]);
  });

  it('applies the BindingFailed event of a refused bind and does not call /bind/outcome', async () => {
    const uid = String(pod('job-5').metadata?.uid);
    const text = 'node node-1 has been locked within 5m0s: node lock contention';
    rig.cp.on('POST', '/bind', {
      body: { Error: text, Effects: [{ kind: 'RecordEvent', namespace: 'team-a', name: 'job-5', uid, type: 'Warning', reason: 'BindingFailed', message: text }] },
    });

    const answer = await postJson(`${rig.relay.extenderUrl}/bind`, bindArgs('job-5', 'node-1', uid));

    expect(answer.body).toEqual({ Error: text });
    expect(rig.cp.callsTo('/bind/outcome')).toHaveLength(0);
    expect(rig.kube.list('Event').map((e) => e.reason)).toEqual(['BindingFailed']);
    expect((rig.kube.get('Pod', 'team-a', 'job-5')?.spec as { nodeName?: string }).nodeName).toBeUndefined();
  });

  it('answers an explained Error for a malformed answer, and neither binds nor reports an outcome', async () => {
    const uid = String(pod('job-7').metadata?.uid);
    rig.cp.on('POST', '/bind', { body: { Error: 42, Effects: [{ kind: 'BindPod', namespace: 'team-a', name: 'job-7', uid, node: 'node-1' }] } });

    const answer = await postJson(`${rig.relay.extenderUrl}/bind`, bindArgs('job-7', 'node-1', uid));

    expect(answer).toEqual({ status: 200, body: { Error: expect.stringMatching(/^control plane sent an invalid ExtenderBindingResult: Error: /) } });
    expect((rig.kube.get('Pod', 'team-a', 'job-7')?.spec as { nodeName?: string }).nodeName).toBeUndefined();
    expect(rig.cp.callsTo('/bind/outcome')).toHaveLength(0);
  });

  it('answers Error naming the configured deadline when /bind hangs, and reports no outcome', async () => {
    rig.cp.on('POST', '/bind', 'hang');
    const answering = postJson(`${rig.relay.extenderUrl}/bind`, bindArgs('job-6', 'node-1', String(pod('job-6').metadata?.uid)));
    await rig.cp.arrived('/bind');
    deadline.release();
    const answer = await answering;
    expect(answer).toEqual({ status: 200, body: { Error: 'relay could not answer within 1500ms (control plane slow or unreachable)' } });
    expect(rig.cp.callsTo('/bind/outcome')).toHaveLength(0);
  });
});

describe('requests are checked against the cluster', () => {
  type Pod = Record<string, unknown> & { metadata?: Record<string, unknown>; spec?: Record<string, unknown> };
  const filterBody = () => rig.cp.callsTo('/filter').at(-1)?.body as { Pod: Pod } | undefined;
  const refusedLines = () => logger.lines.filter((l) => l.message === 'ExtenderRequestRefused');

  it('decides on the cluster\'s pod when the request describes other requests or annotations', async () => {
    // Prepare: the request claims 1 MiB and a forged allocation; the cluster's pod asks for 3000 MiB
    const p = pod('claims') as Pod;
    rig.cp.on('POST', '/filter', { body: { NodeNames: ['node-1'], FailedNodes: null, Error: '' } });
    const forged = structuredClone(p);
    (forged.spec as { containers: { resources: { limits: Record<string, string> } }[] }).containers[0]!.resources.limits['nvidia.com/gpumem'] = '1';
    forged.metadata = { ...forged.metadata, annotations: { 'hami.io/vgpu-devices-allocated': 'GPU-0,NVIDIA,1,0:;' } };

    // Act
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: forged, NodeNames: ['node-1'] });

    // Assess
    expect(answer.body.Error).toBe('');
    const sent = filterBody()?.Pod;
    expect((sent?.spec as { containers: { resources: { limits: Record<string, string> } }[] }).containers[0]?.resources.limits['nvidia.com/gpumem']).toBe('3000');
    expect(sent?.metadata?.annotations).toEqual({ 'hami.io/stale': 'x' });
    expect(logger.lines.find((l) => l.message === 'FilterPodReplaced')?.fields).toEqual([{ pod: 'team-a/claims', differs: ['resources', 'annotations'] }]);
  });

  it.each([
    ['another uid', (p: Pod) => ({ ...p, metadata: { ...p.metadata, uid: 'not-the-pods-uid' } }), /pod team-a\/[\w-]+ in the cluster has uid .+, not not-the-pods-uid/],
    ['no uid', (p: Pod) => ({ ...p, metadata: { ...p.metadata, uid: undefined } }), /must name the pod's namespace, name and uid/],
    ['a pod the cluster does not hold', (p: Pod) => ({ ...p, metadata: { ...p.metadata, name: 'nobody' } }), /pod team-a\/nobody does not exist in the cluster/],
  ])('refuses a filter naming %s, with a reason, a log line and nothing written', async (_label, edit, reason) => {
    const p = pod(`f-${refusedLines().length}`) as Pod;
    const writesBefore = rig.kube.writes().length;

    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: edit(p), NodeNames: ['node-1'] });

    expect(answer.body).toEqual({ NodeNames: null, FailedNodes: null, Error: expect.stringMatching(reason) });
    expect(String(answer.body.Error)).toMatch(/^relay refused the request: /);
    expect(rig.cp.callsTo('/filter')).toHaveLength(0);
    expect(rig.kube.writes().slice(writesBefore)).toEqual([]);
    expect(refusedLines()).toHaveLength(1);
  });

  it('refuses a filter for a pod of another scheduler, whatever the request says its scheduler is', async () => {
    const p = rig.kube.create('Pod', { ...gpuPod('elsewhere'), spec: { ...(gpuPod('elsewhere').spec as object), schedulerName: 'default-scheduler' } }) as Pod;
    const claimed = { ...p, spec: { ...p.spec, schedulerName: 'hami-scheduler' } };

    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: claimed, NodeNames: ['node-1'] });

    expect(answer.body.Error).toBe('relay refused the request: pod team-a/elsewhere is for scheduler "default-scheduler", not "hami-scheduler"');
    expect(rig.cp.callsTo('/filter')).toHaveLength(0);
  });

  it.each([
    ['bound', () => String(rig.kube.create('Pod', gpuPod('b-bound', 'team-a', { nodeName: 'node-2' })).metadata?.uid), 'b-bound', /pod team-a\/b-bound is already bound to node "node-2"/],
    ['unknown', () => 'some-uid', 'b-unknown', /pod team-a\/b-unknown does not exist in the cluster/],
    ['not ours', () => String(rig.kube.create('Pod', { ...gpuPod('b-other'), spec: { ...(gpuPod('b-other').spec as object), schedulerName: 'volcano' } }).metadata?.uid), 'b-other', /is for scheduler "volcano"/],
    ['recreated (another uid)', () => { pod('b-again'); return 'old-uid'; }, 'b-again', /has uid .+, not old-uid/],
  ])('refuses a bind for a pod that is %s, and writes nothing', async (_label, uidOf, name, reason) => {
    const uid = uidOf();
    const writesBefore = rig.kube.writes().length;

    const answer = await postJson(`${rig.relay.extenderUrl}/bind`, { PodName: name, PodNamespace: 'team-a', PodUID: uid, Node: 'node-1' });

    expect(answer.body).toEqual({ Error: expect.stringMatching(reason) });
    expect(rig.cp.callsTo('/bind')).toHaveLength(0);
    expect(rig.cp.callsTo('/bind/outcome')).toHaveLength(0);
    expect(rig.kube.writes().slice(writesBefore)).toEqual([]);
    expect(refusedLines().map((l) => (l.fields[0] as { verb: string }).verb)).toEqual(['bind']);
  });
});

describe('a pod the informers have not seen yet', () => {
  it('is read from the API server, never refused for being new', async () => {
    // Prepare: a relay whose pod informer cannot list (its cache stays empty)
    await rig.relay.close();
    rig.kube.failNext('GET', /^\/api\/v1\/pods$/, 500, 1);
    await rig.restartRelay({ logger, env: { RELAY_EXTENDER_DEADLINE_MS: '1500' }, extenderDelay: deadline.delay, watcherDelay: (_ms, signal) => new Promise((resolve) => signal?.addEventListener('abort', () => resolve())) });
    const p = pod('newborn');
    expect(rig.relay.watcher.cachedObject('Pod', 'team-a', 'newborn')).toBeUndefined();
    rig.cp.on('POST', '/filter', { body: { NodeNames: ['node-1'], FailedNodes: null, Error: '' } });

    // Act
    const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: p, NodeNames: ['node-1'] });

    // Assess
    expect(answer.body).toEqual({ NodeNames: ['node-1'], FailedNodes: null, Error: '' });
    expect(rig.kube.requests.some((r) => r.method === 'GET' && r.path === '/api/v1/namespaces/team-a/pods/newborn')).toBe(true);
  });
});
