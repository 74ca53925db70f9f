/**
 * The relay's configuration: one zod schema over the environment, checked once at start. Every problem
 * is reported at once, naming the variable, so a bad Deployment fails with one clear message.
 */
import { z } from 'zod';
import type { AdmissionSettings } from '../admission/review';
import { loadEngineConfig, loadReservationTtlSeconds } from '../config';
import { managedQuantityNames } from '../engine/devices';
import { ConfigError } from '../errors';
import { RelayConfigError } from './errors';
import { MAX_EVENTS_PER_BATCH } from '../wire/clusterEvents';
import { MAX_AHEAD_PODS } from '../wire/decidedAhead';
import { PREEMPTION_MODES, type PreemptionMode } from '../wire/preemption';

/** Decide-ahead's batches in flight at once unless RELAY_AHEAD_MAX_BATCHES says otherwise (docs/relay.md, "Deciding ahead"). */
export const DEFAULT_AHEAD_MAX_BATCHES = 4;
/**
 * The ramp's idle limit unless RELAY_AHEAD_COLD_AFTER_MS says otherwise (docs/relay.md, "Deciding ahead"): AWS does not
 * say how long an idle Lambda environment is kept, and taking a warm one as cold costs only one batch decided alone.
 */
export const DEFAULT_AHEAD_COLD_AFTER_MS = 60_000;
/** A `/cluster/events` batch goes once this many events wait (RELAY_BATCH_MAX_EVENTS), or when its window ends. */
export const DEFAULT_BATCH_MAX_EVENTS = 100;
/** A batch's window: how long after its first event it goes, fewer events waiting (RELAY_BATCH_MAX_DELAY_MS). */
export const DEFAULT_BATCH_MAX_DELAY_MS = 200;
/**
 * The most events one batch carries when more wait (RELAY_BATCH_BACKLOG_EVENTS; never fewer than the above): in a burst
 * the control plane takes an event for about half the time in batches of 400 as in batches of 100 (docs/performance.md,
 * "The relay's events in a burst").
 */
export const DEFAULT_BATCH_BACKLOG_EVENTS = 500;
/**
 * The most one batch's events (and complete list) may weigh as JSON, in bytes (RELAY_BATCH_MAX_BYTES): a Lambda
 * function takes a request of at most 6 MB, and the relay forwards whole objects. An event heavier than this goes alone.
 */
export const DEFAULT_BATCH_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Lambda's 6 MB request limit, less room: API Gateway hands the body to Lambda as an escaped JSON string inside its
 * event, each quote escaped, so the body must stay well below the limit.
 */
const MAX_BATCH_BYTES = 4_500_000;

const intFromEnv = (fallback: number, min: number, max: number) =>
  z
    .string()
    .trim()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw === '') return fallback;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer between ${min} and ${max}, got "${raw}"` });
        return z.NEVER;
      }
      return n;
    });

const optionalText = z
  .string()
  .optional()
  .transform((s) => (s === undefined || s.trim() === '' ? undefined : s.trim()));

const envSchema = z
  .object({
    RELAY_MODE: z.enum(['relay', 'node-agent']).default('relay'),
    /** Where the listeners bind: loopback unless told (in a pod, the chart sets the pod IP). */
    RELAY_HOST: z.string().trim().min(1).default('127.0.0.1'),
    /** kube-scheduler's extender verbs (/filter, /bind) and probes. */
    RELAY_PORT: intFromEnv(8080, 0, 65535),
    /** Users' scheduler-log route and probes; a separate port so a NetworkPolicy can keep /filter and /bind for the scheduler. */
    RELAY_USER_PORT: intFromEnv(8081, 0, 65535),
    /**
     * The user port (scheduler logs, listings, the console): `self-managed` or `files` serve HTTPS with the same
     * certificate machinery as the webhook; `off` is plain HTTP, only when asked for (local runs, tests). No default.
     */
    RELAY_USER_TLS: z.enum(['self-managed', 'files', 'off'], { message: 'must be self-managed, files or off (off: plain HTTP, for local runs and tests)' }),
    RELAY_USER_CERT_DIR: z.string().trim().min(1).default('/tls'),
    /** How long the user port reuses a TokenReview or SubjectAccessReview answer (lib/relay/reviewCache.ts); 0: never. */
    RELAY_REVIEW_CACHE_SECONDS: intFromEnv(10, 0, 300),
    /**
     * TokenReviews of bearer tokens that have not authenticated within the hour (lib/relay/tokenGate.ts): per client
     * address, at most this many at once, regained at this many per minute; past it, 429.
     */
    RELAY_TOKEN_REVIEWS_PER_CLIENT: intFromEnv(30, 1, 100_000),
    /** The same for all clients together: what a flood of unknown tokens may cost the relay's API budget. */
    RELAY_TOKEN_REVIEWS: intFromEnv(300, 1, 1_000_000),
    HAMI_CONTROL_PLANE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com' }),
    HAMI_CONTROL_PLANE_AUTH: z.enum(['iam', 'token', 'none']).optional(),
    HAMI_API_TOKEN: optionalText,
    AWS_REGION: optionalText,
    AWS_DEFAULT_REGION: optionalText,
    AWS_ACCESS_KEY_ID: optionalText,
    AWS_SECRET_ACCESS_KEY: optionalText,
    /** Set by IRSA (EKS service-account roles). */
    AWS_WEB_IDENTITY_TOKEN_FILE: optionalText,
    /** Set by EKS Pod Identity. */
    AWS_CONTAINER_CREDENTIALS_FULL_URI: optionalText,
    /** Total time an extender answer may take; keep it below the scheduler's httpTimeout (30 s in infra/k8s). */
    RELAY_EXTENDER_DEADLINE_MS: intFromEnv(25_000, 100, 600_000),
    RELAY_EVENT_SOURCE_COMPONENT: z.string().trim().min(1).default('hami-scheduler'),
    RELAY_MANAGED_RESOURCES: optionalText,
    RELAY_BATCH_MAX_EVENTS: intFromEnv(DEFAULT_BATCH_MAX_EVENTS, 1, MAX_EVENTS_PER_BATCH),
    /** Unset: the larger of DEFAULT_BATCH_BACKLOG_EVENTS and RELAY_BATCH_MAX_EVENTS. */
    RELAY_BATCH_BACKLOG_EVENTS: intFromEnv(-1, 1, MAX_EVENTS_PER_BATCH),
    RELAY_BATCH_MAX_BYTES: intFromEnv(DEFAULT_BATCH_MAX_BYTES, 65_536, MAX_BATCH_BYTES),
    /** Decide pending pods in batches before kube-scheduler asks (docs/relay.md, "Deciding ahead"); false: every filter is decided live. */
    HAMI_DECIDE_AHEAD: z.enum(['true', 'false'], { message: 'must be true or false' }).default('true'),
    /** How long the relay gathers new pending pods before sending a batch, and the most one batch carries. */
    RELAY_AHEAD_WINDOW_MS: intFromEnv(20, 0, 10_000),
    RELAY_AHEAD_MAX_PODS: intFromEnv(MAX_AHEAD_PODS, 1, MAX_AHEAD_PODS),
    /** Batches in flight at once: more keep up with several kube-schedulers (docs/relay.md, "Deciding ahead"). */
    RELAY_AHEAD_MAX_BATCHES: intFromEnv(DEFAULT_AHEAD_MAX_BATCHES, 1, 16),
    /** The ramp: one batch in flight until the control plane answers one, again after a failed batch or this long without an answer. */
    RELAY_AHEAD_COLD_AFTER_MS: intFromEnv(DEFAULT_AHEAD_COLD_AFTER_MS, 1_000, 86_400_000),
    /** How long a filter waits for the batch deciding its pod before deciding it live. */
    RELAY_AHEAD_WAIT_MS: intFromEnv(3_000, 0, 20_000),
    RELAY_BATCH_MAX_DELAY_MS: intFromEnv(DEFAULT_BATCH_MAX_DELAY_MS, 0, 60_000),
    /**
     * Bind hand-over (docs/relay.md): how long a bind may wait in its node's queue for the lock before it is sent as
     * before (the control plane then waits up to HAMI_BIND_LOCK_WAIT_SECONDS); 0 sends every bind at once. Below
     * RELAY_EXTENDER_DEADLINE_MS, with room for that wait; unset, three fifths of it (15 s of 25 s).
     */
    RELAY_BIND_HANDOVER_MS: intFromEnv(-1, 0, 600_000),
    RELAY_RESYNC_INTERVAL_MS: intFromEnv(300_000, 1_000, 86_400_000),
    RELAY_WATCH_TIMEOUT_SECONDS: intFromEnv(300, 1, 3_600),
    RELAY_BACKOFF_INITIAL_MS: intFromEnv(500, 1, 600_000),
    RELAY_BACKOFF_MAX_MS: intFromEnv(30_000, 1, 3_600_000),
    /** Nudges after a (re)start or an outage of the control plane: patches per second per replica (0: none). */
    RELAY_NUDGE_PER_SECOND: intFromEnv(10, 0, 1_000),
    /** A pod nudged less than this long ago (by any replica, or the control plane) is not nudged again. */
    RELAY_NUDGE_WINDOW_SECONDS: intFromEnv(30, 1, 3_600),
    /**
     * The extender port: `self-managed` or `files` serve TLS and require kube-scheduler's client certificate
     * (mutual TLS); `off` is plain HTTP, only when asked for (local runs, tests). No default: a choice to make.
     */
    RELAY_EXTENDER_TLS: z.enum(['self-managed', 'files', 'off'], { message: 'must be self-managed, files or off (off: plain HTTP without client certificates, for local runs and tests)' }),
    RELAY_EXTENDER_CERT_DIR: z.string().trim().min(1).default('/tls'),
    /** The common name kube-scheduler's client certificate must carry (and the relay issues, self-managed). */
    RELAY_EXTENDER_CLIENT_NAME: z.string().trim().min(1).default('hami-scheduler'),
    /** self-managed: the Secret the relay writes kube-scheduler's client certificate into. */
    RELAY_EXTENDER_CLIENT_SECRET: z.string().trim().min(1).default('hami-scheduler-extender-tls'),
    /** Admission webhook TLS: `self-managed` (own CA in a Secret), `files` (cert-manager's Secret mounted), `off` (no webhook). */
    RELAY_WEBHOOK_TLS: z.enum(['self-managed', 'files', 'off'], { message: 'must be self-managed, files or off' }).default('off'),
    RELAY_WEBHOOK_PORT: intFromEnv(8443, 0, 65535),
    RELAY_WEBHOOK_CERT_DIR: z.string().trim().min(1).default('/tls'),
    RELAY_WEBHOOK_SECRET: z.string().trim().min(1).default('hami-relay-webhook-tls'),
    RELAY_WEBHOOK_CONFIGURATION: z.string().trim().min(1).default('hami-webhook'),
    RELAY_WEBHOOK_SERVICE: z.string().trim().min(1).default('hami-relay'),
    /** How often the certificate (and the caBundle) is checked; a Helm upgrade that resets the caBundle heals within it. */
    RELAY_WEBHOOK_CHECK_INTERVAL_SECONDS: intFromEnv(60, 1, 86_400),
    /** The relay's namespace (downward API); where the self-managed Secret lives. */
    POD_NAMESPACE: optionalText,
    /** The kube-scheduler profile that calls the extender; the webhook gives it to GPU pods. */
    HAMI_SCHEDULER_NAME: z.string().trim().min(1).default('hami-scheduler'),
    /** HAMi's defaultGPUNum: cards given to a container that asks only for GPU memory or cores. */
    HAMI_DEFAULT_GPU_NUM: intFromEnv(1, 0, 1024),
    /** GPU-aware preemption for this cluster (docs/preemption.md); sent with /filter when not `on`. */
    HAMI_PREEMPTION: z.enum(PREEMPTION_MODES, { message: 'must be on, off or log' }).default('on'),
  })
  .superRefine((env, ctx) => {
    const auth = env.HAMI_CONTROL_PLANE_AUTH ?? inferAuth(env);
    if (auth === 'token' && env.HAMI_API_TOKEN === undefined) {
      ctx.addIssue({ code: 'custom', path: ['HAMI_API_TOKEN'], message: 'is required when HAMI_CONTROL_PLANE_AUTH=token' });
    }
    if (auth === 'iam') {
      if (env.AWS_REGION === undefined && env.AWS_DEFAULT_REGION === undefined) {
        ctx.addIssue({ code: 'custom', path: ['AWS_REGION'], message: 'is required when HAMI_CONTROL_PLANE_AUTH=iam (SigV4 signing)' });
      }
      // Credentials are not required here: IRSA, EKS Pod Identity and instance profiles supply them through the
      // SDK's default chain without any key in the environment. Half a key pair is a mistake, though.
      if ((env.AWS_ACCESS_KEY_ID === undefined) !== (env.AWS_SECRET_ACCESS_KEY === undefined)) {
        ctx.addIssue({ code: 'custom', path: [env.AWS_ACCESS_KEY_ID === undefined ? 'AWS_ACCESS_KEY_ID' : 'AWS_SECRET_ACCESS_KEY'], message: 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together' });
      }
    }
    if (env.RELAY_BATCH_BACKLOG_EVENTS >= 0 && env.RELAY_BATCH_BACKLOG_EVENTS < env.RELAY_BATCH_MAX_EVENTS) {
      ctx.addIssue({ code: 'custom', path: ['RELAY_BATCH_BACKLOG_EVENTS'], message: 'must not be below RELAY_BATCH_MAX_EVENTS' });
    }
    if (env.RELAY_BACKOFF_MAX_MS < env.RELAY_BACKOFF_INITIAL_MS) {
      ctx.addIssue({ code: 'custom', path: ['RELAY_BACKOFF_MAX_MS'], message: 'must not be below RELAY_BACKOFF_INITIAL_MS' });
    }
    if (env.RELAY_PORT !== 0 && env.RELAY_PORT === env.RELAY_USER_PORT) {
      ctx.addIssue({ code: 'custom', path: ['RELAY_USER_PORT'], message: 'must differ from RELAY_PORT' });
    }
    if (env.RELAY_WEBHOOK_TLS !== 'off' && env.RELAY_WEBHOOK_PORT !== 0 && [env.RELAY_PORT, env.RELAY_USER_PORT].includes(env.RELAY_WEBHOOK_PORT)) {
      ctx.addIssue({ code: 'custom', path: ['RELAY_WEBHOOK_PORT'], message: 'must differ from RELAY_PORT and RELAY_USER_PORT' });
    }
    if ((env.RELAY_WEBHOOK_TLS === 'self-managed' || env.RELAY_EXTENDER_TLS === 'self-managed' || env.RELAY_USER_TLS === 'self-managed') && env.POD_NAMESPACE === undefined) {
      ctx.addIssue({ code: 'custom', path: ['POD_NAMESPACE'], message: 'is required when RELAY_WEBHOOK_TLS, RELAY_EXTENDER_TLS or RELAY_USER_TLS is self-managed (set it from the downward API)' });
    }
    if (/REPLACE-ME|CHANGE-ME/i.test(env.HAMI_CONTROL_PLANE_URL)) {
      ctx.addIssue({ code: 'custom', path: ['HAMI_CONTROL_PLANE_URL'], message: 'still holds the placeholder: set it to your API URL (`serverless info` shows HttpApiUrl)' });
    }
  });

type ParsedEnv = z.infer<typeof envSchema>;

function inferAuth(env: Pick<ParsedEnv, 'HAMI_API_TOKEN' | 'AWS_ACCESS_KEY_ID' | 'AWS_WEB_IDENTITY_TOKEN_FILE' | 'AWS_CONTAINER_CREDENTIALS_FULL_URI'>): ControlPlaneAuthMode {
  if (env.HAMI_API_TOKEN !== undefined) return 'token';
  if (env.AWS_ACCESS_KEY_ID !== undefined || env.AWS_WEB_IDENTITY_TOKEN_FILE !== undefined || env.AWS_CONTAINER_CREDENTIALS_FULL_URI !== undefined) return 'iam';
  return 'none';
}

export type ControlPlaneAuthMode = 'iam' | 'token' | 'none';

export interface RelayConfig {
  readonly mode: 'relay' | 'node-agent';
  readonly host: string;
  readonly port: number;
  readonly userPort: number;
  readonly controlPlane: {
    readonly url: string;
    readonly auth: ControlPlaneAuthMode;
    /** Set when auth is `token`. Never logged. */
    readonly token?: string;
    /** Set when auth is `iam`. Credentials come from the AWS SDK's default chain (env keys, IRSA, Pod Identity, instance profile). */
    readonly region?: string;
  };
  readonly extenderDeadlineMs: number;
  /** GPU-aware preemption for this cluster: the stricter of it and the control plane's own applies (docs/preemption.md). */
  readonly preemption: PreemptionMode;
  readonly eventSourceComponent: string;
  readonly managedResources: readonly string[];
  /**
   * `/cluster/events` batches (docs/relay.md): one goes once `maxEvents` wait or `maxDelayMs` after its first event;
   * it carries up to `backlogEvents` when more wait, and at most `maxBytes` of JSON.
   */
  readonly batch: { readonly maxEvents: number; readonly backlogEvents: number; readonly maxBytes: number; readonly maxDelayMs: number };
  /** Decide-ahead (docs/relay.md, "Deciding ahead"); `reservationTtlMs` is the control plane's HAMI_RESERVATION_TTL_SECONDS. */
  readonly ahead: { readonly enabled: boolean; readonly windowMs: number; readonly maxPods: number; readonly maxBatches: number; readonly coldAfterMs: number; readonly waitMs: number; readonly reservationTtlMs: number };
  /** How long a bind waits in its node's queue for the lock (0: no hand-over). */
  readonly bindHandOverMs: number;
  readonly resyncIntervalMs: number;
  readonly watchTimeoutSeconds: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly nudge: { readonly perSecond: number; readonly windowMs: number };
  readonly extender: {
    readonly tls: 'self-managed' | 'files' | 'off';
    readonly certDir: string;
    readonly clientName: string;
    readonly clientSecretName: string;
  };
  readonly user: {
    readonly tls: 'self-managed' | 'files' | 'off';
    readonly certDir: string;
    readonly reviewCacheMs: number;
    /** Reviews of tokens that have not authenticated lately: per client address and overall, at once and per minute. */
    readonly tokenReviews: { readonly perClient: number; readonly overall: number };
  };
  readonly webhook: {
    readonly tls: 'self-managed' | 'files' | 'off';
    readonly port: number;
    readonly certDir: string;
    readonly namespace: string;
    readonly secretName: string;
    readonly configurationName: string;
    readonly serviceName: string;
    readonly checkIntervalMs: number;
  };
  /** The webhook's rules: the control plane's own engine settings (same variables), scheduler name, default card count. */
  readonly admission: AdmissionSettings;
}

/**
 * The engine settings the webhook shares with the control plane (resource names, defaults, memory factor), read by
 * the control plane's own loader from the same variables, so both sides apply one rule set.
 */
function engineSettings(env: NodeJS.ProcessEnv): { ok: true; engine: AdmissionSettings['engine']; reservationTtlSeconds: number } | { ok: false; problems: string[] } {
  const shared: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) {
    if (/^HAMI_(RESOURCE_|DEFAULT_MEMORY$|DEFAULT_CORES$|MEMORY_FACTOR$|RESERVATION_TTL_SECONDS$)/.test(key)) shared[key] = value;
  }
  try {
    // The reservation TTL by the control plane's own rule.
    return { ok: true, engine: loadEngineConfig(shared), reservationTtlSeconds: loadReservationTtlSeconds(shared) };
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, problems: [...err.problems] };
    throw err;
  }
}

/**
 * The relay's configuration for its code run inside another program (`npm run demo`, `npm run bench`): the control
 * plane at `url` (a bearer `token`, or none), `env` as the relay's environment otherwise, and no servers of its own
 * (kube-scheduler's and users' ports), so no certificates.
 */
export function inProcessRelayConfig(url: string, token: string | undefined, env: Readonly<Record<string, string>> = {}): RelayConfig {
  return loadRelayConfig({
    ...env,
    HAMI_CONTROL_PLANE_URL: url,
    HAMI_CONTROL_PLANE_AUTH: token ? 'token' : 'none',
    ...(token ? { HAMI_API_TOKEN: token } : {}),
    RELAY_EXTENDER_TLS: 'off',
    RELAY_USER_TLS: 'off',
  });
}

/** Parses and checks the environment; throws RelayConfigError listing every problem. */
export function loadRelayConfig(env: NodeJS.ProcessEnv = process.env): RelayConfig {
  const parsed = envSchema.safeParse(env);
  const engine = engineSettings(env);
  const problems = [
    ...(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.') || '(environment)'}: ${i.message}`)),
    ...(engine.ok ? [] : engine.problems),
  ];
  if (parsed.success && parsed.data.RELAY_BIND_HANDOVER_MS >= 0 && parsed.data.RELAY_BIND_HANDOVER_MS >= parsed.data.RELAY_EXTENDER_DEADLINE_MS) {
    problems.push(`RELAY_BIND_HANDOVER_MS: must be below RELAY_EXTENDER_DEADLINE_MS (${parsed.data.RELAY_EXTENDER_DEADLINE_MS}), with room for the control plane's own wait`);
  }
  if (!parsed.success || !engine.ok || problems.length > 0) throw new RelayConfigError(problems);
  const e = parsed.data;
  const auth = e.HAMI_CONTROL_PLANE_AUTH ?? inferAuth(e);
  const names = engine.engine;
  const managed = e.RELAY_MANAGED_RESOURCES?.split(',').map((s) => s.trim()).filter((s) => s !== '') ?? managedQuantityNames(names);
  return {
    mode: e.RELAY_MODE,
    host: e.RELAY_HOST,
    port: e.RELAY_PORT,
    userPort: e.RELAY_USER_PORT,
    controlPlane: {
      url: e.HAMI_CONTROL_PLANE_URL.replace(/\/+$/, ''),
      auth,
      ...(auth === 'token' && e.HAMI_API_TOKEN !== undefined ? { token: e.HAMI_API_TOKEN } : {}),
      ...(auth === 'iam' ? { region: e.AWS_REGION ?? e.AWS_DEFAULT_REGION } : {}),
    },
    extenderDeadlineMs: e.RELAY_EXTENDER_DEADLINE_MS,
    preemption: e.HAMI_PREEMPTION,
    eventSourceComponent: e.RELAY_EVENT_SOURCE_COMPONENT,
    managedResources: managed,
    batch: {
      maxEvents: e.RELAY_BATCH_MAX_EVENTS,
      backlogEvents: e.RELAY_BATCH_BACKLOG_EVENTS >= 0 ? e.RELAY_BATCH_BACKLOG_EVENTS : Math.max(DEFAULT_BATCH_BACKLOG_EVENTS, e.RELAY_BATCH_MAX_EVENTS),
      maxBytes: e.RELAY_BATCH_MAX_BYTES,
      maxDelayMs: e.RELAY_BATCH_MAX_DELAY_MS,
    },
    ahead: {
      enabled: e.HAMI_DECIDE_AHEAD === 'true',
      windowMs: e.RELAY_AHEAD_WINDOW_MS,
      maxPods: e.RELAY_AHEAD_MAX_PODS,
      maxBatches: e.RELAY_AHEAD_MAX_BATCHES,
      coldAfterMs: e.RELAY_AHEAD_COLD_AFTER_MS,
      waitMs: e.RELAY_AHEAD_WAIT_MS,
      reservationTtlMs: engine.reservationTtlSeconds * 1000,
    },
    bindHandOverMs: e.RELAY_BIND_HANDOVER_MS >= 0 ? e.RELAY_BIND_HANDOVER_MS : Math.floor((e.RELAY_EXTENDER_DEADLINE_MS * 3) / 5),
    resyncIntervalMs: e.RELAY_RESYNC_INTERVAL_MS,
    watchTimeoutSeconds: e.RELAY_WATCH_TIMEOUT_SECONDS,
    backoff: { initialMs: e.RELAY_BACKOFF_INITIAL_MS, maxMs: e.RELAY_BACKOFF_MAX_MS },
    nudge: { perSecond: e.RELAY_NUDGE_PER_SECOND, windowMs: e.RELAY_NUDGE_WINDOW_SECONDS * 1000 },
    extender: { tls: e.RELAY_EXTENDER_TLS, certDir: e.RELAY_EXTENDER_CERT_DIR, clientName: e.RELAY_EXTENDER_CLIENT_NAME, clientSecretName: e.RELAY_EXTENDER_CLIENT_SECRET },
    user: {
      tls: e.RELAY_USER_TLS,
      certDir: e.RELAY_USER_CERT_DIR,
      reviewCacheMs: e.RELAY_REVIEW_CACHE_SECONDS * 1000,
      tokenReviews: { perClient: e.RELAY_TOKEN_REVIEWS_PER_CLIENT, overall: e.RELAY_TOKEN_REVIEWS },
    },
    webhook: {
      tls: e.RELAY_WEBHOOK_TLS,
      port: e.RELAY_WEBHOOK_PORT,
      certDir: e.RELAY_WEBHOOK_CERT_DIR,
      namespace: e.POD_NAMESPACE ?? '',
      secretName: e.RELAY_WEBHOOK_SECRET,
      configurationName: e.RELAY_WEBHOOK_CONFIGURATION,
      serviceName: e.RELAY_WEBHOOK_SERVICE,
      checkIntervalMs: e.RELAY_WEBHOOK_CHECK_INTERVAL_SECONDS * 1000,
    },
    admission: { engine: names, schedulerName: e.HAMI_SCHEDULER_NAME, defaultGpuNum: e.HAMI_DEFAULT_GPU_NUM },
  };
}
