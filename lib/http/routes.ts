/**
 * The control-plane routes (docs/api.md §2), independent of how requests arrive (Lambda or the local server):
 * parse and check the input, call one service, shape the answer.
 */
import { z } from 'zod';
import { bindPodToNode, recordBindOutcome } from '../control/bind';
import { ingestClusterEvents } from '../control/clusterEvents';
import { clusterEventsBodySchema } from '../wire/clusterEvents';
import type { ControlDeps } from '../control/deps';
import { filterPod } from '../control/filter';
import { decideAhead } from '../control/decideAhead';
import type { AheadNote } from '../diagnostics/record';
import { AHEAD_NOTE_HEADER, AHEAD_USED_HEADER, DECIDE_AHEAD_PATH, MAX_AHEAD_NOTE_CHARS, MAX_AHEAD_PODS } from '../wire/decidedAhead';
import { evictionRefused } from '../control/preemption';
import { EVICTION_REFUSED_PATH, evictionRefusedSchema, PREEMPTION_HEADER, preemptionModeOf } from '../wire/preemption';
import { listNodeDevices, listSchedulerLogs, readNodeDevices, readSchedulerLog } from '../control/views';
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from '../control/listing';
import type { PodLike } from '../engine/types';
import { BadRequestError, PayloadTooLargeError } from '../errors';
import { kubeName, kubeNames, kubeNamespace, kubePodName, kubeUid } from '../wire/names';
import { absentIfNull, nodeSchema, podSchema } from '../wire/objects';
import { MIN_VIEW_SEQ_HEADER } from '../wire/headers';
import { isJsonObject, type JsonObject } from '../json';
import { NodeNamesMemo, splitNodeNames } from './nodeNamesText';
import { decodePathSegment } from './paths';
import { json, text, type HttpResponse, type RouteKind } from './respond';

export interface HttpRequest {
  readonly body: string;
  /** Decoded path parameters (see `matchPath`). */
  readonly pathParameters: Readonly<Record<string, string | undefined>>;
  readonly query: Readonly<Record<string, string | undefined>>;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
}

export interface Route {
  readonly name: string;
  readonly kind: RouteKind;
  readonly method: 'GET' | 'POST';
  /** Path template, `{param}` for one path segment (as API Gateway writes route keys). */
  readonly path: string;
  /** Keys added to every log line of the request (pod, node, attempt id). */
  handle(deps: ControlDeps, req: HttpRequest, logKeys: (keys: Record<string, string>) => void): Promise<HttpResponse>;
}

/** Lambda's synchronous payload limit; larger bodies are refused before parsing. */
export const MAX_BODY_BYTES = 6 * 1024 * 1024;

/** kube-scheduler sends the pod's uid with every filter: bookings are keyed by it. */
const extenderPodSchema = podSchema.extend({ metadata: podSchema.shape.metadata.extend({ uid: kubeUid }) });

const filterArgs = z.object({
  pod: extenderPodSchema,
  nodes: z.object({ items: z.array(nodeSchema).nullish() }).loose().nullish(),
  nodenames: kubeNames.nullish(),
});

const bindArgs = z.object({
  podname: kubePodName,
  podnamespace: kubeNamespace,
  poduid: kubeUid,
  node: kubeName,
  /** The relay waits for the node's lock itself (docs/relay.md, "Bind hand-over"). */
  handover: z.boolean().optional(),
});

const outcomeArgs = bindArgs.omit({ handover: true }).extend({ error: z.string() });

function assertBodySize(body: string): void {
  if (Buffer.byteLength(body) > MAX_BODY_BYTES) throw new PayloadTooLargeError(`request body larger than ${MAX_BODY_BYTES} bytes`);
}

/** Parses a JSON body whose top-level keys may come in any letter case (as Go's decoder accepts). */
function parseExtenderBody(body: string): Record<string, unknown> {
  assertBodySize(body);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (err) {
    throw new BadRequestError(`request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isJsonObject(parsed)) throw new BadRequestError('request body must be a JSON object');
  return foldKeys(parsed);
}

/** `parseExtenderBody` without its errors: `undefined` for anything but a JSON object. */
function tryParseExtenderBody(body: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return isJsonObject(parsed) ? foldKeys(parsed) : undefined;
  } catch {
    return undefined;
  }
}

function foldKeys(parsed: JsonObject): Record<string, unknown> {
  const folded: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parsed)) folded[key.toLowerCase()] = value;
  return folded;
}

function check<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || what}: ${i.message}`)
    .join('; ');
  throw new BadRequestError(`invalid ${what}: ${issues}`);
}

/** A path segment checked as a Kubernetes name: a 400 that quotes it (cut to a readable length) and says what is wrong. */
function checkPathName(schema: z.ZodType<string>, value: string, what: string): string {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const shown = value.length > 80 ? `${value.slice(0, 80)}…` : value;
  const problems = [...new Set(parsed.error.issues.map((i) => i.message))].join('; ');
  throw new BadRequestError(`invalid ${what} ${JSON.stringify(shown)}: ${problems}`);
}

/** The pod as the engine reads it, in the namespace kube-scheduler leaves implicit when it is `default`. */
function normalisePod(pod: z.output<typeof extenderPodSchema>): PodLike {
  return { ...pod, metadata: { ...pod.metadata, namespace: pod.metadata.namespace ?? 'default' } };
}

/** The journal entry the view must include; absent or unreadable: no requirement beyond the view's own age bound. */
function minViewSeq(headers: HttpRequest['headers']): number | undefined {
  const raw = headers[MIN_VIEW_SEQ_HEADER];
  if (raw === undefined || !/^\d{1,15}$/.test(raw.trim())) return undefined;
  return Number(raw.trim());
}

/**
 * ExtenderArgs checked; a `NodeNames` text seen last (lib/http/nodeNamesText.ts) is not parsed or checked again. A body
 * whose rest is empty, not an object, or repeats the names' key (in any letter case) is read whole, as without the memo.
 */
export function readFilterArgs(raw: string, memo: NodeNamesMemo): z.infer<typeof filterArgs> {
  const split = splitNodeNames(raw);
  const known = split && memo.reuse(split.namesText);
  if (split && known) {
    assertBodySize(raw);
    const rest = tryParseExtenderBody(split.rest);
    if (rest && Object.keys(rest).length > 0 && !('nodenames' in rest)) return { ...checkedFilterArgs(rest), nodenames: known as string[] };
  }
  const args = checkedFilterArgs(parseExtenderBody(raw));
  if (split && args.nodenames) return { ...args, nodenames: memo.remember(split.namesText, args.nodenames) as string[] };
  return args;
}

function checkedFilterArgs(body: Record<string, unknown>): z.infer<typeof filterArgs> {
  if (body.pod === undefined || body.pod === null) throw new BadRequestError('extender args missing pod');
  return check(filterArgs, body, 'ExtenderArgs');
}

/** The filter route, with its own memo of the last names' text (one per environment: `filterRoute`). */
export function createFilterRoute(): Route {
  const memo = new NodeNamesMemo();
  return {
    name: 'filter',
    kind: 'extender',
    method: 'POST',
    path: '/filter',
    async handle(deps, req, logKeys) {
      const args = readFilterArgs(req.body, memo);
      const pod = normalisePod(args.pod);
      const podRef = { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name, uid: pod.metadata.uid ?? '' };
      logKeys({ pod: `${podRef.namespace}/${podRef.name}` });
      const nodes = args.nodes ? (args.nodes.items ?? []) : null;
      const seq = minViewSeq(req.headers);
      const ahead = aheadNote(req.headers);
      const preemptionMode = preemptionModeOf(req.headers[PREEMPTION_HEADER]);
      const answer = await filterPod(deps, {
        pod,
        podRef,
        nodeNames: args.nodenames ?? null,
        nodes,
        ...(seq !== undefined ? { minViewSeq: seq } : {}),
        ...(ahead ? { ahead } : {}),
        ...(preemptionMode !== undefined ? { preemptionMode } : {}),
      });
      if (answer.attemptId) logKeys({ attemptId: answer.attemptId });
      return json(200, { ...answer.result, Effects: answer.effects });
    },
  };
}

export const filterRoute: Route = createFilterRoute();

/** When the relay answered the filter from a decision made ahead, for the bind's record; a value that is no RFC 3339 time is refused. */
function filterUsedAhead(headers: HttpRequest['headers']): string | undefined {
  const raw = headers[AHEAD_USED_HEADER]?.trim();
  if (raw === undefined || raw === '') return undefined;
  return check(aheadUsedSchema, raw, AHEAD_USED_HEADER);
}

const aheadUsedSchema = z.iso.datetime({ offset: true });

/** Why the relay could not use a decision made ahead (docs/relay.md, "Deciding ahead"), for the live attempt's record. */
function aheadNote(headers: HttpRequest['headers']): AheadNote | undefined {
  const raw = headers[AHEAD_NOTE_HEADER]?.trim();
  return raw ? { kind: 'notUsed', reason: raw.slice(0, MAX_AHEAD_NOTE_CHARS) } : undefined;
}

/** The pod with the queue's second sort key: kube-scheduler orders by priority (`spec.priority`), then creation time. */
const aheadPodSchema = extenderPodSchema.extend({
  metadata: extenderPodSchema.shape.metadata.extend({ creationTimestamp: absentIfNull(z.iso.datetime({ offset: true })) }),
});

const aheadArgs = z.object({ pods: z.array(aheadPodSchema).min(1).max(MAX_AHEAD_PODS) });

/** Many pods decided before kube-scheduler asks (docs/api.md §2, `POST /filter/ahead`). */
export const decideAheadRoute: Route = {
  name: 'decideAhead',
  kind: 'api',
  method: 'POST',
  path: DECIDE_AHEAD_PATH,
  async handle(deps, req) {
    const args = check(aheadArgs, parseExtenderBody(req.body), 'decide-ahead batch');
    const seq = minViewSeq(req.headers);
    const pods = args.pods.map((raw) => {
      const { creationTimestamp: created, ...metadata } = raw.metadata;
      return { pod: normalisePod({ ...raw, metadata }), priority: raw.spec?.priority ?? 0, createdMs: created ? Date.parse(created) : undefined };
    });
    const answer = await decideAhead(deps, { pods, ...(seq !== undefined ? { minViewSeq: seq } : {}) });
    return json(200, answer);
  },
};

export const bindRoute: Route = {
  name: 'bind',
  kind: 'extender',
  method: 'POST',
  path: '/bind',
  async handle(deps, req, logKeys) {
    const args = check(bindArgs, parseExtenderBody(req.body), 'ExtenderBindingArgs');
    logKeys({ pod: `${args.podnamespace}/${args.podname}`, node: args.node });
    const answer = await bindPodToNode(deps, { pod: { namespace: args.podnamespace, name: args.podname, uid: args.poduid }, node: args.node, ...(args.handover === true ? { handOver: true } : {}) });
    return json(200, { ...answer.result, ...(answer.lockHeld !== undefined ? { LockHeld: answer.lockHeld } : {}), Effects: answer.effects });
  },
};

export const bindOutcomeRoute: Route = {
  name: 'bindOutcome',
  kind: 'api',
  method: 'POST',
  path: '/bind/outcome',
  async handle(deps, req, logKeys) {
    const args = check(outcomeArgs, parseExtenderBody(req.body), 'bind outcome');
    logKeys({ pod: `${args.podnamespace}/${args.podname}`, node: args.node });
    const usedAhead = filterUsedAhead(req.headers);
    const answer = await recordBindOutcome(deps, {
      pod: { namespace: args.podnamespace, name: args.podname, uid: args.poduid },
      node: args.node,
      error: args.error,
      ...(usedAhead !== undefined ? { filterUsedAhead: usedAhead } : {}),
    });
    return json(200, { Effects: answer.effects });
  },
};

/** The relay reports an eviction the Eviction API refused (docs/preemption.md). */
export const evictionRefusedRoute: Route = {
  name: 'evictionRefused',
  kind: 'api',
  method: 'POST',
  path: EVICTION_REFUSED_PATH,
  async handle(deps, req, logKeys) {
    assertBodySize(req.body);
    let body: unknown;
    try {
      body = JSON.parse(req.body);
    } catch (err) {
      throw new BadRequestError(`request body is not valid JSON: ${(err as Error).message}`);
    }
    const report = check(evictionRefusedSchema, body, 'eviction refusal');
    logKeys({ pod: `${report.preemptor.namespace}/${report.preemptor.name}`, node: report.node });
    return json(200, { Effects: await evictionRefused(deps, report) });
  },
};

export const clusterEventsRoute: Route = {
  name: 'clusterEvents',
  kind: 'api',
  method: 'POST',
  path: '/cluster/events',
  async handle(deps, req) {
    const body = check(clusterEventsBodySchema, parseExtenderBody(req.body), 'cluster events');
    const { effects, ...answer } = await ingestClusterEvents(deps, body.events, body.complete ?? [], { resend: body.resend === true });
    return json(200, { ...answer, Effects: effects });
  },
};

const logQuery = z.object({
  detail: z.enum(['devices'], { message: 'detail must be "devices"' }).optional(),
  history: z.enum(['true', 'false'], { message: 'history must be true or false' }).optional(),
});

export const schedulerLogRoute: Route = {
  name: 'schedulerLog',
  kind: 'api',
  method: 'GET',
  path: '/api/v1/namespaces/{ns}/pods/{name}/schedulerlog',
  async handle(deps, req, logKeys) {
    const namespace = checkPathName(kubeNamespace, req.pathParameters.ns ?? '', 'namespace');
    const name = checkPathName(kubePodName, req.pathParameters.name ?? '', 'pod name');
    logKeys({ pod: `${namespace}/${name}` });
    const query = check(logQuery, req.query, 'query');
    const log = await readSchedulerLog(deps, {
      namespace,
      name,
      ...(query.detail ? { detail: query.detail } : {}),
      history: query.history === 'true',
    });
    return json(200, log);
  },
};

export const nodeDevicesRoute: Route = {
  name: 'nodeDevices',
  kind: 'api',
  method: 'GET',
  path: '/api/v1/nodes/{name}/devices',
  async handle(deps, req, logKeys) {
    const node = checkPathName(kubeName, req.pathParameters.name ?? '', 'node name');
    logKeys({ node });
    return json(200, await readNodeDevices(deps, node));
  },
};

const listQuery = z.object({
  limit: z
    .string()
    .regex(/^\d{1,7}$/, { message: `limit must be a whole number from 1 to ${MAX_LIST_LIMIT}` })
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_LIST_LIMIT, { message: `limit must be a whole number from 1 to ${MAX_LIST_LIMIT}` })
    .optional(),
  continue: z.string().min(1).max(2048, { message: 'continue token is too long' }).optional(),
});

function pageOf(req: HttpRequest): { limit: number; continue?: string } {
  const query = check(listQuery, req.query, 'query');
  return { limit: query.limit ?? DEFAULT_LIST_LIMIT, ...(query.continue !== undefined ? { continue: query.continue } : {}) };
}

export const listNodesRoute: Route = {
  name: 'listNodes',
  kind: 'api',
  method: 'GET',
  path: '/api/v1/nodes',
  async handle(deps, req) {
    return json(200, await listNodeDevices(deps, pageOf(req)));
  },
};

export const namespaceSchedulerLogsRoute: Route = {
  name: 'namespaceSchedulerLogs',
  kind: 'api',
  method: 'GET',
  path: '/api/v1/namespaces/{ns}/schedulerlogs',
  async handle(deps, req, logKeys) {
    const namespace = checkPathName(kubeNamespace, req.pathParameters.ns ?? '', 'namespace');
    logKeys({ namespace });
    return json(200, await listSchedulerLogs(deps, { ...pageOf(req), namespace }));
  },
};

export const allSchedulerLogsRoute: Route = {
  name: 'allSchedulerLogs',
  kind: 'api',
  method: 'GET',
  path: '/api/v1/schedulerlogs',
  async handle(deps, req) {
    return json(200, await listSchedulerLogs(deps, pageOf(req)));
  },
};

export const healthzRoute: Route = {
  name: 'healthz',
  kind: 'api',
  method: 'GET',
  path: '/healthz',
  async handle() {
    return text(200, 'ok');
  },
};

/** Every route, in one place: the local server serves them, serverless.yml deploys one function each. */
export const routes: readonly Route[] = [
  filterRoute,
  decideAheadRoute,
  bindRoute,
  bindOutcomeRoute,
  evictionRefusedRoute,
  clusterEventsRoute,
  schedulerLogRoute,
  nodeDevicesRoute,
  listNodesRoute,
  namespaceSchedulerLogsRoute,
  allSchedulerLogsRoute,
  healthzRoute,
];

/**
 * The decoded parameters of `rawPath` under a route's template, or undefined when it does not match.
 * Malformed percent-encoding is the caller's error (400), in the local server and in Lambda alike.
 */
export function matchPath(template: string, rawPath: string): Record<string, string> | undefined {
  const { pattern, names } = templatePattern(template);
  const match = pattern.exec(rawPath);
  if (!match) return undefined;
  const params: Record<string, string> = {};
  names.forEach((name, i) => {
    params[name] = decodePathSegment(match[i + 1] ?? '');
  });
  return params;
}

/** A route template (`/api/v1/nodes/{name}/devices`) as a pattern over the raw path, and its segments' names. */
export function templatePattern(template: string): { readonly pattern: RegExp; readonly names: readonly string[] } {
  const names: string[] = [];
  const pattern = new RegExp(`^${template.replace(/\{(\w+)\}/g, (_m, name: string) => (names.push(name), '([^/]+)'))}$`);
  return { pattern, names };
}
