/**
 * Node agent configuration from the environment, validated once at start so a typo fails the pod at
 * once (CrashLoopBackOff with the variable named) instead of silently reporting nothing.
 */
import { z } from 'zod';
import { NodeAgentConfigError } from './errors';

export interface NodeAgentConfig {
  /** The Node this agent reports for (downward API `spec.nodeName`). */
  readonly nodeName: string;
  /** Seconds between GPU readings. */
  readonly intervalSeconds: number;
  /** Seconds after which an unchanged report is written again, so the control plane sees it as fresh. */
  readonly refreshSeconds: number;
  /** The control plane's staleness limit (HAMI_REALTIME_MAX_AGE_SECONDS); refreshSeconds must stay below it. */
  readonly maxAgeSeconds: number;
  /** Path or name of the nvidia-smi binary. */
  readonly nvidiaSmiPath: string;
  /** Seconds before a hung nvidia-smi is killed. */
  readonly timeoutSeconds: number;
  /** Upper bound of the wait between attempts after repeated failures. */
  readonly maxBackoffSeconds: number;
  /** Query compute processes for `processCount` (needs the host PID namespace to see other pods' processes). */
  readonly reportProcessCount: boolean;
  /** A utilization move of at least this many percentage points counts as a change worth a patch. */
  readonly utilizationChangePercent: number;
  /** Port of the liveness endpoint (`GET /healthz`); 0 turns it off. */
  readonly healthPort: number;
}

export const defaultNodeAgentSettings: Omit<NodeAgentConfig, 'nodeName'> = {
  intervalSeconds: 5,
  refreshSeconds: 30,
  maxAgeSeconds: 60,
  nvidiaSmiPath: 'nvidia-smi',
  timeoutSeconds: 10,
  maxBackoffSeconds: 60,
  reportProcessCount: true,
  utilizationChangePercent: 10,
  healthPort: 8081,
};

// An empty variable means "use the default", as a Helm value left blank would.
const unsetIfBlank = (v: unknown): unknown => (typeof v === 'string' && v.trim() === '' ? undefined : v);

const wholeNumber = (min: number, max: number, fallback: number) =>
  z.preprocess(
    unsetIfBlank,
    z
      .string()
      .trim()
      .regex(/^\d+$/, `expected a whole number from ${min} to ${max}`)
      .transform(Number)
      .pipe(z.number().min(min, `expected a whole number from ${min} to ${max}`).max(max, `expected a whole number from ${min} to ${max}`))
      .optional(),
  ).transform((v) => v ?? fallback);

const flag = (fallback: boolean) =>
  z
    .preprocess(unsetIfBlank, z.enum(['true', 'false'], { error: 'expected "true" or "false"' }).optional())
    .transform((v) => (v === undefined ? fallback : v === 'true'));

const d = defaultNodeAgentSettings;
const envSchema = z
  .object({
    NODE_NAME: z.preprocess(
      unsetIfBlank,
      z.string({ error: 'must be set to the node name (downward API fieldRef spec.nodeName)' }).trim(),
    ),
    HAMI_NODE_AGENT_INTERVAL_SECONDS: wholeNumber(1, 3600, d.intervalSeconds),
    HAMI_NODE_AGENT_REFRESH_SECONDS: wholeNumber(1, 3600, d.refreshSeconds),
    HAMI_REALTIME_MAX_AGE_SECONDS: wholeNumber(1, 86400, d.maxAgeSeconds),
    HAMI_NODE_AGENT_NVIDIA_SMI: z.preprocess(unsetIfBlank, z.string().trim().optional()).transform((v) => v ?? d.nvidiaSmiPath),
    HAMI_NODE_AGENT_TIMEOUT_SECONDS: wholeNumber(1, 300, d.timeoutSeconds),
    HAMI_NODE_AGENT_MAX_BACKOFF_SECONDS: wholeNumber(1, 3600, d.maxBackoffSeconds),
    HAMI_NODE_AGENT_PROCESS_COUNT: flag(d.reportProcessCount),
    HAMI_NODE_AGENT_UTILIZATION_CHANGE: wholeNumber(0, 100, d.utilizationChangePercent),
    HAMI_NODE_AGENT_HEALTH_PORT: wholeNumber(0, 65535, d.healthPort),
  })
  .superRefine((env, ctx) => {
    if (env.HAMI_NODE_AGENT_REFRESH_SECONDS >= env.HAMI_REALTIME_MAX_AGE_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['HAMI_NODE_AGENT_REFRESH_SECONDS'],
        message: `must be below HAMI_REALTIME_MAX_AGE_SECONDS (${env.HAMI_REALTIME_MAX_AGE_SECONDS}), or reports go stale between refreshes`,
      });
    }
    if (env.HAMI_NODE_AGENT_INTERVAL_SECONDS > env.HAMI_NODE_AGENT_REFRESH_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['HAMI_NODE_AGENT_INTERVAL_SECONDS'],
        message: `must not exceed HAMI_NODE_AGENT_REFRESH_SECONDS (${env.HAMI_NODE_AGENT_REFRESH_SECONDS})`,
      });
    }
    if (env.HAMI_NODE_AGENT_MAX_BACKOFF_SECONDS < env.HAMI_NODE_AGENT_INTERVAL_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['HAMI_NODE_AGENT_MAX_BACKOFF_SECONDS'],
        message: `must not be below HAMI_NODE_AGENT_INTERVAL_SECONDS (${env.HAMI_NODE_AGENT_INTERVAL_SECONDS})`,
      });
    }
  });

/** Reads and validates the agent's variables; throws NodeAgentConfigError naming every bad key. */
export function loadNodeAgentConfig(env: Readonly<Record<string, string | undefined>>): NodeAgentConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({ key: String(issue.path[0] ?? '(environment)'), message: issue.message }));
    const text = issues.map((i) => `${i.key}: ${i.message}`).join('; ');
    throw new NodeAgentConfigError(`invalid node agent configuration: ${text}`, issues);
  }
  const e = parsed.data;
  return {
    nodeName: e.NODE_NAME,
    intervalSeconds: e.HAMI_NODE_AGENT_INTERVAL_SECONDS,
    refreshSeconds: e.HAMI_NODE_AGENT_REFRESH_SECONDS,
    maxAgeSeconds: e.HAMI_REALTIME_MAX_AGE_SECONDS,
    nvidiaSmiPath: e.HAMI_NODE_AGENT_NVIDIA_SMI,
    timeoutSeconds: e.HAMI_NODE_AGENT_TIMEOUT_SECONDS,
    maxBackoffSeconds: e.HAMI_NODE_AGENT_MAX_BACKOFF_SECONDS,
    reportProcessCount: e.HAMI_NODE_AGENT_PROCESS_COUNT,
    utilizationChangePercent: e.HAMI_NODE_AGENT_UTILIZATION_CHANGE,
    healthPort: e.HAMI_NODE_AGENT_HEALTH_PORT,
  };
}
