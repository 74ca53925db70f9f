/**
 * Nothing stalls after an outage: the relay nudges every pod Pending for our scheduler once it has (re)started
 * and the control plane answers, and again when the control plane answers after failures. Bounded in rate,
 * skipped for pods nudged within the window, and safe with two replicas (the resourceVersion precondition).
 */
import { podsToNudge } from '../../../lib/relay/nudger';
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { eventually, gatedDelay, gpuPod, postJson } from './harness';

let clock = Date.parse('2026-03-01T10:00:00Z');
const now = () => new Date(clock);
const NUDGES_ON = { RELAY_NUDGE_PER_SECOND: '10' };

const rig = useRelayOnFakeControlPlane({ per: 'test' });

beforeEach(() => {
  clock = Date.parse('2026-03-01T10:00:00Z');
});

const requeued = (name: string) => (rig.kube.get('Pod', 'team-a', name)?.metadata?.annotations as Record<string, string> | undefined)?.['hami.io/requeue'];
const nudgePatches = () => rig.kube.writes().filter((w) => w.method === 'PATCH' && JSON.stringify(w.body).includes('hami.io/requeue'));

function cluster(): void {
  for (const name of ['wait-0', 'wait-1', 'wait-2']) rig.kube.create('Pod', gpuPod(name));
  rig.kube.create('Pod', gpuPod('bound', 'team-a', { nodeName: 'node-1' }));
  rig.kube.create('Pod', { ...gpuPod('other'), spec: { ...(gpuPod('other').spec as object), schedulerName: 'default-scheduler' } });
  rig.kube.create('Pod', gpuPod('fresh', 'team-a', { annotations: { 'hami.io/requeue': new Date(clock - 5_000).toISOString() } }));
}

describe('podsToNudge', () => {
  const pod = (name: string, extra: Record<string, unknown> = {}, spec: Record<string, unknown> = {}, status: Record<string, unknown> = { phase: 'Pending' }) => ({
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '7', ...extra },
    spec: { schedulerName: 'hami-scheduler', ...spec },
    status,
  });
  const t = Date.parse('2026-03-01T10:00:00Z');

  it.each([
    ['pending for us', pod('a'), true],
    ['no phase yet', pod('a', {}, {}, {}), true],
    ['another scheduler', pod('a', {}, { schedulerName: 'default-scheduler' }), false],
    ['bound', pod('a', {}, { nodeName: 'n1' }), false],
    ['running', pod('a', {}, {}, { phase: 'Running' }), false],
    ['being deleted', pod('a', { deletionTimestamp: '2026-03-01T09:00:00Z' }), false],
    ['nudged 10 s ago', pod('a', { annotations: { 'hami.io/requeue': new Date(t - 10_000).toISOString() } }), false],
    ['nudged 31 s ago', pod('a', { annotations: { 'hami.io/requeue': new Date(t - 31_000).toISOString() } }), true],
    ['nudged "in the future" by a skewed clock', pod('a', { annotations: { 'hami.io/requeue': new Date(t + 10_000).toISOString() } }), false],
    ['unreadable requeue time', pod('a', { annotations: { 'hami.io/requeue': 'soon' } }), true],
  ])('%s', (_label, p, expected) => {
    expect(podsToNudge([p], 'hami-scheduler', t, 30_000).length === 1).toBe(expected);
  });
});

describe('nudges', () => {
  it('at start: every pod Pending for our scheduler with no node, once, spaced by the rate bound, with uid and resourceVersion preconditions', async () => {
    // Prepare
    cluster();
    const spacing = gatedDelay();

    // Act
    const relay = await rig.startRelay({ now, nudgeDelay: spacing.delay, env: { RELAY_NUDGE_PER_SECOND: '4' } });
    for (let i = 1; i <= 2; i++) {
      await eventually(() => expect(spacing.waiting()).toBe(1));
      expect(nudgePatches()).toHaveLength(i);
      spacing.release();
    }
    await relay.nudger.idle();

    // Assess
    expect(['wait-0', 'wait-1', 'wait-2'].map(requeued)).toEqual(Array(3).fill(now().toISOString()));
    expect(requeued('bound')).toBeUndefined();
    expect(requeued('other')).toBeUndefined();
    expect(requeued('fresh')).toBe(new Date(clock - 5_000).toISOString());
    expect(spacing.requested).toEqual([250, 250]);
    const first = nudgePatches()[0];
    expect(first?.contentType).toBe('application/merge-patch+json');
    expect(first?.body).toEqual({ metadata: { uid: expect.any(String), resourceVersion: expect.any(String), annotations: { 'hami.io/requeue': now().toISOString() } } });
    expect(relay.nudger.history()).toEqual([{ reason: 'relay started', candidates: 3, nudged: 3, changed: 0, gone: 0, failed: 0 }]);
  });

  it('waits for the control plane before the first round, so a relay started during an outage does not nudge in vain', async () => {
    // Prepare
    cluster();
    const down = { status: 503, body: { message: 'down' } };
    rig.cp.on('GET', '/healthz', down);
    rig.cp.on('POST', '/cluster/events', down);
    const probes = gatedDelay();
    const retries = gatedDelay();

    // Act
    const relay = await rig.startRelay({ now, reachabilityDelay: probes.delay, forwarderDelay: retries.delay, env: NUDGES_ON });
    await eventually(() => expect(probes.waiting()).toBe(1));
    await eventually(() => expect(relay.watcher.status().synced).toBe(true));
    await eventually(() => expect(retries.waiting()).toBe(1));
    expect(nudgePatches()).toEqual([]);
    rig.cp.on('GET', '/healthz', { body: { status: 'ok' } });
    rig.cp.on('POST', '/cluster/events', (call) => ({ body: { accepted: (call.body as { events: unknown[] }).events.length, rejected: [] } }));
    probes.release();
    retries.release();

    // Assess
    await eventually(() => expect(relay.nudger.history()).toHaveLength(1));
    expect(relay.nudger.history()[0]).toMatchObject({ reason: 'relay started', nudged: 3 });
  });

  it('after the control plane was unreachable: every Pending pod once more when it answers again, and a second replica does not double them', async () => {
    // Prepare: two replicas, started and done with their first round
    cluster();
    const probesA = gatedDelay();
    const probesB = gatedDelay();
    // Retries of /cluster/events wait here until the control plane is back.
    const retries = gatedDelay();
    const a = await rig.startRelay({ now, reachabilityDelay: probesA.delay, forwarderDelay: retries.delay, env: NUDGES_ON });
    const b = await rig.startRelay({ now, reachabilityDelay: probesB.delay, forwarderDelay: retries.delay, env: NUDGES_ON });
    await eventually(() => expect(a.nudger.history().length + b.nudger.history().length).toBe(2));
    await Promise.all([a.nudger.idle(), b.nudger.idle()]);
    const firstRound = [...a.nudger.history(), ...b.nudger.history()];
    // Each pod was nudged once between the two replicas (the slower one met 409s or saw the fresh annotation).
    expect(firstRound.reduce((n, h) => n + h.nudged, 0)).toBe(3);

    // Act: the control plane goes away; kube-scheduler's filters fail through both replicas
    const down = { status: 503, body: { message: 'down' } };
    rig.cp.on('POST', '/cluster/events', down);
    rig.cp.on('GET', '/healthz', down);
    rig.cp.on('POST', '/filter', { status: 502, body: { message: 'bad gateway' } });
    const filterArgs = (name: string) => {
      const p = rig.kube.get('Pod', 'team-a', name);
      return { Pod: p, NodeNames: ['node-1'] };
    };
    expect((await postJson(`${a.extenderUrl}/filter`, filterArgs('wait-0'))).body.Error).toMatch(/HTTP 502/);
    expect((await postJson(`${b.extenderUrl}/filter`, filterArgs('wait-1'))).body.Error).toMatch(/HTTP 502/);
    expect([a.reachability.current(), b.reachability.current()]).toEqual(['down', 'down']);
    await eventually(() => expect(probesA.waiting() + probesB.waiting()).toBe(2));
    // A minute passes; then the control plane is back.
    clock += 60_000;
    rig.cp.on('GET', '/healthz', { body: { status: 'ok' } });
    rig.cp.on('POST', '/cluster/events', (call) => ({ body: { accepted: (call.body as { events: unknown[] }).events.length, rejected: [] } }));
    probesA.release();
    probesB.release();
    retries.release();

    // Assess: one more nudge per Pending pod, whichever replica made it
    await eventually(() => expect(a.nudger.history().length + b.nudger.history().length).toBe(4));
    await Promise.all([a.nudger.idle(), b.nudger.idle()]);
    const secondRound = [a.nudger.history()[1], b.nudger.history()[1]].map((h) => h ?? { nudged: 0 });
    for (const h of [...a.nudger.history().slice(1), ...b.nudger.history().slice(1)]) expect(h.reason).toBe('control plane reachable again');
    // wait-0..2 and fresh (its earlier requeue is now older than the window): 4 pods, each once.
    expect(secondRound.reduce((n, h) => n + h.nudged, 0)).toBe(4);
    expect(['wait-0', 'wait-1', 'wait-2', 'fresh'].map(requeued)).toEqual(Array(4).fill(now().toISOString()));
    // The bound on writes: never more than one attempt per pod and replica per round.
    expect(nudgePatches().length).toBeLessThanOrEqual(2 * (3 + 4));
  });
});
