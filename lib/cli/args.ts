/** hami-diag's command line, parsed into a command (pure: argv and environment in). */
import { parseArgs } from 'node:util';
import { UsageError } from './errors';
import { errorMessage } from '../errors';

export const usage = `Usage:
  hami-diag pod <name> [-n <namespace>] [-o json] [--detail] [--history]
  hami-diag pod <namespace>/<name> [-o json] [--detail] [--history]
  hami-diag node <name> [-o json]
  hami-diag --version
  hami-diag ui [--port N] [--no-browser] ...   the web console with your kubeconfig (see ui --help)
As a kubectl plugin the same commands read: kubectl hami pod <name> -n <namespace>

Options:
  -n, --namespace NS  the pod's namespace (default: the kubeconfig context's namespace, else "default")
  -o, --output FMT    json: the API's answer with every field it returns; text (default): tables
  --json              same as -o json
  --server URL        scheduler API (env HAMI_API_URL, default http://127.0.0.1:8080)
  --token TOKEN       bearer token (env HAMI_API_TOKEN)
  --scheduler-name N  schedulerName that calls the extender (env HAMI_SCHEDULER_NAME, default hami-scheduler)
  --detail            per-card evidence (pod)
  --history           earlier attempts (pod)
  --version           print the version
  -h, --help          this text

Exit codes: 0 shown, 1 no record / unknown node, 2 usage or API error.`;

export const defaultServer = 'http://127.0.0.1:8080';

interface Common {
  readonly server: string;
  readonly token?: string;
  readonly json: boolean;
}

export type Command =
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | (Common & {
      readonly kind: 'pod';
      readonly namespace: string;
      readonly name: string;
      readonly detail: boolean;
      readonly history: boolean;
      readonly schedulerName: string;
    })
  | (Common & { readonly kind: 'node'; readonly name: string });

/**
 * `contextNamespace` reads the kubeconfig's current-context namespace, as kubectl uses it when no `-n` is given;
 * it is called only then. Undefined (no kubeconfig, or a context without one) means `default`, as in kubectl.
 */
export function parseCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, contextNamespace?: () => string | undefined): Command {
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
        namespace: { type: 'string', short: 'n' },
        output: { type: 'string', short: 'o' },
        version: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        detail: { type: 'boolean', default: false },
        history: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    // parseArgs' messages may carry an `TypeError [ERR_…]:` prefix and a long tip; keep the first sentence.
    const message = (errorMessage(err)).replace(/^[^:]*\[ERR_[A-Z_]+\]: /, '').split('. ')[0] ?? '';
    throw new UsageError(`${message}; see hami-diag --help`, { cause: err });
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  if (positionals.length === 0) return { kind: 'help' };
  if (values.output !== undefined && values.output !== 'json' && values.output !== 'text') {
    throw new UsageError(`--output must be json or text (got "${values.output}")`);
  }
  const [verb, target, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const token = nonEmpty(values.token) ?? nonEmpty(env.HAMI_API_TOKEN);
  const common = {
    server: nonEmpty(values.server) ?? nonEmpty(env.HAMI_API_URL) ?? defaultServer,
    json: values.json || values.output === 'json',
    ...(token === undefined ? {} : { token }),
  };
  switch (verb) {
    case 'pod': {
      const { namespace, name } = podTarget(target, nonEmpty(values.namespace), contextNamespace);
      return {
        kind: 'pod',
        ...common,
        namespace,
        name,
        detail: values.detail,
        history: values.history,
        schedulerName: nonEmpty(values['scheduler-name']) ?? nonEmpty(env.HAMI_SCHEDULER_NAME) ?? 'hami-scheduler',
      };
    }
    case 'node':
      if (!target) throw new UsageError('node needs a node name, e.g. hami-diag node gpu-node-1');
      if (values.detail || values.history) throw new UsageError('--detail and --history apply to pod only');
      if (values.namespace !== undefined) throw new UsageError('nodes have no namespace; -n applies to pod only');
      return { kind: 'node', ...common, name: target };
    default:
      throw new UsageError(`unknown command "${verb}"; use pod or node`);
  }
}

/** `name` (namespace from -n, the kubeconfig context, else "default") or `namespace/name`. */
function podTarget(target: string | undefined, flag: string | undefined, contextNamespace: (() => string | undefined) | undefined): { namespace: string; name: string } {
  const dns = /^[^/\s]+$/;
  if (target === undefined || target === '') throw new UsageError('pod needs a name, e.g. hami-diag pod gpu-pod -n default');
  const slash = /^([^/\s]+)\/([^/\s]+)$/.exec(target);
  if (slash?.[1] && slash[2]) {
    if (flag !== undefined && flag !== slash[1]) throw new UsageError(`the namespace is given twice: "${slash[1]}/" and -n ${flag}`);
    return { namespace: slash[1], name: slash[2] };
  }
  if (!dns.test(target)) throw new UsageError(`"${target}" is not a pod name; use <name> -n <namespace> or <namespace>/<name>`);
  return { namespace: flag ?? nonEmpty(contextNamespace?.()) ?? 'default', name: target };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
