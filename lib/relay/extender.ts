/**
 * kube-scheduler's extender verbs, relayed: forward to the control plane, apply the Effects it returns,
 * answer without them. Every answer is HTTP 200 (kube-scheduler discards other bodies) and arrives
 * within the deadline; failures are `Error` strings kube-scheduler retries with backoff.
 */
import type { AppLogger } from '../powertools';
import { MIN_VIEW_SEQ_HEADER } from '../wire';
import type { ControlPlaneClient } from './controlPlane';
import { applyEffects, splitEffects, type ClusterWriter } from './effects';

export interface ExtenderDeps {
  readonly controlPlane: ControlPlaneClient;
  readonly writer: ClusterWriter;
  readonly logger: AppLogger;
  /** Total budget for one answer, below kube-scheduler's httpTimeout. */
  readonly deadlineMs: number;
  readonly now?: () => number;
  /** The change-journal entry the relay's forwarded cluster events last produced (sent with every /filter). */
  readonly viewSeq?: () => number;
}

export type ExtenderAnswer = Record<string, unknown>;

/** Kubernetes extender keys arrive PascalCase but are accepted in any case, as kube-scheduler does. */
function field(obj: unknown, key: string): unknown {
  if (obj === null || typeof obj !== 'object') return undefined;
  const wanted = key.toLowerCase();
  for (const [k, val] of Object.entries(obj)) if (k.toLowerCase() === wanted) return val;
  return undefined;
}

function parseBody(raw: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch (err) {
    return { ok: false, error: `request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

const filterError = (error: string): ExtenderAnswer => ({ NodeNames: null, FailedNodes: null, Error: error });
const bindError = (error: string): ExtenderAnswer => ({ Error: error });

/** Resolves with `fallback` if `work` takes longer than `ms`; the work itself keeps running and is logged. */
async function withDeadline<T>(work: Promise<T>, ms: number, fallback: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback()), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

function remaining(deps: ExtenderDeps, startedAt: number): number {
  const now = deps.now ?? Date.now;
  return Math.max(1, deps.deadlineMs - (now() - startedAt));
}

async function callControlPlane(
  deps: ExtenderDeps,
  path: string,
  body: unknown,
  startedAt: number,
  headers: Readonly<Record<string, string>> = {},
): Promise<{ ok: true; answer: unknown } | { ok: false; error: string }> {
  try {
    const res = await deps.controlPlane.post(path, body, { timeoutMs: remaining(deps, startedAt), headers });
    if (res.status !== 200) {
      return { ok: false, error: `control plane answered ${path} with HTTP ${res.status}: ${res.text.slice(0, 300)}` };
    }
    if (res.body === undefined) return { ok: false, error: `control plane answered ${path} with a body that is not JSON` };
    return { ok: true, answer: res.body };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}

export async function relayFilter(rawBody: string, deps: ExtenderDeps): Promise<ExtenderAnswer> {
  const startedAt = (deps.now ?? Date.now)();
  const work = async (): Promise<ExtenderAnswer> => {
    const parsed = parseBody(rawBody);
    if (!parsed.ok) return filterError(parsed.error);
    const pod = field(parsed.value, 'Pod');
    const podName = `${String(field(field(pod, 'metadata'), 'namespace') ?? '')}/${String(field(field(pod, 'metadata'), 'name') ?? '')}`;
    const seq = deps.viewSeq?.() ?? 0;
    const reply = await callControlPlane(deps, '/filter', parsed.value, startedAt, seq > 0 ? { [MIN_VIEW_SEQ_HEADER]: String(seq) } : {});
    if (!reply.ok) {
      deps.logger.warn('FilterNotRelayed', { pod: podName, error: reply.error });
      return filterError(reply.error);
    }
    const { rest, effects, invalid } = splitEffects(reply.answer);
    if (invalid !== undefined) return filterError(`control plane sent invalid Effects: ${invalid}`);
    const applied = await applyEffects(effects, deps.writer, deps.logger);
    if (!applied.ok) return filterError(applied.error);
    deps.logger.info('FilterRelayed', { pod: podName, nodeNames: field(rest, 'NodeNames') ?? null, effects: effects.length });
    return rest;
  };
  return withDeadline(work(), deps.deadlineMs, () => {
    deps.logger.warn('FilterDeadlineExceeded', { deadlineMs: deps.deadlineMs });
    return filterError(`relay could not answer within ${deps.deadlineMs}ms (control plane slow or unreachable)`);
  });
}

export async function relayBind(rawBody: string, deps: ExtenderDeps): Promise<ExtenderAnswer> {
  const startedAt = (deps.now ?? Date.now)();
  const work = async (): Promise<ExtenderAnswer> => {
    const parsed = parseBody(rawBody);
    if (!parsed.ok) return bindError(parsed.error);
    const args = parsed.value;
    const identity = {
      PodUID: String(field(args, 'PodUID') ?? ''),
      PodNamespace: String(field(args, 'PodNamespace') ?? ''),
      PodName: String(field(args, 'PodName') ?? ''),
      Node: String(field(args, 'Node') ?? ''),
    };
    const logKeys = { pod: `${identity.PodNamespace}/${identity.PodName}`, node: identity.Node };
    const reply = await callControlPlane(deps, '/bind', args, startedAt);
    if (!reply.ok) {
      deps.logger.warn('BindNotRelayed', { ...logKeys, error: reply.error });
      return bindError(reply.error);
    }
    const { rest, effects, invalid } = splitEffects(reply.answer);
    if (invalid !== undefined) return bindError(`control plane sent invalid Effects: ${invalid}`);
    const refused = field(rest, 'Error');
    if (typeof refused === 'string' && refused !== '') {
      // The control plane refused (e.g. lock contention): its Effects carry BindingFailed; no outcome to report.
      await applyEffects(effects, deps.writer, deps.logger);
      deps.logger.info('BindRefused', { ...logKeys, error: refused });
      return bindError(refused);
    }
    const applied = await applyEffects(effects, deps.writer, deps.logger);
    const failure = applied.ok ? '' : applied.error;
    const outcome = await callControlPlane(deps, '/bind/outcome', { ...identity, Error: failure }, startedAt);
    if (outcome.ok) {
      const follow = splitEffects(outcome.answer);
      if (follow.invalid !== undefined) deps.logger.warn('OutcomeEffectsInvalid', { ...logKeys, error: follow.invalid });
      await applyEffects(follow.effects, deps.writer, deps.logger);
    } else {
      deps.logger.error('BindOutcomeNotReported', { ...logKeys, error: outcome.error });
    }
    deps.logger.info('BindRelayed', { ...logKeys, error: failure });
    return bindError(failure);
  };
  return withDeadline(work(), deps.deadlineMs, () => {
    deps.logger.warn('BindDeadlineExceeded', { deadlineMs: deps.deadlineMs });
    return bindError(`relay could not answer within ${deps.deadlineMs}ms (control plane slow or unreachable)`);
  });
}
