/**
 * kube-scheduler's extender verbs, relayed: check the request against the cluster (podCheck.ts), forward to the
 * control plane, apply the Effects it returns, answer without them. Every answer is HTTP 200 (kube-scheduler discards other bodies) and arrives
 * within the deadline; failures are `Error` strings kube-scheduler retries with backoff.
 */
import type { AppLogger } from '../powertools';
import { MIN_VIEW_SEQ_HEADER } from '../wire/headers';
import { EVICTION_REFUSED_PATH, PREEMPTION_HEADER, type EvictionRefused, type PreemptionMode } from '../wire/preemption';
import type { ControlPlaneClient } from './controlPlane';
import { realDelay, type DelayFn } from './delay';
import { applyEffects, type ClusterWriter } from './effects';
import { splitEffects } from '../wire/effects';
import { readBindingResult, readFilterResult } from '../wire/extender';
import { clusterPod, requestDiffers, type PodSource } from './podCheck';
import type { BindTry, NodeBindQueue } from './bindQueue';
import { NODE_LOCK_ANNOTATION } from '../control/ledger';
import { errorMessage } from '../errors';
import { AHEAD_NOTE_HEADER, AHEAD_USED_HEADER } from '../wire/decidedAhead';
import type { AheadDecisions } from './aheadDecisions';

export interface ExtenderDeps {
  readonly controlPlane: ControlPlaneClient;
  readonly writer: ClusterWriter;
  readonly logger: AppLogger;
  /** Total budget for one answer, below kube-scheduler's httpTimeout. */
  readonly deadlineMs: number;
  /** Waits out the deadline; injected so tests decide when it has passed instead of a wall clock. */
  readonly delay?: DelayFn;
  /** The change-journal entry the relay's forwarded cluster events last produced (sent with every /filter). */
  readonly viewSeq?: () => number;
  /** Told after every control-plane call whether it was answered (nudges follow an outage's end). */
  readonly reachability?: (answered: boolean, error?: string) => void;
  /** Where requests are checked against the cluster (podCheck.ts). */
  readonly pods: PodSource;
  /** Decisions made ahead (aheadDecisions.ts); absent with HAMI_DECIDE_AHEAD=false: every filter is decided live. */
  readonly ahead?: Pick<AheadDecisions, 'lookup' | 'usedAt'>;
  /** Binds held per node until the lock looks free (bindQueue.ts); without it each bind goes at once. */
  readonly bindQueue?: NodeBindQueue;
  /** This cluster's GPU-aware preemption mode (the chart's; docs/preemption.md); absent: `on`. */
  readonly preemption?: PreemptionMode;
}

export type ExtenderAnswer = Record<string, unknown>;

/** Kubernetes extender keys arrive PascalCase but are accepted in any case, as kube-scheduler does. */
function field(obj: unknown, key: string): unknown {
  if (obj === null || typeof obj !== 'object') return undefined;
  const wanted = key.toLowerCase();
  for (const [k, val] of Object.entries(obj)) if (k.toLowerCase() === wanted) return val;
  return undefined;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

function parseBody(raw: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch (err) {
    return { ok: false, error: `request body is not valid JSON: ${errorMessage(err)}` };
  }
}

const filterError = (error: string): ExtenderAnswer => ({ NodeNames: null, FailedNodes: null, Error: error });
const bindError = (error: string): ExtenderAnswer => ({ Error: error });

/** The answer when the deadline passes first: it names the configured deadline, not the time that was left. */
export function deadlineText(deadlineMs: number): string {
  return `relay could not answer within ${deadlineMs}ms (control plane slow or unreachable)`;
}

/**
 * Runs `work` against one deadline per answer. When the deadline passes first, `late` answers and the
 * signal handed to `work` aborts, so its control-plane calls stop; whatever it was applying finishes and is
 * logged. The deadline is the injected delay alone (no second timer races it), so the outcome does not
 * depend on how busy the machine is.
 */
async function answerWithin(deps: ExtenderDeps, work: (signal: AbortSignal) => Promise<ExtenderAnswer>, late: () => ExtenderAnswer): Promise<ExtenderAnswer> {
  const answered = new AbortController();
  const deadline = (deps.delay ?? realDelay)(deps.deadlineMs, answered.signal).then(() => 'late' as const);
  const first = await Promise.race([work(answered.signal), deadline]);
  answered.abort();
  return first === 'late' ? late() : first;
}

async function callControlPlane(
  deps: ExtenderDeps,
  path: string,
  body: unknown,
  signal: AbortSignal,
  headers: Readonly<Record<string, string>> = {},
): Promise<{ ok: true; answer: unknown } | { ok: false; error: string }> {
  try {
    const res = await deps.controlPlane.post(path, body, { signal, headers });
    deps.reachability?.(res.status !== 429 && res.status < 500, `HTTP ${res.status}`);
    if (res.status !== 200) {
      return { ok: false, error: `control plane answered ${path} with HTTP ${res.status}: ${res.text.slice(0, 300)}` };
    }
    if (res.body === undefined) return { ok: false, error: `control plane answered ${path} with a body that is not JSON` };
    return { ok: true, answer: res.body };
  } catch (err) {
    const error = errorMessage(err);
    deps.reachability?.(false, error);
    return { ok: false, error };
  }
}

export async function relayFilter(rawBody: string, deps: ExtenderDeps): Promise<ExtenderAnswer> {
  const work = async (signal: AbortSignal): Promise<ExtenderAnswer> => {
    const parsed = parseBody(rawBody);
    if (!parsed.ok) return filterError(parsed.error);
    const pod = field(parsed.value, 'Pod');
    const metadata = field(pod, 'metadata');
    const want = { namespace: text(field(metadata, 'namespace')), name: text(field(metadata, 'name')), uid: text(field(metadata, 'uid')) };
    const podName = `${want.namespace}/${want.name}`;
    const checked = await clusterPod(deps.pods, want);
    if (!checked.ok) {
      deps.logger.warn('ExtenderRequestRefused', { verb: 'filter', pod: podName, reason: checked.reason });
      return filterError(checked.reason);
    }
    const differs = requestDiffers(pod, checked.pod);
    if (differs.length > 0) deps.logger.warn('FilterPodReplaced', { pod: podName, differs });
    const names = field(parsed.value, 'NodeNames');
    const ahead = deps.ahead ? await deps.ahead.lookup(checked.pod, Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : null) : undefined;
    if (ahead !== undefined && 'use' in ahead) {
      // Decided and booked ahead, its annotations written: nothing left for the serial path (docs/relay.md, "Deciding ahead").
      deps.logger.info('FilterAnsweredAhead', { pod: podName, node: ahead.use, decidedAt: ahead.decidedAt });
      return { Nodes: null, NodeNames: [ahead.use], FailedNodes: null, FailedAndUnresolvableNodes: null, Error: '' };
    }
    if (ahead !== undefined && 'retry' in ahead) {
      deps.logger.info('FilterAwaitsAhead', { pod: podName, reason: ahead.retry });
      return filterError(ahead.retry);
    }
    const note = ahead?.note;
    if (note !== undefined) deps.logger.info('AheadDecisionNotUsed', { pod: podName, reason: note });
    // The control plane decides on the pod as the cluster has it.
    const args: Record<string, unknown> = { Pod: checked.pod };
    for (const [k, v] of Object.entries(parsed.value as Record<string, unknown>)) if (k.toLowerCase() !== 'pod') args[k] = v;
    const seq = deps.viewSeq?.() ?? 0;
    const mode = deps.preemption ?? 'on';
    const headers = {
      ...(seq > 0 ? { [MIN_VIEW_SEQ_HEADER]: String(seq) } : {}),
      ...(note !== undefined ? { [AHEAD_NOTE_HEADER]: note } : {}),
      ...(mode !== 'on' ? { [PREEMPTION_HEADER]: mode } : {}),
    };
    const reply = await callControlPlane(deps, '/filter', args, signal, headers);
    if (!reply.ok) {
      deps.logger.warn('FilterNotRelayed', { pod: podName, error: reply.error });
      return filterError(reply.error);
    }
    const { rest, effects, invalid } = splitEffects(reply.answer);
    if (invalid !== undefined) return filterError(`control plane sent invalid Effects: ${invalid}`);
    const result = readFilterResult(rest);
    if (!result.ok) {
      deps.logger.warn('FilterNotRelayed', { pod: podName, error: result.error });
      return filterError(result.error);
    }
    const applied = await applyEffects(effects, deps.writer, deps.logger, { preemption: mode, evictionRefused: (report) => reportRefusal(deps, report, signal) });
    if (!applied.ok) return filterError(applied.error);
    deps.logger.info('FilterRelayed', { pod: podName, nodeNames: result.value.NodeNames ?? null, effects: effects.length });
    return result.value;
  };
  return answerWithin(deps, work, () => {
    deps.logger.warn('FilterDeadlineExceeded', { deadlineMs: deps.deadlineMs });
    return filterError(deadlineText(deps.deadlineMs));
  });
}

/**
 * Tells the control plane that an eviction was refused (docs/preemption.md), and applies what it answers: the
 * preemptor's explanation and its nudge, so its next filter looks for another plan at once.
 */
async function reportRefusal(deps: ExtenderDeps, report: EvictionRefused, signal: AbortSignal): Promise<void> {
  const reply = await callControlPlane(deps, EVICTION_REFUSED_PATH, report, signal);
  if (!reply.ok) throw new Error(reply.error);
  const { effects, invalid } = splitEffects(reply.answer);
  if (invalid !== undefined) throw new Error(`control plane sent invalid Effects: ${invalid}`);
  await applyEffects(effects, deps.writer, deps.logger, { independent: true });
}

export async function relayBind(rawBody: string, deps: ExtenderDeps): Promise<ExtenderAnswer> {
  const work = async (signal: AbortSignal): Promise<ExtenderAnswer> => {
    const parsed = parseBody(rawBody);
    if (!parsed.ok) return bindError(parsed.error);
    const args = parsed.value;
    const identity = {
      PodUID: text(field(args, 'PodUID')),
      PodNamespace: text(field(args, 'PodNamespace')),
      PodName: text(field(args, 'PodName')),
      Node: text(field(args, 'Node')),
    };
    const logKeys = { pod: `${identity.PodNamespace}/${identity.PodName}`, node: identity.Node };
    // Read now: the Binding's watch event forgets the decision.
    const usedAhead = deps.ahead?.usedAt(identity.PodUID);
    const checked = await clusterPod(deps.pods, { namespace: identity.PodNamespace, name: identity.PodName, uid: identity.PodUID });
    if (!checked.ok) {
      deps.logger.warn('ExtenderRequestRefused', { verb: 'bind', ...logKeys, reason: checked.reason });
      return bindError(checked.reason);
    }
    const forward = async (handOver: boolean): Promise<BindTry<ExtenderAnswer>> => {
      const body = handOver && args !== null && typeof args === 'object' ? { ...(args as Record<string, unknown>), HandOver: true } : args;
      const reply = await callControlPlane(deps, '/bind', body, signal);
      if (!reply.ok) {
        deps.logger.warn('BindNotRelayed', { ...logKeys, error: reply.error });
        return { outcome: 'done', value: bindError(reply.error) };
      }
      const { rest, effects, invalid } = splitEffects(reply.answer);
      if (invalid !== undefined) return { outcome: 'done', value: bindError(`control plane sent invalid Effects: ${invalid}`) };
      const result = readBindingResult(rest);
      if (!result.ok) {
        deps.logger.warn('BindNotRelayed', { ...logKeys, error: result.error });
        return { outcome: 'done', value: bindError(result.error) };
      }
      // The lock is held: the queue sends the bind again when it sees the lock end.
      if (handOver && result.value.LockHeld !== undefined) return { outcome: 'held' };
      const refused = result.value.Error;
      if (refused !== undefined && refused !== '') {
        // The control plane refused (e.g. lock contention): its Effects carry BindingFailed; no outcome to report.
        await applyEffects(effects, deps.writer, deps.logger);
        deps.logger.info('BindRefused', { ...logKeys, error: refused });
        return { outcome: 'done', value: bindError(refused) };
      }
      const applied = await applyEffects(effects, deps.writer, deps.logger);
      const failure = applied.ok ? '' : applied.error;
      const usedHeader = failure === '' && usedAhead !== undefined ? { [AHEAD_USED_HEADER]: usedAhead } : undefined;
      const outcome = await callControlPlane(deps, '/bind/outcome', { ...identity, Error: failure }, signal, usedHeader);
      if (outcome.ok) {
        const follow = splitEffects(outcome.answer);
        if (follow.invalid !== undefined) deps.logger.warn('OutcomeEffectsInvalid', { ...logKeys, error: follow.invalid });
        await applyEffects(follow.effects, deps.writer, deps.logger);
      } else {
        deps.logger.error('BindOutcomeNotReported', { ...logKeys, error: outcome.error });
      }
      deps.logger.info('BindRelayed', { ...logKeys, error: failure });
      // The pod holds the node's lock when the control plane wrote its mirror and the Binding went through.
      const locked = failure === '' && effects.some((e) => e.kind === 'PatchNodeAnnotations' && typeof e.annotations[NODE_LOCK_ANNOTATION] === 'string');
      return { outcome: locked ? 'locked' : 'done', value: bindError(failure) };
    };
    if (deps.bindQueue === undefined || identity.Node === '') {
      const once = await forward(false);
      return once.outcome === 'held' ? bindError('the node lock is held') : once.value;
    }
    return deps.bindQueue.bind(identity.Node, logKeys.pod, forward, signal);
  };
  return answerWithin(deps, work, () => {
    deps.logger.warn('BindDeadlineExceeded', { deadlineMs: deps.deadlineMs });
    return bindError(deadlineText(deps.deadlineMs));
  });
}
