/** hami-diag's command line, parsed into a command (pure: argv and environment in). */
import { parseArgs } from 'node:util';
import { UsageError } from './errors';

export const usage = `Usage:
  hami-diag pod <namespace>/<name> [--json] [--detail] [--history]
  hami-diag node <name> [--json]

Options:
  --server URL        scheduler API (env HAMI_API_URL, default http://127.0.0.1:8080)
  --token TOKEN       bearer token (env HAMI_API_TOKEN)
  --scheduler-name N  schedulerName that calls the extender (env HAMI_SCHEDULER_NAME, default hami-scheduler)
  --json              print the API's JSON instead of tables
  --detail            per-card evidence (pod)
  --history           earlier attempts (pod)
  --help              this text

Exit codes: 0 shown, 1 no record / unknown node, 2 usage or API error.`;

export const defaultServer = 'http://127.0.0.1:8080';

interface Common {
  readonly server: string;
  readonly token?: string;
  readonly json: boolean;
}

export type Command =
  | { readonly kind: 'help' }
  | (Common & {
      readonly kind: 'pod';
      readonly namespace: string;
      readonly name: string;
      readonly detail: boolean;
      readonly history: boolean;
      readonly schedulerName: string;
    })
  | (Common & { readonly kind: 'node'; readonly name: string });

export function parseCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        server: { type: 'string' },
        token: { type: 'string' },
        'scheduler-name': { type: 'string' },
        json: { type: 'boolean', default: false },
        detail: { type: 'boolean', default: false },
        history: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    // parseArgs' messages may carry an `TypeError [ERR_…]:` prefix and a long tip; keep the first sentence.
    const message = (err instanceof Error ? err.message : String(err)).replace(/^[^:]*\[ERR_[A-Z_]+\]: /, '').split('. ')[0] ?? '';
    throw new UsageError(`${message}; see hami-diag --help`, { cause: err });
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) return { kind: 'help' };
  const [verb, target, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const token = nonEmpty(values.token) ?? nonEmpty(env.HAMI_API_TOKEN);
  const common = {
    server: nonEmpty(values.server) ?? nonEmpty(env.HAMI_API_URL) ?? defaultServer,
    json: values.json,
    ...(token === undefined ? {} : { token }),
  };
  switch (verb) {
    case 'pod': {
      const match = /^([^/\s]+)\/([^/\s]+)$/.exec(target ?? '');
      if (!match?.[1] || !match[2]) throw new UsageError('pod needs <namespace>/<name>, e.g. hami-diag pod default/gpu-pod');
      return {
        kind: 'pod',
        ...common,
        namespace: match[1],
        name: match[2],
        detail: values.detail,
        history: values.history,
        schedulerName: nonEmpty(values['scheduler-name']) ?? nonEmpty(env.HAMI_SCHEDULER_NAME) ?? 'hami-scheduler',
      };
    }
    case 'node':
      if (!target) throw new UsageError('node needs a node name, e.g. hami-diag node gpu-node-1');
      if (values.detail || values.history) throw new UsageError('--detail and --history apply to pod only');
      return { kind: 'node', ...common, name: target };
    default:
      throw new UsageError(`unknown command "${verb}"; use pod or node`);
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
