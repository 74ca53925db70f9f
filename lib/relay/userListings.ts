/**
 * What the user port's lists show a caller who may read pods in some namespaces only (docs/api.md §10): pods of
 * other namespaces are never named (a node's cards show their usage and how many pods are hidden), and pages are
 * cut on what the caller may see, so that neither the pages nor their continue tokens say anything about the rest.
 * The HTTP side is lib/relay/server.ts; the reviews are the caller's own (lib/relay/userAuth.ts, cached).
 */
import { forEachAtMost } from '../concurrency';
import type { PagePosition } from './pageTokens';
import type { AuthDecision } from './userAuth';

type Json = Record<string, unknown>;
type Denial = Extract<AuthDecision, { allowed: false }>;

/** A JSON object (not an array, not null). */
export const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The pod a scheduler-log summary is about (docs/api.md §10), as far as it says. */
export function podOfSummary(item: unknown): { readonly namespace?: string; readonly name?: string } {
  const pod = isObject(item) && isObject(item.pod) ? item.pod : {};
  return { ...(typeof pod.namespace === 'string' ? { namespace: pod.namespace } : {}), ...(typeof pod.name === 'string' ? { name: pod.name } : {}) };
}

/** The namespace of a `namespace/name` reference; undefined when it is not one (then treated as hidden). */
export function namespaceOfPod(ref: unknown): string | undefined {
  if (typeof ref !== 'string') return undefined;
  const slash = ref.indexOf('/');
  return slash > 0 ? ref.slice(0, slash) : undefined;
}

/** SubjectAccessReviews sent at once for one answer (a page of 1,000 pods may span many namespaces). */
const PARALLEL_REVIEWS = 8;

/**
 * The namespaces one caller may read pods in, asked as needed during one request: first whether they may everywhere
 * (one review at the cluster scope), else one review per namespace met. A review that could not be made (not a
 * refusal) ends the request with that failure.
 */
export class NamespaceAccess {
  private everywhere: boolean | undefined;
  private readonly decided = new Map<string, boolean>();

  constructor(private readonly review: (namespace?: string) => Promise<AuthDecision>) {}

  /** Whether the caller may get pods in every namespace; a Denial when the review itself failed. */
  async all(): Promise<boolean | Denial> {
    if (this.everywhere !== undefined) return this.everywhere;
    const decision = await this.review();
    if (!decision.allowed && decision.code !== 403) return decision;
    this.everywhere = decision.allowed;
    return this.everywhere;
  }

  /** Which of `namespaces` the caller may get pods in. */
  async readable(namespaces: Iterable<string>): Promise<ReadonlySet<string> | Denial> {
    const wanted = [...new Set(namespaces)];
    if (wanted.length === 0) return new Set();
    const all = await this.all();
    if (typeof all !== 'boolean') return all;
    if (all) return new Set(wanted);
    let failed: Denial | undefined;
    await forEachAtMost(
      wanted.filter((ns) => !this.decided.has(ns)),
      PARALLEL_REVIEWS,
      async (namespace) => {
        // Once a review could not be made, the answer is that failure: no more reviews.
        if (failed !== undefined) return;
        const decision = await this.review(namespace);
        if (!decision.allowed && decision.code !== 403) failed ??= decision;
        else this.decided.set(namespace, decision.allowed);
      },
    );
    if (failed !== undefined) return failed;
    return new Set(wanted.filter((ns) => this.decided.get(ns) === true));
  }
}

/** The namespaces whose pods a node list names: cards' pods, MIG instances in use, lock holders. */
export function podNamespacesOfNodes(nodes: readonly unknown[]): Set<string> {
  const found = new Set<string>();
  const add = (ref: unknown) => {
    const ns = namespaceOfPod(ref);
    if (ns !== undefined) found.add(ns);
  };
  for (const node of nodes) {
    if (!isObject(node)) continue;
    if (isObject(node.lock)) add(node.lock.holder);
    for (const card of Array.isArray(node.devices) ? node.devices : []) {
      if (!isObject(card)) continue;
      for (const pod of Array.isArray(card.pods) ? card.pods : []) add(pod);
      const inUse = isObject(card.mig) && Array.isArray(card.mig.inUse) ? card.mig.inUse : [];
      for (const part of inUse) if (isObject(part)) add(part.pod);
    }
  }
  return found;
}

/**
 * A node's devices view with the pods of namespaces outside `readable` taken out: a card keeps its usage and says
 * `hiddenPods: <n>` (present when some are hidden); a MIG instance in use keeps its placement and says `podHidden:
 * true`; a lock keeps its times and says `holderHidden: true`.
 */
export function hidePodsOfNode(node: unknown, readable: ReadonlySet<string>): unknown {
  if (!isObject(node)) return node;
  const shown = (ref: unknown) => {
    const ns = namespaceOfPod(ref);
    return ns !== undefined && readable.has(ns);
  };
  const devices = Array.isArray(node.devices)
    ? node.devices.map((card: unknown) => {
        if (!isObject(card)) return card;
        const pods = Array.isArray(card.pods) ? card.pods : [];
        const visible = pods.filter(shown);
        const mig = isObject(card.mig) && Array.isArray(card.mig.inUse)
          ? {
              ...card.mig,
              inUse: card.mig.inUse.map((part: unknown) => {
                if (!isObject(part) || part.pod === undefined || shown(part.pod)) return part;
                const { pod: _pod, ...rest } = part;
                return { ...rest, podHidden: true };
              }),
            }
          : card.mig;
        const bindFailed = Array.isArray(card.bindFailed) ? card.bindFailed.filter(shown) : undefined;
        const { bindFailed: _bindFailed, ...rest } = card;
        return {
          ...rest,
          pods: visible,
          ...(bindFailed !== undefined && bindFailed.length > 0 ? { bindFailed } : {}),
          ...(pods.length > visible.length ? { hiddenPods: pods.length - visible.length } : {}),
          ...(mig !== undefined ? { mig } : {}),
        };
      })
    : node.devices;
  let lock = node.lock;
  if (isObject(lock) && lock.holder !== undefined && !shown(lock.holder)) {
    const { holder: _holder, ...rest } = lock;
    lock = { ...rest, holderHidden: true };
  }
  return { ...node, devices, lock };
}

/**
 * The namespaces of the other pods a scheduler log names: lock holders of the nodes it passed over, preemption victims
 * and pods kept for their PodDisruptionBudget (in every attempt shown), and a victim's preemptor.
 */
export function holderNamespacesOfLog(log: unknown): Set<string> {
  const found = new Set<string>();
  const add = (pod: unknown) => {
    const ns = namespaceOfPod(pod);
    if (ns !== undefined) found.add(ns);
  };
  for (const attempt of attemptsOf(log)) {
    for (const passed of passedOverOf(attempt)) add(passed.holder);
    const preemption = isObject(attempt) && isObject(attempt.filter) && isObject(attempt.filter.preemption) ? attempt.filter.preemption : undefined;
    for (const victim of Array.isArray(preemption?.victims) ? preemption.victims : []) if (isObject(victim)) add(victim.pod);
    for (const pod of Array.isArray(preemption?.spared) ? preemption.spared : []) add(pod);
  }
  if (isObject(log) && isObject(log.preemptedBy)) add(log.preemptedBy.pod);
  return found;
}

/**
 * A scheduler log that names no pod outside `readable`: passed-over nodes' holders (`holderHidden: true` instead),
 * preemption victims and a victim's preemptor (`podHidden: true` instead, their uid dropped too).
 */
export function hideHoldersOfLog(log: unknown, readable: ReadonlySet<string>): unknown {
  if (!isObject(log)) return log;
  const visible = (pod: unknown): boolean => {
    const ns = namespaceOfPod(pod);
    return ns !== undefined && readable.has(ns);
  };
  const hide = (attempt: unknown): unknown => {
    if (!isObject(attempt) || !isObject(attempt.filter)) return attempt;
    let filter = attempt.filter;
    if (Array.isArray(filter.passedOver)) {
      const passedOver = filter.passedOver.map((passed: unknown) => {
        if (!isObject(passed) || visible(passed.holder)) return passed;
        const { holder: _holder, ...rest } = passed;
        return { ...rest, holderHidden: true };
      });
      filter = { ...filter, passedOver };
    }
    if (isObject(filter.preemption)) {
      const preemption = filter.preemption;
      let hidden = false;
      const victims = (Array.isArray(preemption.victims) ? preemption.victims : []).map((victim: unknown) => {
        if (!isObject(victim) || visible(victim.pod)) return victim;
        hidden = true;
        const { pod: _pod, uid: _uid, ...rest } = victim;
        return { ...rest, podHidden: true };
      });
      const spared = (Array.isArray(preemption.spared) ? preemption.spared : []).filter((pod: unknown) => visible(pod));
      hidden ||= Array.isArray(preemption.spared) && spared.length < preemption.spared.length;
      // The summary names the victims too: where one is hidden, it says so instead.
      const summary = hidden ? { summary: `${String(preemption.outcome)}: some of the pods concerned are in namespaces you may not read` } : {};
      filter = { ...filter, preemption: { ...preemption, ...summary, ...(Array.isArray(preemption.victims) ? { victims } : {}), ...(Array.isArray(preemption.spared) ? { spared } : {}) } };
    }
    return { ...attempt, filter };
  };
  let top = hide(log) as Json;
  if (isObject(top.preemptedBy) && !visible(top.preemptedBy.pod)) {
    const { pod: _pod, ...rest } = top.preemptedBy;
    top = { ...top, preemptedBy: { ...rest, podHidden: true } };
  }
  return Array.isArray(log.history) ? { ...top, history: log.history.map(hide) } : top;
}

function attemptsOf(log: unknown): unknown[] {
  if (!isObject(log)) return [];
  return [log, ...(Array.isArray(log.history) ? log.history : [])];
}

function passedOverOf(attempt: unknown): Json[] {
  if (!isObject(attempt) || !isObject(attempt.filter) || !Array.isArray(attempt.filter.passedOver)) return [];
  return attempt.filter.passedOver.filter(isObject);
}

/** One page as the control plane answered it. */
export interface UpstreamPage {
  readonly items: readonly unknown[];
  readonly continue?: string;
}

/** A control-plane answer that is not a page (an error, or the control plane unreachable), passed on as it is. */
export interface UpstreamFailure {
  readonly failed: true;
}

export interface PageScan {
  /** Where the page starts (from the caller's token, or the list's start). */
  readonly start: PagePosition;
  /** Items the caller asked for at most. */
  readonly limit: number;
  /** Reads a control-plane page of at most `limit` items from its token. */
  readonly read: (upstream: string | undefined, limit: number) => Promise<UpstreamPage | UpstreamFailure>;
  /** Which items the caller may see; a Denial ends the scan. */
  readonly shown: (items: readonly unknown[]) => Promise<readonly boolean[] | Denial>;
  /** What names an item for good (`namespace/name`): a position is found again by it should the page have moved. */
  readonly identity: (item: unknown) => string | undefined;
  /** Whether the caller sees every item: the control plane's pages are then passed on as they come. */
  readonly everything: boolean;
  /** Control-plane items read per call while looking for visible ones. */
  readonly scanPageSize: number;
  /** Control-plane calls one page may take; past them the page ends with what it found (and a token). */
  readonly maxReads: number;
}

export type ScanResult = { readonly items: unknown[]; readonly next?: PagePosition } | UpstreamFailure | { readonly denied: Denial };

/**
 * One page of what the caller may see. It ends after `limit` visible items where a further visible item follows,
 * or where the list ends: so a caller who sees nothing gets one empty page without a token, however many items the
 * list holds, and two callers shown the same items get the same pages. Only a list whose hidden items exceed
 * `maxReads` control-plane pages between two visible ones ends a page early (with a token): the one thing a caller
 * may learn about what it cannot see (docs/relay.md).
 */
export async function scanPage(scan: PageScan): Promise<ScanResult> {
  const out: unknown[] = [];
  let cursor = scan.start;
  for (let reads = 0; ; reads++) {
    if (reads === scan.maxReads) return { items: out, next: cursor };
    // A position inside a page indexes a page of scanPageSize items: read that again.
    const size = scan.everything && cursor.skip === 0 && cursor.first === undefined ? scan.limit - out.length : scan.scanPageSize;
    const page = await scan.read(cursor.upstream, size);
    if ('failed' in page) return page;
    let from = Math.min(cursor.skip, page.items.length);
    if (cursor.first !== undefined) {
      const at = page.items.findIndex((item) => scan.identity(item) === cursor.first);
      if (at >= 0) from = at;
    }
    const rest = page.items.slice(from);
    const shown = await scan.shown(rest);
    if ('allowed' in shown) return { denied: shown };
    for (let i = 0; i < rest.length; i++) {
      if (shown[i] !== true) continue;
      if (out.length === scan.limit) {
        const first = scan.identity(rest[i]);
        return { items: out, next: { ...(cursor.upstream !== undefined ? { upstream: cursor.upstream } : {}), skip: from + i, ...(first !== undefined ? { first } : {}) } };
      }
      out.push(rest[i]);
    }
    if (page.continue === undefined) return { items: out };
    cursor = { upstream: page.continue, skip: 0 };
    // Nothing is hidden from this caller: the control plane's page is the page.
    if (scan.everything) return { items: out, next: cursor };
  }
}
