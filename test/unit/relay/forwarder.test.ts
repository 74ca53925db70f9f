/**
 * The forwarder's pump does not wait for Kubernetes writes: an answer's Effects are applied while the next batches
 * go out, in answer order, and only a few answers' worth may be under way before the pump waits. A batch sent again
 * says so. A backlog goes in larger batches, and no batch outweighs the bound in bytes.
 */
import type { ControlPlaneClient, ControlPlaneResponse } from '../../../lib/relay/controlPlane';
import type { Effect, PatchPodAnnotationsEffect } from '../../../lib/wire/effects';
import { ClusterEventForwarder, type ClusterWatchEvent } from '../../../lib/relay/forwarder';
import type { AppLogger } from '../../../lib/powertools';
import { DEFAULT_BATCH_MAX_BYTES } from '../../../lib/relay/config';

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
    backlogEvents: 1,
    maxBytes: DEFAULT_BATCH_MAX_BYTES,
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
    const forwarder = new ClusterEventForwarder({ controlPlane, logger: silent, maxEvents: 1, backlogEvents: 1, maxBytes: DEFAULT_BATCH_MAX_BYTES, maxDelayMs: 0, backoff: { initialMs: 1, maxMs: 1 }, requestTimeoutMs: 1000, delay: async () => undefined });
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
      backlogEvents: 500,
      maxBytes: DEFAULT_BATCH_MAX_BYTES,
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

describe('batch sizes (docs/relay.md, "Cluster events in a backlog")', () => {
  /** A control plane that holds its first answer until `release`, recording each batch's event names and lists. */
  function heldControlPlane() {
    const batches: { names: string[]; lists: string[] }[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const controlPlane: ControlPlaneClient = {
      post: async (_path, body) => {
        const { events, complete } = body as { events: ClusterWatchEvent[]; complete?: { kind: string }[] };
        batches.push({ names: events.map((e) => String((e.object.metadata as { name: string }).name)), lists: (complete ?? []).map((c) => c.kind) });
        if (batches.length === 1) await held;
        const answer = { accepted: events.length, rejected: [] };
        return { status: 200, body: answer, text: JSON.stringify(answer) } satisfies ControlPlaneResponse;
      },
      get: async () => ({ status: 404, body: undefined, text: '' }),
    };
    return { batches, controlPlane, release: () => release() };
  }
  const forwarderWith = (controlPlane: ControlPlaneClient, sizes: { maxEvents: number; backlogEvents: number; maxBytes: number }) =>
    new ClusterEventForwarder({ controlPlane, logger: silent, ...sizes, maxDelayMs: 0, backoff: { initialMs: 1, maxMs: 1 }, requestTimeoutMs: 1000 });
  /** A pod event whose JSON weighs exactly `bytes` (padded in an annotation). */
  const weighing = (name: string, bytes: number): ClusterWatchEvent => {
    const bare = podEvent(name);
    const event = { ...bare, object: { ...bare.object, metadata: { ...(bare.object.metadata as object), annotations: { pad: '' } } } };
    const pad = bytes - Buffer.byteLength(JSON.stringify(event));
    return { ...event, object: { ...event.object, metadata: { ...event.object.metadata, annotations: { pad: 'x'.repeat(pad) } } } };
  };

  it('sends what piled up behind a slow answer in batches of up to the backlog size, in order', async () => {
    const cp = heldControlPlane();
    const forwarder = forwarderWith(cp.controlPlane, { maxEvents: 2, backlogEvents: 5, maxBytes: DEFAULT_BATCH_MAX_BYTES });
    forwarder.enqueue(podEvent('e0'));
    await settleAll();
    for (let i = 1; i <= 11; i++) forwarder.enqueue(podEvent(`e${i}`));
    cp.release();
    await forwarder.idle();
    expect(cp.batches.map((b) => b.names)).toEqual([['e0'], ['e1', 'e2', 'e3', 'e4', 'e5'], ['e6', 'e7', 'e8', 'e9', 'e10'], ['e11']]);
  });

  it('keeps every batch within the bound in bytes, and sends an event heavier than the bound alone', async () => {
    const cp = heldControlPlane();
    const forwarder = forwarderWith(cp.controlPlane, { maxEvents: 100, backlogEvents: 500, maxBytes: 2_500 });
    forwarder.enqueue(podEvent('first'));
    await settleAll();
    for (const [name, bytes] of [['a', 1_000], ['b', 1_000], ['c', 1_000], ['huge', 3_000], ['d', 400]] as const) forwarder.enqueue(weighing(name, bytes));
    cp.release();
    await forwarder.idle();
    expect(cp.batches.map((b) => b.names)).toEqual([['first'], ['a', 'b'], ['c'], ['huge'], ['d']]);
  });

  it('starts a new batch with a complete list that would make the batch too heavy, the list still behind its events', async () => {
    const cp = heldControlPlane();
    const forwarder = forwarderWith(cp.controlPlane, { maxEvents: 100, backlogEvents: 500, maxBytes: 2_500 });
    forwarder.enqueue(podEvent('first'));
    await settleAll();
    forwarder.enqueue(weighing('a', 1_000));
    forwarder.enqueue(weighing('b', 1_000));
    forwarder.enqueueComplete({ kind: 'Pod', resourceVersion: '7', keys: Array.from({ length: 100 }, (_, i) => `uid-${i}`) }, forwarder.refusals());
    forwarder.enqueue(podEvent('after'));
    cp.release();
    await forwarder.idle();
    expect(cp.batches).toEqual([
      { names: ['first'], lists: [] },
      { names: ['a', 'b'], lists: [] },
      { names: [], lists: ['Pod'] },
      { names: ['after'], lists: [] },
    ]);
  });
});
