/**
 * The relay's per-node bind queue (lib/relay/bindQueue.ts, docs/relay.md "Bind hand-over"): binds wait in arrival
 * order while the node's lock is held and go the moment a delivered event ends it; a bind that meets the lock anyway
 * waits for the next change; a bind still waiting after its hold time is sent without the hand-over. The hold time
 * is an injected delay the test releases: nothing sleeps.
 */
import { NodeBindQueue, type BindTry } from '../../../lib/relay/bindQueue';
import type { ClusterWatchEvent } from '../../../lib/relay/forwarder';
import type { DelayFn } from '../../../lib/relay/delay';

const LOCK = 'hami.io/mutex.lock';

/** The hold delays, released by the test (the injected clock). */
function holds(): { delay: DelayFn; expire(): void; requested: number[] } {
  const waiting: (() => void)[] = [];
  const requested: number[] = [];
  return {
    requested,
    delay: (ms, signal) =>
      new Promise<void>((resolve) => {
        requested.push(ms);
        waiting.push(resolve);
        signal?.addEventListener('abort', () => resolve(), { once: true });
      }),
    expire: () => {
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
}

const nodeEvent = (name: string, lock?: string): ClusterWatchEvent => ({
  type: 'MODIFIED',
  object: { kind: 'Node', metadata: { name, annotations: lock !== undefined ? { [LOCK]: lock } : {} } },
});
const podEvent = (name: string, bindPhase: string, type: ClusterWatchEvent['type'] = 'MODIFIED'): ClusterWatchEvent => ({
  type,
  object: { kind: 'Pod', metadata: { name, namespace: 'ns', annotations: { 'hami.io/bind-phase': bindPhase } }, status: { phase: 'Pending' } },
});
const lockValue = (pod: string) => `2026-11-28T10:00:00Z,ns,${pod}`;

/** A control plane as the queue sees it: what each try answers, recorded in order. */
function controlPlane(answer: (pod: string, handOver: boolean) => BindTry<string>['outcome']) {
  const calls: string[] = [];
  const attempt = (pod: string) => async (handOver: boolean): Promise<BindTry<string>> => {
    calls.push(`${pod}${handOver ? '' : ' (no hand-over)'}`);
    const outcome = answer(pod, handOver);
    return outcome === 'held' ? { outcome } : { outcome, value: `${pod}: ${outcome}` };
  };
  return { calls, attempt };
}

/** Lets every settled promise's callbacks run (the queue's steps are promise callbacks, not timers). */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('the per-node bind queue', () => {
  it('sends the first bind at once, holds the others in arrival order, and sends the next when the holder’s end is delivered', async () => {
    const clock = holds();
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: clock.delay });
    const cp = controlPlane(() => 'locked');
    const a = queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
    const b = queue.bind('n1', 'ns/b', cp.attempt('ns/b'));
    const c = queue.bind('n1', 'ns/c', cp.attempt('ns/c'));
    expect(await a).toBe('ns/a: locked');
    await settle();
    expect(cp.calls).toEqual(['ns/a']);
    expect(queue.waiting('n1')).toBe(2);

    // The Node event from before the lock's patch does not free it; the one naming a does not either.
    queue.delivered([nodeEvent('n1')]);
    queue.delivered([nodeEvent('n1', lockValue('a'))]);
    await settle();
    expect(cp.calls).toEqual(['ns/a']);
    // The device plugin reports a's allocation: b goes, then c only after b's end.
    queue.delivered([podEvent('a', 'success')]);
    expect(await b).toBe('ns/b: locked');
    await settle();
    expect(cp.calls).toEqual(['ns/a', 'ns/b']);
    // The annotation deleted after it named b ends b's lock just as well.
    queue.delivered([nodeEvent('n1', lockValue('b'))]);
    queue.delivered([nodeEvent('n1')]);
    expect(await c).toBe('ns/c: locked');
    expect(cp.calls).toEqual(['ns/a', 'ns/b', 'ns/c']);
    expect(clock.requested).toEqual([15_000, 15_000, 15_000]);
  });

  it('keeps nodes apart: a bind on a free node never waits behind another node’s lock', async () => {
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: holds().delay });
    const cp = controlPlane(() => 'locked');
    await queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
    expect(await queue.bind('n2', 'ns/b', cp.attempt('ns/b'))).toBe('ns/b: locked');
  });

  it('lets the next bind go at once after a bind that took no lock or failed', async () => {
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: holds().delay });
    const cp = controlPlane((pod) => (pod === 'ns/a' ? 'done' : 'locked'));
    const a = queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
    const b = queue.bind('n1', 'ns/b', cp.attempt('ns/b'));
    expect(await Promise.all([a, b])).toEqual(['ns/a: done', 'ns/b: locked']);
  });

  it('a bind that meets the lock held (another replica’s) stays first and goes again at the node’s next change', async () => {
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: holds().delay });
    let held = true;
    const cp = controlPlane(() => (held ? 'held' : 'locked'));
    const a = queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
    const b = queue.bind('n1', 'ns/b', cp.attempt('ns/b'));
    await settle();
    expect(cp.calls).toEqual(['ns/a']);
    // The other replica's holder shows on the Node: the lock looks held, nothing is sent.
    queue.delivered([nodeEvent('n1', lockValue('x'))]);
    await settle();
    expect(cp.calls).toEqual(['ns/a']);
    // Its end is delivered: a goes again, first, and takes the lock; b still waits.
    held = false;
    queue.delivered([podEvent('x', 'success')]);
    expect(await a).toBe('ns/a: locked');
    await settle();
    expect(cp.calls).toEqual(['ns/a', 'ns/a']);
    queue.delivered([podEvent('a', 'failed')]);
    expect(await b).toBe('ns/b: locked');
  });

  it('sends a bind still waiting after its hold time without the hand-over, and the queue goes on behind it', async () => {
    const clock = holds();
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: clock.delay });
    const cp = controlPlane((_pod, handOver) => (handOver ? 'locked' : 'done'));
    await queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
    const b = queue.bind('n1', 'ns/b', cp.attempt('ns/b'));
    await settle();
    clock.expire();
    expect(await b).toBe('ns/b: done');
    expect(cp.calls).toEqual(['ns/a', 'ns/b (no hand-over)']);
    expect(queue.waiting('n1')).toBe(0);
  });

  it('says which watched events may end a lock a bind waits for: the holder’s report or deletion, the annotation’s removal; not other pods’ updates', async () => {
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: holds().delay });
    const cp = controlPlane(() => 'locked');
    // A lock nobody waits for: its end keeps to the batch window.
    expect(queue.watched(nodeEvent('n1', lockValue('z')))).toBe(false);
    expect(queue.watched(podEvent('z', 'success'))).toBe(false);
    expect(queue.watched(nodeEvent('n1'))).toBe(false);
    // A bind waits on n1 (behind a's).
    await queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
    void queue.bind('n1', 'ns/w', cp.attempt('ns/w'));
    expect(queue.watched(nodeEvent('n1'))).toBe(false);
    expect(queue.watched(nodeEvent('n1', lockValue('a')))).toBe(false);
    expect(queue.watched(podEvent('other', 'success'))).toBe(false);
    expect(queue.watched(podEvent('a', 'allocating'))).toBe(false);
    expect(queue.watched(podEvent('a', 'success'))).toBe(true);
    expect(queue.watched(nodeEvent('n1', lockValue('b')))).toBe(true);
    expect(queue.watched(podEvent('b', 'allocating', 'DELETED'))).toBe(true);
    expect(queue.watched(nodeEvent('n1'))).toBe(true);
    expect(queue.watched(nodeEvent('n1'))).toBe(false);
  });
});
