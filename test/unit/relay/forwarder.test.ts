/**
 * The forwarder's pump does not wait for Kubernetes writes: an answer's Effects are applied while the next batches
 * go out, in answer order, and only a few answers' worth may be under way before the pump waits. A batch sent again
 * says so.
 */
import type { ControlPlaneClient, ControlPlaneResponse } from '../../../lib/relay/controlPlane';
import type { Effect, PatchPodAnnotationsEffect } from '../../../lib/wire/effects';
import { ClusterEventForwarder, type ClusterWatchEvent } from '../../../lib/relay/forwarder';
import type { AppLogger } from '../../../lib/powertools';

const silent: AppLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const podEvent = (name: string): ClusterWatchEvent => ({ type: 'MODIFIED', object: { kind: 'Pod', metadata: { name, namespace: 'default', uid: `uid-${name}` } } });

/** One Effect per answer, naming its batch. */
function nudge(batch: number): PatchPodAnnotationsEffect {
  return { kind: 'PatchPodAnnotations', namespace: 'default', name: `batch-${batch}`, uid: `uid-${batch}`, annotations: { 'hami.io/requeue': String(batch) } };
}

const batchOf = (effects: readonly Effect[]) => Number((effects[0] as PatchPodAnnotationsEffect).annotations['hami.io/requeue']);

interface Harness {
  readonly forwarder: ClusterEventForwarder;
  /** Batches the control plane received, by their first pod's name. */
  readonly sent: string[];
  /** Effects applied so far, by the batch they came with, in the order they started. */
  readonly started: number[];
  /** Lets the Effects of the oldest started-and-unfinished answer finish. */
  finishOldest(): void;
}

function harness(): Harness {
  const sent: string[] = [];
  const started: number[] = [];
  const waiting: (() => void)[] = [];
  const controlPlane: ControlPlaneClient = {
    post: async (_path, body) => {
      const events = (body as { events: ClusterWatchEvent[] }).events;
      const batch = sent.length;
      sent.push(String((events[0]?.object.metadata as { name: string }).name));
      const answer = { accepted: events.length, rejected: [], viewSeq: batch + 1, effects: [nudge(batch)] };
      return { status: 200, body: answer, text: JSON.stringify(answer) } satisfies ControlPlaneResponse;
    },
    get: async () => ({ status: 404, body: undefined, text: '' }),
  };
  const forwarder = new ClusterEventForwarder({
    controlPlane,
    logger: silent,
    maxEvents: 1,
    maxDelayMs: 0,
    backoff: { initialMs: 1, maxMs: 1 },
    requestTimeoutMs: 1000,
    onEffects: (effects) =>
      new Promise<void>((resolve) => {
        started.push(batchOf(effects));
        waiting.push(resolve);
      }),
  });
  return { forwarder, sent, started, finishOldest: () => waiting.shift()?.() };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
async function settleAll(): Promise<void> {
  for (let i = 0; i < 20; i++) await settle();
}

describe('relay forwarder: Effects do not hold the pump', () => {
  it('sends the next batches while an answer’s Effects are applied, and applies answers’ Effects one after another', async () => {
    const h = harness();
    for (const name of ['a', 'b', 'c']) h.forwarder.enqueue(podEvent(name));
    await settleAll();
    // All three batches went out although the first answer's Effects have not finished...
    expect(h.sent).toEqual(['a', 'b', 'c']);
    // ...and the second answer's Effects wait for the first's.
    expect(h.started).toEqual([0]);
    h.finishOldest();
    await settleAll();
    expect(h.started).toEqual([0, 1]);
    const idle = h.forwarder.idle();
    let done = false;
    void idle.then(() => (done = true));
    h.finishOldest();
    await settleAll();
    // idle() waits for every answer's Effects, not only for delivery.
    expect(done).toBe(false);
    expect(h.started).toEqual([0, 1, 2]);
    h.finishOldest();
    await idle;
    expect(h.forwarder.viewSeq).toBe(3);
  });

  it('waits for the oldest answer’s Effects once four answers’ are under way', async () => {
    const h = harness();
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) h.forwarder.enqueue(podEvent(name));
    await settleAll();
    // The fifth answer would make five under way: the pump holds after sending it.
    expect(h.sent).toEqual(['a', 'b', 'c', 'd', 'e']);
    h.finishOldest();
    await settleAll();
    expect(h.sent).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    for (let i = 0; i < 5; i++) {
      h.finishOldest();
      await settleAll();
    }
    await h.forwarder.idle();
    expect(h.started).toEqual([0, 1, 2, 3, 4, 5]);
  });
});

describe('relay forwarder: a batch sent again', () => {
  it('marks the resend of a batch whose answer was lost, and only the resend', async () => {
    const bodies: Record<string, unknown>[] = [];
    const controlPlane: ControlPlaneClient = {
      post: async (_path, body) => {
        bodies.push(body as Record<string, unknown>);
        if (bodies.length === 1) return { status: 503, body: undefined, text: 'throttled' };
        const answer = { accepted: 1, rejected: [], viewSeq: bodies.length };
        return { status: 200, body: answer, text: JSON.stringify(answer) };
      },
      get: async () => ({ status: 404, body: undefined, text: '' }),
    };
    const forwarder = new ClusterEventForwarder({ controlPlane, logger: silent, maxEvents: 1, maxDelayMs: 0, backoff: { initialMs: 1, maxMs: 1 }, requestTimeoutMs: 1000, delay: async () => undefined });
    forwarder.enqueue(podEvent('a'));
    await forwarder.idle();
    forwarder.enqueue(podEvent('b'));
    await forwarder.idle();
    expect(bodies.map((b) => [((b.events as ClusterWatchEvent[])[0]?.object.metadata as { name: string }).name, b.resend])).toEqual([
      ['a', undefined],
      ['a', true],
      ['b', undefined],
    ]);
  });
});

describe('events that may end a node lock (docs/relay.md, "Bind hand-over")', () => {
  it('go without waiting out the batch window, with the events queued before them, and the delivery is told', async () => {
    const sent: string[][] = [];
    const delivered: string[][] = [];
    const names = (events: readonly ClusterWatchEvent[]) => events.map((e) => String((e.object.metadata as { name: string }).name));
    const controlPlane: ControlPlaneClient = {
      post: async (_path, body) => {
        const events = (body as { events: ClusterWatchEvent[] }).events;
        sent.push(names(events));
        const answer = { accepted: events.length, rejected: [] };
        return { status: 200, body: answer, text: JSON.stringify(answer) } satisfies ControlPlaneResponse;
      },
      get: async () => ({ status: 404, body: undefined, text: '' }),
    };
    const forwarder = new ClusterEventForwarder({
      controlPlane,
      logger: silent,
      maxEvents: 100,
      maxDelayMs: 200,
      backoff: { initialMs: 1, maxMs: 1 },
      requestTimeoutMs: 1000,
      // The window never ends by itself: only an urgent event (or a full batch) sends.
      delay: (_ms, signal) => new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true })),
      isUrgent: (event) => (event.object.metadata as { name: string }).name === 'holder-done',
      onDelivered: (events) => delivered.push(names(events)),
    });
    forwarder.enqueue(podEvent('status-change'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual([]);
    forwarder.enqueue(podEvent('holder-done'));
    await forwarder.idle();
    expect(sent).toEqual([['status-change', 'holder-done']]);
    expect(delivered).toEqual([['status-change', 'holder-done']]);
    forwarder.close();
  });
});
