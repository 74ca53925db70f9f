/**
 * Bind hand-over (docs/relay.md, "Bind hand-over"; docs/locks.md): kube-scheduler's binds held per node, in the order
 * they arrived, and each sent to the control plane when the relay sees the node's lock free. The relay learns of a
 * lock's end from the cluster events the control plane has taken (a batch delivered): the holder reported `success`
 * or `failed`, finished or deleted, or the Node's `hami.io/mutex.lock` deleted after it named the holder. So the next
 * bind goes out within milliseconds of the device plugin's report, and the store has the lock's end by then.
 *
 * The control plane's conditional write stays the only arbiter (two replicas hold their own queues): a bind sent as a
 * hand-over meets a lock still held with `held`, stays first in its node's queue and goes again at the node's next
 * change. A bind still queued after `holdMs` is sent as before the hand-over existed (the control plane waits for the
 * lock a little, then refuses and nudges the pod when the lock ends). No timer runs but the injected delay.
 *
 * A node's state lasts while it matters: a delivered deletion of the Node drops it (binds still queued for it go at
 * once without the hand-over, since no lock on a deleted node will ever be seen to end, and the control plane
 * answers them), and a node with no bind, no lock known and nothing blocked is forgotten, exactly as if never seen.
 */
import type { ClusterWatchEvent } from './forwarder';
import type { DelayFn } from './delay';
import { NODE_LOCK_ANNOTATION, nodeLockHolder } from '../control/ledger';
import { BindPhase, PodAnnotation } from '../engine/podAnnotations';
import { objectField } from '../json';

/** What one try of a bind came to: the lock was held (hand-over only), the pod took the lock, or it is over otherwise. */
export type BindTry<T> = { readonly outcome: 'held' } | { readonly outcome: 'locked'; readonly value: T } | { readonly outcome: 'done'; readonly value: T };

export interface BindQueueOptions {
  /** How long a bind may wait in its node's queue before it is sent without the hand-over. */
  readonly holdMs: number;
  readonly delay: DelayFn;
}

interface Entry {
  readonly pod: string;
  /** Resolves the wait of the bind: its turn has come. */
  go?: () => void;
  /** Ends the wait of the bind as its hold time would: its node was deleted. */
  drop?: () => void;
}

interface NodeState {
  /** The lock annotation of the Node's latest delivered version: undefined while unknown, null for none. */
  annotation?: string | null;
  /** A lock this relay's bind took, until its end is delivered; `seen` once a delivered Node named it. */
  local?: { readonly pod: string; seen: boolean };
  readonly queue: Entry[];
  /** A bind of the queue is at the control plane. */
  busy: boolean;
  /** The last hand-over met the lock held: wait for the node's next change. */
  blocked: boolean;
  /** Binds on this node not yet answered: queued, at the control plane, or sent without the hand-over. */
  binds: number;
  /** The Node's deletion was delivered: no turn is given any more, and its binds still running finish on their own. */
  gone: boolean;
}

/** Pods whose end was delivered, remembered so a Node naming one of them later reads free (a bounded memory). */
const REMEMBERED = 4096;

export class NodeBindQueue {
  private readonly nodes = new Map<string, NodeState>();
  /** Holder (`namespace/name`) → node: the delivered annotation's holder, or this relay's own. */
  private readonly holders = new Map<string, string>();
  /** Holders named by a watched (not yet delivered) Node: their end skips the batch window. */
  private readonly watchedHolders = new Map<string, string>();
  private readonly watchedAnnotation = new Map<string, string | null>();
  private readonly ended = new Set<string>();

  constructor(private readonly opts: BindQueueOptions) {}

  /**
   * Runs a bind for `pod` (`namespace/name`) on `node`: `attempt(true)` when its turn comes and the lock looks free,
   * again after each `held` once the node changes, or `attempt(false)` once `holdMs` have passed (or `signal` aborts).
   */
  async bind<T>(node: string, pod: string, attempt: (handOver: boolean) => Promise<BindTry<T>>, signal?: AbortSignal): Promise<T> {
    const state = this.state(node);
    const entry: Entry = { pod };
    state.queue.push(entry);
    state.binds++;
    const expiry = new AbortController();
    const onAbort = () => expiry.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const dropped = new Promise<void>((resolve) => {
      entry.drop = resolve;
    });
    const expired = Promise.race([this.opts.delay(this.opts.holdMs, expiry.signal), dropped]).then(() => 'expired' as const);
    try {
      for (;;) {
        const turn = new Promise<'turn'>((resolve) => {
          entry.go = () => resolve('turn');
        });
        this.pump(state);
        if ((await Promise.race([turn, expired])) === 'expired') {
          // Its turn may have come in the same moment: the node is not left busy for a bind that went elsewhere.
          if (entry.go === undefined) state.busy = false;
          this.leave(state, entry);
          this.pump(state);
          const last = await attempt(false);
          if (last.outcome === 'held') throw new Error('a bind sent without the hand-over cannot be answered held');
          this.settled(node, state, pod, last.outcome);
          return last.value;
        }
        const tried = await attempt(true);
        state.busy = false;
        if (tried.outcome === 'held') {
          state.blocked = true;
          continue;
        }
        this.leave(state, entry);
        this.settled(node, state, pod, tried.outcome);
        return tried.value;
      }
    } finally {
      expiry.abort();
      signal?.removeEventListener('abort', onAbort);
      // Still queued only when its try threw: it gives up its place (and the node, if its turn had come).
      if (this.leave(state, entry)) {
        if (entry.go === undefined) state.busy = false;
        this.pump(state);
      }
      state.binds--;
      this.forgetIfIdle(node, state);
    }
  }

  /**
   * Notes a watched event before it is queued for the control plane; true when it may end a lock a bind here waits
   * for (the forwarder then sends it without waiting out its batch window). A lock nobody waits for ends with the
   * batch as before: a burst spread over many nodes keeps its batches.
   */
  watched(event: ClusterWatchEvent): boolean {
    const kind = event.object.kind;
    if (kind === 'Node') {
      const name = objectField(event.object, 'metadata').name;
      if (typeof name !== 'string') return false;
      const value = event.type === 'DELETED' ? null : lockAnnotation(event.object);
      const before = this.watchedAnnotation.get(name);
      // Only annotations are kept: a node without one reads as never seen.
      if (value === null) this.watchedAnnotation.delete(name);
      else this.watchedAnnotation.set(name, value);
      const holder = nodeLockHolder(value ?? undefined);
      if (holder !== undefined) remember(this.watchedHolders, holder, name);
      // A deleted node's waiting binds are sent when the deletion is delivered: it goes at once too.
      const ends = event.type === 'DELETED' || (before !== undefined && value !== before);
      return ends && this.waiting(name) > 0;
    }
    if (kind !== 'Pod') return false;
    const ref = podRef(event.object);
    if (ref === undefined || !podEnded(event)) return false;
    const node = this.watchedHolders.get(ref) ?? this.holders.get(ref);
    this.watchedHolders.delete(ref);
    return node !== undefined && this.waiting(node) > 0;
  }

  /** The control plane took these events: the locks they end are free from now on, for this relay's queues. */
  delivered(events: readonly ClusterWatchEvent[]): void {
    const changed = new Set<string>();
    for (const event of events) {
      if (event.object.kind === 'Node') {
        const name = objectField(event.object, 'metadata').name;
        if (typeof name !== 'string') continue;
        if (event.type === 'DELETED') {
          this.forgetDeleted(name);
          continue;
        }
        const value = lockAnnotation(event.object);
        // A node never seen (or forgotten) without a lock has nothing to learn from a Node without one.
        if (value === null && !this.nodes.has(name)) continue;
        const state = this.state(name);
        if (value === state.annotation) continue;
        state.annotation = value;
        const holder = nodeLockHolder(value ?? undefined);
        if (holder !== undefined) remember(this.holders, holder, name);
        if (state.local !== undefined) {
          if (holder === state.local.pod) state.local.seen = true;
          // Gone (or another's) after it named our holder: the device plugin released it.
          else if (state.local.seen) state.local = undefined;
        }
        changed.add(name);
      } else if (event.object.kind === 'Pod') {
        const ref = podRef(event.object);
        if (ref === undefined || !podEnded(event)) continue;
        remember(this.ended, ref);
        const node = this.holders.get(ref);
        if (node === undefined) continue;
        this.holders.delete(ref);
        const state = this.nodes.get(node);
        if (state === undefined) continue;
        if (state.local?.pod === ref) state.local = undefined;
        changed.add(node);
      }
    }
    for (const node of changed) {
      // Deleted later in the same batch: nothing left to wake.
      const state = this.nodes.get(node);
      if (state === undefined) continue;
      state.blocked = false;
      this.pump(state);
      this.forgetIfIdle(node, state);
    }
  }

  /** The binds waiting on `node` (for tests and logs). */
  waiting(node: string): number {
    return this.nodes.get(node)?.queue.length ?? 0;
  }

  /** Nodes the queue keeps state for, from binds and delivered events, and from watched events (for tests and measurement). */
  stats(): { readonly nodes: number; readonly watchedNodes: number } {
    return { nodes: this.nodes.size, watchedNodes: this.watchedAnnotation.size };
  }

  private state(node: string): NodeState {
    let state = this.nodes.get(node);
    if (state === undefined) {
      state = { queue: [], busy: false, blocked: false, binds: 0, gone: false };
      this.nodes.set(node, state);
    }
    return state;
  }

  /**
   * The Node's deletion was delivered: its state goes, so a Node created again under the name starts afresh. Its
   * queued binds stop waiting for a lock nobody will be seen to release and go as if their hold time had passed
   * (the control plane answers them); binds already at the control plane finish with the dropped state.
   */
  private forgetDeleted(node: string): void {
    const state = this.nodes.get(node);
    if (state === undefined) return;
    this.nodes.delete(node);
    state.gone = true;
    for (const entry of state.queue) entry.drop?.();
  }

  /** Forgets a node with no bind, no lock known and nothing blocked: a new state for it behaves exactly the same. */
  private forgetIfIdle(node: string, state: NodeState): void {
    if (state.binds > 0 || state.blocked || state.local !== undefined || nodeLockHolder(state.annotation ?? undefined) !== undefined) return;
    if (this.nodes.get(node) === state) this.nodes.delete(node);
  }

  /** Whether the node's lock looks free from what was delivered (unknown counts as free: the control plane decides). */
  private free(state: NodeState): boolean {
    if (state.local !== undefined) return false;
    const holder = nodeLockHolder(state.annotation ?? undefined);
    return holder === undefined || this.ended.has(holder);
  }

  private pump(state: NodeState): void {
    if (state.gone || state.busy || state.blocked || !this.free(state)) return;
    const head = state.queue[0];
    if (head?.go === undefined) return;
    state.busy = true;
    const go = head.go;
    head.go = undefined;
    go();
  }

  /** Takes `entry` out of the queue; false when it was not in it. */
  private leave(state: NodeState, entry: Entry): boolean {
    const at = state.queue.indexOf(entry);
    if (at < 0) return false;
    state.queue.splice(at, 1);
    return true;
  }

  /**
   * A bind that took the lock holds the node until its end is delivered; any other outcome lets the next one go. A
   * lock taken on a node deleted since is not kept: the node's state is gone.
   */
  private settled(node: string, state: NodeState, pod: string, outcome: 'locked' | 'done'): void {
    if (outcome === 'locked' && !state.gone) {
      state.local = { pod, seen: nodeLockHolder(state.annotation ?? undefined) === pod };
      this.ended.delete(pod);
      remember(this.holders, pod, node);
    }
    this.pump(state);
  }
}

function lockAnnotation(object: Record<string, unknown>): string | null {
  const value = objectField(objectField(object, 'metadata'), 'annotations')[NODE_LOCK_ANNOTATION];
  return typeof value === 'string' ? value : null;
}

function podRef(object: Record<string, unknown>): string | undefined {
  const { namespace, name } = objectField(object, 'metadata');
  return typeof namespace === 'string' && typeof name === 'string' ? `${namespace}/${name}` : undefined;
}

/** A pod whose allocation is over: reported `success` or `failed` by the device plugin, finished, or deleted. */
function podEnded(event: ClusterWatchEvent): boolean {
  if (event.type === 'DELETED') return true;
  const phase = objectField(event.object, 'status').phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  const bindPhase = objectField(objectField(event.object, 'metadata'), 'annotations')[PodAnnotation.BindPhase];
  return bindPhase === BindPhase.Success || bindPhase === BindPhase.Failed;
}

/** Adds to a bounded memory, forgetting the oldest entries past REMEMBERED. */
function remember(memory: Map<string, string> | Set<string>, key: string, value?: string): void {
  memory.delete(key);
  if (memory instanceof Map) memory.set(key, value ?? '');
  else memory.add(key);
  if (memory.size > REMEMBERED) {
    const oldest = memory.keys().next().value;
    if (oldest !== undefined) memory.delete(oldest);
  }
}
