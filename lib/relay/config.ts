/**
 * The relay's configuration: one zod schema over the environment, checked once at start. Every problem
 * is reported at once, naming the variable, so a bad Deployment fails with one clear message.
 */
import { z } from 'zod';
import { RelayConfigError } from './errors';

export const DEFAULT_MANAGED_RESOURCES = [
  'nvidia.com/gpu',
  'nvidia.com/gpumem',
  'nvidia.com/gpumem-percentage',
  'nvidia.com/gpucores',
] as const;

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
    RELAY_HOST: z.string().trim().min(1).default('0.0.0.0'),
    /** kube-scheduler's extender verbs (/filter, /bind) and probes. */
    RELAY_PORT: intFromEnv(8080, 0, 65535),
    /** Users' scheduler-log route and probes; a separate port so a NetworkPolicy can keep /filter and /bind for the scheduler. */
    RELAY_USER_PORT: intFromEnv(8081, 0, 65535),
    HAMI_CONTROL_PLANE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com' }),
    HAMI_CONTROL_PLANE_AUTH: z.enum(['iam', 'token', 'none']).optional(),
    HAMI_API_TOKEN: optionalText,
    AWS_REGION: optionalText,
    AWS_DEFAULT_REGION: optionalText,
    AWS_ACCESS_KEY_ID: optionalText,
    AWS_SECRET_ACCESS_KEY: optionalText,
    /** Total time an extender answer may take; keep it below the scheduler's httpTimeout (30 s in infra/k8s). */
    RELAY_EXTENDER_DEADLINE_MS: intFromEnv(25_000, 100, 600_000),
    RELAY_EVENT_SOURCE_COMPONENT: z.string().trim().min(1).default('hami-scheduler'),
    RELAY_MANAGED_RESOURCES: optionalText,
    RELAY_BATCH_MAX_EVENTS: intFromEnv(100, 1, 10_000),
    RELAY_BATCH_MAX_DELAY_MS: intFromEnv(200, 0, 60_000),
    RELAY_RESYNC_INTERVAL_MS: intFromEnv(300_000, 1_000, 86_400_000),
    RELAY_WATCH_TIMEOUT_SECONDS: intFromEnv(300, 1, 3_600),
    RELAY_BACKOFF_INITIAL_MS: intFromEnv(500, 1, 600_000),
    RELAY_BACKOFF_MAX_MS: intFromEnv(30_000, 1, 3_600_000),
  })
  .superRefine((env, ctx) => {
    const auth = env.HAMI_CONTROL_PLANE_AUTH ?? inferAuth(env);
    if (auth === 'token' && env.HAMI_API_TOKEN === undefined) {
      ctx.addIssue({ code: 'custom', path: ['HAMI_API_TOKEN'], message: 'is required when HAMI_CONTROL_PLANE_AUTH=token' });
    }
    // Credentials come from the AWS SDK's chain at request time (IRSA, EKS Pod Identity, env keys, instance
    // profile): only the region is needed to sign.
    if (auth === 'iam' && env.AWS_REGION === undefined && env.AWS_DEFAULT_REGION === undefined) {
      ctx.addIssue({ code: 'custom', path: ['AWS_REGION'], message: 'is required when HAMI_CONTROL_PLANE_AUTH=iam (SigV4 signing)' });
    }
    if (env.RELAY_BACKOFF_MAX_MS < env.RELAY_BACKOFF_INITIAL_MS) {
      ctx.addIssue({ code: 'custom', path: ['RELAY_BACKOFF_MAX_MS'], message: 'must not be below RELAY_BACKOFF_INITIAL_MS' });
    }
    if (env.RELAY_PORT !== 0 && env.RELAY_PORT === env.RELAY_USER_PORT) {
      ctx.addIssue({ code: 'custom', path: ['RELAY_USER_PORT'], message: 'must differ from RELAY_PORT' });
    }
  });

type ParsedEnv = z.infer<typeof envSchema>;

function inferAuth(env: Pick<ParsedEnv, 'HAMI_API_TOKEN' | 'AWS_ACCESS_KEY_ID'>): ControlPlaneAuthMode {
  if (env.HAMI_API_TOKEN !== undefined) return 'token';
  if (env.AWS_ACCESS_KEY_ID !== undefined) return 'iam';
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
  readonly eventSourceComponent: string;
  readonly managedResources: readonly string[];
  readonly batch: { readonly maxEvents: number; readonly maxDelayMs: number };
  readonly resyncIntervalMs: number;
  readonly watchTimeoutSeconds: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
}

/** Parses and checks the environment; throws RelayConfigError listing every problem. */
export function loadRelayConfig(env: NodeJS.ProcessEnv = process.env): RelayConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new RelayConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(environment)'}: ${i.message}`));
  }
  const e = parsed.data;
  const auth = e.HAMI_CONTROL_PLANE_AUTH ?? inferAuth(e);
  const managed = e.RELAY_MANAGED_RESOURCES?.split(',').map((s) => s.trim()).filter((s) => s !== '') ?? [...DEFAULT_MANAGED_RESOURCES];
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
    eventSourceComponent: e.RELAY_EVENT_SOURCE_COMPONENT,
    managedResources: managed,
    batch: { maxEvents: e.RELAY_BATCH_MAX_EVENTS, maxDelayMs: e.RELAY_BATCH_MAX_DELAY_MS },
    resyncIntervalMs: e.RELAY_RESYNC_INTERVAL_MS,
    watchTimeoutSeconds: e.RELAY_WATCH_TIMEOUT_SECONDS,
    backoff: { initialMs: e.RELAY_BACKOFF_INITIAL_MS, maxMs: e.RELAY_BACKOFF_MAX_MS },
  };
}
