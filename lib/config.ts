/**
 * The control plane's configuration, read once from the environment and checked as a whole: a bad value
 * fails start-up with every problem listed by variable name.
 */
import { z } from 'zod';
import { ConfigError } from './errors';
import type { ControlConfig } from './control/deps';
import type { EngineConfig } from './engine/types';
import { PREEMPTION_MODES } from './wire/preemption';
import { DynamoEndpointError, realRegion, resolveDynamoEndpoint, type EndpointSetting } from './store/dynamoEndpoint';

const intIn = (min: number, max: number, fallback: number) =>
  z
    .string()
    .default(String(fallback))
    .pipe(
      z
        .string()
        .trim()
        .regex(/^-?\d+$/, 'must be an integer')
        .transform(Number)
        .pipe(z.number().int().min(min).max(max)),
    );

const bool = (fallback: boolean) =>
  z
    .string()
    .default(fallback ? 'true' : 'false')
    .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' }))
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** `true` or `false` exactly, as the AWS SDK reads its boolean variables (it refuses anything else too). */
const awsBool = z
  .enum(['true', 'false'], { message: 'must be true or false' })
  .default('false')
  .transform((v) => v === 'true');

const endpointUrl = () => z.url({ message: 'must be a URL such as http://127.0.0.1:8000' }).optional();

const name = (fallback: string) => z.string().trim().min(1, 'must not be empty').default(fallback);

/** The engine's settings when nothing is configured (HAMi's defaults): the environment's defaults below are these. */
export const defaultEngineConfig: EngineConfig = {
  resourceCountName: 'nvidia.com/gpu',
  resourceMemoryName: 'nvidia.com/gpumem',
  resourceMemoryPercentageName: 'nvidia.com/gpumem-percentage',
  resourceCoreName: 'nvidia.com/gpucores',
  neuronResourceName: 'aws.amazon.com/neuron',
  neuronCoreResourceName: 'aws.amazon.com/neuroncore',
  defaultMemory: 0,
  defaultCores: 0,
  memoryFactor: 1,
  nodeSchedulerPolicy: 'binpack',
  gpuSchedulerPolicy: 'spread',
  realtime: { enabled: false, mode: 'strict', marginMiB: 100, maxAgeMs: 60_000 },
};

/** The engine's settings (`EngineConfig`): the control plane's rules, which the relay's webhook and hami-diag apply too. */
const engineEnvSchema = z.object({
  HAMI_NODE_SCHEDULER_POLICY: z.enum(['binpack', 'spread'], { message: 'must be binpack or spread' }).default('binpack'),
  HAMI_GPU_SCHEDULER_POLICY: z
    .string()
    .trim()
    .refine(
      (v) => v.split(',').every((p) => ['binpack', 'spread', 'topology-aware', 'mutex', 'numa'].includes(p.trim())),
      'must be binpack, spread, topology-aware, mutex, numa or a comma chain of them',
    )
    .default('spread'),
  HAMI_RESOURCE_COUNT_NAME: name(defaultEngineConfig.resourceCountName),
  HAMI_RESOURCE_MEMORY_NAME: name(defaultEngineConfig.resourceMemoryName),
  HAMI_RESOURCE_MEMORY_PERCENTAGE_NAME: name(defaultEngineConfig.resourceMemoryPercentageName),
  HAMI_RESOURCE_CORE_NAME: name(defaultEngineConfig.resourceCoreName),
  HAMI_RESOURCE_NEURON_NAME: name(defaultEngineConfig.neuronResourceName),
  HAMI_RESOURCE_NEURONCORE_NAME: name(defaultEngineConfig.neuronCoreResourceName),
  HAMI_DEFAULT_MEMORY: intIn(0, 2_147_483_647, 0),
  HAMI_DEFAULT_CORES: intIn(0, 100, 0),
  HAMI_MEMORY_FACTOR: intIn(1, 1_000_000, 1),
  HAMI_REALTIME_CHECK: bool(false),
  HAMI_REALTIME_CHECK_MODE: z.enum(['strict', 'warning', 'disabled'], { message: 'must be strict, warning or disabled' }).default('strict'),
  HAMI_REALTIME_MARGIN_MIB: intIn(0, 1_048_576, 100),
  HAMI_REALTIME_MAX_AGE_SECONDS: intIn(1, 86_400, 60),
});

/** How long an unconfirmed reservation holds cards: the control plane's rule, also read by the relay (decide-ahead). */
const reservationEnvSchema = z.object({ HAMI_RESERVATION_TTL_SECONDS: intIn(10, 86_400, 600) });

const envSchema = engineEnvSchema.extend({
  STATE_TABLE: name('hami-state'),
  RECORDS_TABLE: name('hami-records'),
  /** A DynamoDB-compatible endpoint (dynalite, DynamoDB Local, LocalStack); unset in AWS. Wins over the AWS variables below. */
  DDB_ENDPOINT: endpointUrl(),
  AWS_REGION: name('us-east-1'),
  // The AWS SDK's endpoint settings, read as it reads them for DynamoDB (lib/store/dynamoEndpoint.ts).
  AWS_ENDPOINT_URL_DYNAMODB: endpointUrl(),
  AWS_ENDPOINT_URL: endpointUrl(),
  AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: awsBool,
  AWS_USE_FIPS_ENDPOINT: awsBool,
  AWS_USE_DUALSTACK_ENDPOINT: awsBool,
  HAMI_LOG_VERBOSITY: intIn(0, 5, 0),
  HAMI_NODE_LOCK_EXPIRE_SECONDS: intIn(1, 86_400, 300),
  /** How long /bind waits for an allocation in progress to end before answering HAMi's contention text (below the relay's deadline and API Gateway's 29 s). */
  HAMI_BIND_LOCK_WAIT_SECONDS: intIn(0, 20, 5),
  /** Prefer nodes no other pod is allocating on (false: HAMi's exact choice). */
  HAMI_LOCK_AWARE: bool(true),
  /** A filter's reservation counts until the pod is seen with its annotations, or for this long. */
  HAMI_RESERVATION_TTL_SECONDS: reservationEnvSchema.shape.HAMI_RESERVATION_TTL_SECONDS,
  HAMI_RECORD_RETENTION_HOURS: intIn(1, 24 * 90, 24),
  /** GPU-aware preemption (docs/preemption.md): `on`, `off`, or `log` (decide and explain, evict nothing). */
  HAMI_PREEMPTION: z.enum(PREEMPTION_MODES, { message: 'must be on, off or log' }).default('on'),
  /** How long the cards freed by a preemption are held for the preemptor, at most (docs/preemption.md). */
  HAMI_PREEMPTION_HOLD_SECONDS: intIn(10, 3600, 300),
  /** A warm view not synced for this long syncs before deciding (docs/state.md, "Warm view"). */
  HAMI_VIEW_MAX_AGE_MS: intIn(0, 600_000, 1000),
  /** Local server only: every route requires `Authorization: Bearer <token>` when set. */
  HAMI_API_TOKEN: z.string().min(8, 'must be at least 8 characters').optional(),
});

export interface AppConfig extends ControlConfig {
  readonly stateTable: string;
  readonly recordsTable: string;
  /**
   * Where the store is, resolved once at start (`storeEndpoint`): DDB_ENDPOINT, else AWS_ENDPOINT_URL_DYNAMODB, else
   * AWS_ENDPOINT_URL (unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS), else DynamoDB's endpoint for the region,
   * FIPS and dual-stack as AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT say.
   */
  readonly ddbEndpoint?: string;
  /** A local endpoint without AWS credentials in the environment gets placeholder credentials (DynamoDB Local, dynalite). */
  readonly localCredentials: boolean;
  /** AWS_REGION; a FIPS pseudo-region (`us-east-1-fips`) as its real region, FIPS being in `ddbEndpoint`. */
  readonly region: string;
  readonly logVerbosity: number;
  readonly recordRetentionHours: number;
  readonly viewMaxAgeMs: number;
  readonly apiToken?: string;
}

/** Whether the environment names AWS credentials the SDK's default chain would use. */
function hasAwsCredentials(env: Readonly<Record<string, string | undefined>>): boolean {
  return ['AWS_ACCESS_KEY_ID', 'AWS_PROFILE', 'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_CONTAINER_CREDENTIALS_FULL_URI', 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'].some(
    (key) => (env[key] ?? '') !== '',
  );
}

type Env = z.infer<typeof envSchema>;

/** The store's endpoint and the region to sign for, by DynamoDB's endpoint rules; a clash fails start-up naming its variables. */
function storeEndpoint(e: Env): { readonly endpoint: string; readonly region: string } {
  const ignoreAws = e.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS;
  const custom =
    e.DDB_ENDPOINT !== undefined
      ? { variable: 'DDB_ENDPOINT', url: e.DDB_ENDPOINT }
      : !ignoreAws && e.AWS_ENDPOINT_URL_DYNAMODB !== undefined
        ? { variable: 'AWS_ENDPOINT_URL_DYNAMODB', url: e.AWS_ENDPOINT_URL_DYNAMODB }
        : !ignoreAws && e.AWS_ENDPOINT_URL !== undefined
          ? { variable: 'AWS_ENDPOINT_URL', url: e.AWS_ENDPOINT_URL }
          : undefined;
  try {
    const resolved = resolveDynamoEndpoint({
      region: e.AWS_REGION,
      ...(custom ? { endpoint: custom.url } : {}),
      useFipsEndpoint: e.AWS_USE_FIPS_ENDPOINT,
      useDualStackEndpoint: e.AWS_USE_DUALSTACK_ENDPOINT,
    });
    return { endpoint: resolved.url, region: realRegion(e.AWS_REGION).region };
  } catch (err) {
    if (!(err instanceof DynamoEndpointError)) throw err;
    const variables: Record<EndpointSetting, string> = {
      region: 'AWS_REGION',
      endpoint: custom?.variable ?? 'DDB_ENDPOINT',
      fips: 'AWS_USE_FIPS_ENDPOINT',
      dualStack: 'AWS_USE_DUALSTACK_ENDPOINT',
    };
    throw new ConfigError([`${err.settings.map((setting) => variables[setting]).join(', ')}: ${err.message}`]);
  }
}

/** The variables `schema` names, set and non-empty, parsed; throws ConfigError listing every bad one. */
function parseEnv<S extends z.ZodObject>(schema: S, env: Readonly<Record<string, string | undefined>>): z.output<S> {
  const present: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') present[key] = value;
  }
  const parsed = schema.safeParse(present);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return parsed.data;
}

function engineConfigOf(e: z.output<typeof engineEnvSchema>): EngineConfig {
  return {
    resourceCountName: e.HAMI_RESOURCE_COUNT_NAME,
    resourceMemoryName: e.HAMI_RESOURCE_MEMORY_NAME,
    resourceMemoryPercentageName: e.HAMI_RESOURCE_MEMORY_PERCENTAGE_NAME,
    resourceCoreName: e.HAMI_RESOURCE_CORE_NAME,
    neuronResourceName: e.HAMI_RESOURCE_NEURON_NAME,
    neuronCoreResourceName: e.HAMI_RESOURCE_NEURONCORE_NAME,
    defaultMemory: e.HAMI_DEFAULT_MEMORY,
    defaultCores: e.HAMI_DEFAULT_CORES,
    memoryFactor: e.HAMI_MEMORY_FACTOR,
    nodeSchedulerPolicy: e.HAMI_NODE_SCHEDULER_POLICY,
    gpuSchedulerPolicy: e.HAMI_GPU_SCHEDULER_POLICY,
    realtime: {
      enabled: e.HAMI_REALTIME_CHECK,
      mode: e.HAMI_REALTIME_CHECK_MODE,
      marginMiB: e.HAMI_REALTIME_MARGIN_MIB,
      maxAgeMs: e.HAMI_REALTIME_MAX_AGE_SECONDS * 1000,
    },
  };
}

/**
 * The engine's settings alone, from the same variables and by the same rules as `loadConfig` (no store settings):
 * for the relay's webhook and hami-diag, which apply the control plane's rules. Throws ConfigError.
 */
export function loadEngineConfig(env: Readonly<Record<string, string | undefined>> = process.env): EngineConfig {
  return engineConfigOf(parseEnv(engineEnvSchema, env));
}

/** Parses the environment; throws ConfigError listing every bad variable. */
/** The reservation TTL alone, without the store settings `loadConfig` also resolves. */
export function loadReservationTtlSeconds(env: Readonly<Record<string, string | undefined>> = process.env): number {
  return parseEnv(reservationEnvSchema, env).HAMI_RESERVATION_TTL_SECONDS;
}

export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): AppConfig {
  const e = parseEnv(envSchema, env);
  const store = storeEndpoint(e);
  return {
    stateTable: e.STATE_TABLE,
    recordsTable: e.RECORDS_TABLE,
    ddbEndpoint: store.endpoint,
    localCredentials: e.DDB_ENDPOINT !== undefined && !hasAwsCredentials(env),
    region: store.region,
    logVerbosity: e.HAMI_LOG_VERBOSITY,
    engine: engineConfigOf(e),
    nodeLockExpireSeconds: e.HAMI_NODE_LOCK_EXPIRE_SECONDS,
    bindLockWaitSeconds: e.HAMI_BIND_LOCK_WAIT_SECONDS,
    lockAware: e.HAMI_LOCK_AWARE,
    reservationTtlSeconds: e.HAMI_RESERVATION_TTL_SECONDS,
    preemption: e.HAMI_PREEMPTION,
    preemptionHoldSeconds: e.HAMI_PREEMPTION_HOLD_SECONDS,
    recordRetentionHours: e.HAMI_RECORD_RETENTION_HOURS,
    viewMaxAgeMs: e.HAMI_VIEW_MAX_AGE_MS,
    ...(e.HAMI_API_TOKEN ? { apiToken: e.HAMI_API_TOKEN } : {}),
  };
}
