/**
 * The user-facing scheduler-log route (TokenReview + SubjectAccessReview), probes, and log hygiene.
 */
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { eventually, gatedDelay, recordingLogger } from './harness';

let logger: ReturnType<typeof recordingLogger>;

const ALICE_TOKEN = 'alice-secret-token-7f3a';
const BOB_TOKEN = 'bob-secret-token-91c2';
const LOG_PATH = '/api/v1/namespaces/team-a/pods/job-0/schedulerlog';

const rig = useRelayOnFakeControlPlane({
  per: 'test',
  prepare: ({ kube, cp }) => {
    kube.addUser(ALICE_TOKEN, { username: 'alice', groups: ['team-a-devs'] });
    kube.addUser(BOB_TOKEN, { username: 'bob' });
    kube.grant({ group: 'team-a-devs', verb: 'get', resource: 'pods', namespace: 'team-a' });
    cp.on('GET', 'schedulerlog', (call) =>
      call.path === LOG_PATH
        ? { body: { status: 'pending', filter: { status: 'passed', summary: 'find fit node(node-1)', nodes: [] }, bind: { status: 'pending', summary: '' } } }
        : { status: 404, body: { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, message: 'no scheduling record for this pod' } },
    );
  },
  relay: () => {
    logger = recordingLogger();
    return { logger };
  },
});

async function getLog(path: string, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${rig.relay.userUrl}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('GET .../pods/{name}/schedulerlog', () => {
  it.each([
    ['no token', undefined, 401, 'Unauthorized'],
    ['an unknown token', 'not-a-real-token', 401, 'Unauthorized'],
    ['a valid token without get pods in the namespace', BOB_TOKEN, 403, 'Forbidden'],
  ])('answers %s with a Kubernetes Status and never reaches the control plane', async (_case, token, code, reason) => {
    const answer = await getLog(LOG_PATH, token);
    expect(answer.status).toBe(code);
    expect(answer.body).toEqual(expect.objectContaining({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason }));
    expect(rig.cp.callsTo(LOG_PATH)).toHaveLength(0);
  });

  it('lets an allowed user through and passes only detail/history on', async () => {
    // Act
    const answer = await getLog(`${LOG_PATH}?detail=true&history=3&token=leak`, ALICE_TOKEN);

    // Assess
    expect(answer).toEqual({ status: 200, body: expect.objectContaining({ status: 'pending', filter: expect.objectContaining({ status: 'passed' }) }) });
    expect(rig.cp.callsTo(LOG_PATH).map((c) => c.query)).toEqual([{ detail: 'true', history: '3' }]);
    expect(rig.cp.callsTo(LOG_PATH)[0]?.authorization).toBe('Bearer cp-secret-token');
    const sar = rig.kube.requests.find((r) => r.path.endsWith('/subjectaccessreviews'));
    expect((sar?.body as { spec: unknown }).spec).toEqual(
      expect.objectContaining({
        user: 'alice',
        groups: ['team-a-devs', 'system:authenticated'],
        resourceAttributes: { namespace: 'team-a', verb: 'get', group: '', resource: 'pods', name: 'job-0' },
      }),
    );
  });

  it('is forbidden in another namespace for the same user', async () => {
    const answer = await getLog('/api/v1/namespaces/team-b/pods/job-0/schedulerlog', ALICE_TOKEN);
    expect(answer.status).toBe(403);
  });

  it("passes the control plane's 404 Status through", async () => {
    const answer = await getLog('/api/v1/namespaces/team-a/pods/unknown/schedulerlog', ALICE_TOKEN);
    expect(answer).toEqual({ status: 404, body: expect.objectContaining({ kind: 'Status', reason: 'NotFound', code: 404 }) });
  });

  it('is not served on the extender listener, and extender verbs are not served on the user listener', async () => {
    const onExtender = await fetch(`${rig.relay.extenderUrl}${LOG_PATH}`, { headers: { authorization: `Bearer ${ALICE_TOKEN}` } });
    const onUser = await fetch(`${rig.relay.userUrl}/filter`, { method: 'POST', body: '{}' });
    expect([onExtender.status, onUser.status]).toEqual([404, 404]);
  });

  it('never writes a bearer token into the logs', async () => {
    logger.lines.length = 0;
    await getLog(LOG_PATH, ALICE_TOKEN);
    await getLog(LOG_PATH, BOB_TOKEN);
    await getLog(LOG_PATH, 'not-a-real-token');
    await rig.cp.close();
    await getLog(LOG_PATH, ALICE_TOKEN);

    const text = logger.text();
    expect(logger.lines.length).toBeGreaterThan(0);
    for (const secret of [ALICE_TOKEN, BOB_TOKEN, 'not-a-real-token', 'cp-secret-token', 'relay-token']) expect(text).not.toContain(secret);
  });
});

describe('probes', () => {
  it('is live at once and ready once informers synced and the control plane answers', async () => {
    expect((await fetch(`${rig.relay.extenderUrl}/healthz`)).status).toBe(200);
    await eventually(async () => expect((await fetch(`${rig.relay.userUrl}/readyz`)).status).toBe(200));
    await rig.cp.close();
    const down = await fetch(`${rig.relay.extenderUrl}/readyz`);
    expect(down.status).toBe(503);
    expect(((await down.json()) as { checks: Record<string, string> }).checks).toEqual({ informers: 'ok', controlPlane: expect.stringMatching(/unreachable/), extender: 'ok' });
  });

  it('is not ready while an informer has not listed yet', async () => {
    // Prepare: a second relay whose node list fails and whose retry waits for the test
    await eventually(async () => expect((await fetch(`${rig.relay.userUrl}/readyz`)).status).toBe(200));
    const gate = gatedDelay();
    rig.kube.failNext('GET', /^\/api\/v1\/nodes$/, 500, 1);
    const second = await rig.startRelay({ watcherDelay: gate.delay });
    try {
      await eventually(() => expect(gate.requested).toHaveLength(1));
      const notReady = await fetch(`${second.extenderUrl}/readyz`);
      expect(notReady.status).toBe(503);
      expect(((await notReady.json()) as { checks: Record<string, string> }).checks.informers).toBe('informers not synced');

      gate.release();
      await eventually(async () => expect((await fetch(`${second.extenderUrl}/readyz`)).status).toBe(200));
    } finally {
      await second.close();
    }
  });
});
