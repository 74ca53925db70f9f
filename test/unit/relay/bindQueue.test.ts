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
/** A Node's deletion as the relay forwards it (a re-list's deletion carries the name alone). */
const nodeDeleted = (name: string): ClusterWatchEvent => ({ type: 'DELETED', object: { kind: 'Node', metadata: { name } } });
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

/** A try the test answers when it chooses (a bind at the control plane). */
function pending(): { attempt: (handOver: boolean) => Promise<BindTry<string>>; answer(outcome: BindTry<string>['outcome']): void; tries: boolean[] } {
  const tries: boolean[] = [];
  let answer: (outcome: BindTry<string>['outcome']) => void = () => undefined;
  return {
    tries,
    attempt: (handOver) => {
      tries.push(handOver);
      return new Promise((resolve) => {
        answer = (outcome) => resolve(outcome === 'held' ? { outcome } : { outcome, value: outcome });
      });
    },
    answer: (outcome) => answer(outcome),
  };
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

  describe('a deleted node', () => {
    it('is forgotten once its deletion is delivered, and a Node created again under the name starts afresh', async () => {
      const clock = holds();
      const queue = new NodeBindQueue({ holdMs: 15_000, delay: clock.delay });
      const cp = controlPlane(() => 'locked');
      // a took n1's lock; the Node naming it was never delivered, so the lock is this relay's own, unseen.
      await queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
      queue.watched(nodeEvent('n1', lockValue('a')));
      expect(queue.stats()).toEqual({ nodes: 1, watchedNodes: 1 });

      expect(queue.watched(nodeDeleted('n1'))).toBe(false);
      queue.delivered([nodeDeleted('n1')]);
      expect(queue.stats()).toEqual({ nodes: 0, watchedNodes: 0 });

      // The new n1 holds no lock of the old one: its first bind goes at once, as the hand-over.
      queue.delivered([nodeEvent('n1')]);
      expect(await queue.bind('n1', 'ns/b', cp.attempt('ns/b'))).toBe('ns/b: locked');
      expect(cp.calls).toEqual(['ns/a', 'ns/b']);
      expect(clock.requested).toEqual([15_000, 15_000]);
    });

    it('sends its queued binds at once without the hand-over, and says so while they wait', async () => {
      const clock = holds();
      const queue = new NodeBindQueue({ holdMs: 15_000, delay: clock.delay });
      // The control plane answers binds for a node that is gone (its refusal, as the store sees it).
      const cp = controlPlane((_pod, handOver) => (handOver ? 'locked' : 'done'));
      await queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
      const b = queue.bind('n1', 'ns/b', cp.attempt('ns/b'));
      const c = queue.bind('n1', 'ns/c', cp.attempt('ns/c'));
      await settle();
      expect(queue.waiting('n1')).toBe(2);
      // Its deletion goes without waiting out the batch window, like the end of a lock they wait for.
      expect(queue.watched(nodeDeleted('n1'))).toBe(true);

      queue.delivered([nodeDeleted('n1')]);
      // No hold time passes (the clock is never released).
      expect(await Promise.all([b, c])).toEqual(['ns/b: done', 'ns/c: done']);
      expect(cp.calls).toEqual(['ns/a', 'ns/b (no hand-over)', 'ns/c (no hand-over)']);
      expect(queue.waiting('n1')).toBe(0);
      expect(queue.stats().nodes).toBe(0);
    });

    it('a bind at the control plane when its node is deleted goes again at once without the hand-over if it met the lock held', async () => {
      const queue = new NodeBindQueue({ holdMs: 15_000, delay: holds().delay });
      const a = pending();
      const bound = queue.bind('n1', 'ns/a', a.attempt);
      await settle();
      expect(a.tries).toEqual([true]);
      queue.delivered([nodeDeleted('n1')]);
      a.answer('held');
      await settle();
      expect(a.tries).toEqual([true, false]);
      a.answer('done');
      expect(await bound).toBe('done');
      expect(queue.stats().nodes).toBe(0);
    });

    it('a lock a bind of the deleted node takes afterwards does not hold the Node created again', async () => {
      const queue = new NodeBindQueue({ holdMs: 15_000, delay: holds().delay });
      const a = pending();
      const first = queue.bind('n1', 'ns/a', a.attempt);
      await settle();
      queue.delivered([nodeDeleted('n1'), nodeEvent('n1')]);
      a.answer('locked');
      expect(await first).toBe('locked');
      const cp = controlPlane(() => 'locked');
      expect(await queue.bind('n1', 'ns/b', cp.attempt('ns/b'))).toBe('ns/b: locked');
      expect(cp.calls).toEqual(['ns/b']);
    });
  });

  it('keeps no state for nodes without binds or a lock, and forgets a node once its lock has ended', async () => {
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: holds().delay });
    const cp = controlPlane((pod) => (pod === 'ns/d' ? 'done' : 'locked'));
    for (let i = 0; i < 100; i++) {
      queue.watched(nodeEvent(`n${i}`));
      queue.delivered([nodeEvent(`n${i}`)]);
    }
    expect(queue.stats()).toEqual({ nodes: 0, watchedNodes: 0 });
    // A bind that took no lock leaves nothing behind.
    await queue.bind('n1', 'ns/d', cp.attempt('ns/d'));
    expect(queue.stats().nodes).toBe(0);
    // One that took the lock holds its node until the lock's end, then the annotation's removal, are delivered.
    await queue.bind('n1', 'ns/a', cp.attempt('ns/a'));
    queue.delivered([nodeEvent('n1', lockValue('a'))]);
    expect(queue.stats().nodes).toBe(1);
    queue.delivered([podEvent('a', 'success')]);
    expect(queue.stats().nodes).toBe(1);
    queue.delivered([nodeEvent('n1')]);
    expect(queue.stats().nodes).toBe(0);
  });

  it('a try that throws gives up its place: the next bind goes at once', async () => {
    const clock = holds();
    const queue = new NodeBindQueue({ holdMs: 15_000, delay: clock.delay });
    const cp = controlPlane(() => 'locked');
    const a = queue.bind('n1', 'ns/a', () => Promise.reject(new Error('boom')));
    const b = queue.bind('n1', 'ns/b', cp.attempt('ns/b'));
    await expect(a).rejects.toThrow('boom');
    expect(await b).toBe('ns/b: locked');
    expect(cp.calls).toEqual(['ns/b']);
    expect(queue.waiting('n1')).toBe(0);
  });
});
