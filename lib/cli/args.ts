/** hami-diag's (and kubectl hami's) command line, parsed into a command (pure: argv and environment in). */
import { parseArgs } from 'node:util';
import { UsageError } from './errors';
import type { KubeSelection } from './kubeClusterReader';
import { kubeFlags, kubeFlagsHelp, kubeSelectionOf, parseRelayFlags, relayFlags, relayFlagsHelp, type RelayOptions } from './relayRoute';
import { optionList } from './style';
import { errorMessage } from '../errors';

/** How the program was invoked: its help, its errors and its default route follow (lib/cli/program.ts). */
export type Program = 'hami-diag' | 'kubectl hami';

/** The program as the script that started it is named: bin/kubectl-hami (found by kubectl on the PATH) or bin/hami-diag.js. */
export function programOf(script: string | undefined): Program {
  return /(^|[/\\])kubectl-hami(\.[a-z]+)?$/i.test(script ?? '') ? 'kubectl hami' : 'hami-diag';
}

export const defaultServer = 'http://127.0.0.1:8080';

/** The route each program takes by default, said in its help. */
const routeHelp: Readonly<Record<Program, string>> = {
  'kubectl hami': `  through the Kubernetes API (default): the relay's user port via the API server's service proxy, with your
  kubeconfig's credentials (you need get on services/proxy for the relay's Service); --server (or HAMI_API_URL)
  asks a server directly instead`,
  'hami-diag': `  --server (default ${defaultServer}, npm start; env HAMI_API_URL) with --token; --context, --kubeconfig or
  a --relay-* flag asks the relay through the Kubernetes API instead, as kubectl hami does`,
};

export function usage(program: Program): string {
  const other: Program = program === 'kubectl hami' ? 'hami-diag' : 'kubectl hami';
  return `Usage:
  ${program} pod <name> [-n <namespace>] [-o json|yaml|wide] [--detail] [--history]
  ${program} pod <namespace>/<name> [-o json|yaml|wide] [--detail] [--history]
  ${program} pod [-n <namespace> | -A] [-o json|yaml|wide]   the latest attempt of each pod
  ${program} node <name> [-o json|yaml]
  ${program} node [-o json|yaml|wide]                       every node's cards
  ${program} ui [--port N] [--no-browser] ...   the web console with your kubeconfig (see ui --help)
  ${program} --version
The same program is also ${other}: ${other === 'kubectl hami' ? 'kubectl hami pod <name> -n <namespace>' : 'hami-diag pod <name> -n <namespace>'}

Where it asks:
${routeHelp[program]}

Options:
${optionList([
    ['-n, --namespace NS', 'the pod\'s namespace (default: the kubeconfig context\'s namespace, else "default")'],
    ['-A, --all-namespaces', 'list the pods of every namespace (pod without a name)'],
    ['-o, --output FMT', 'json or yaml: the API\'s answer with every field it returns; wide: more columns (lists)\nor per-card evidence (pod); text (default): tables'],
    ['--json', 'same as -o json'],
    ...kubeFlagsHelp,
    ...relayFlagsHelp,
    ['--server URL', `scheduler API (env HAMI_API_URL; default ${defaultServer} as hami-diag)`],
    ['--token TOKEN', 'bearer token with --server (env HAMI_API_TOKEN)'],
    ['--scheduler-name N', 'schedulerName that calls the extender (env HAMI_SCHEDULER_NAME, default hami-scheduler)'],
    ['--detail', 'per-card evidence (pod)'],
    ['--history', 'earlier attempts (pod)'],
    ['--version', 'print the version'],
    ['-h, --help', 'this text'],
  ])}

A pod without a record gets HAMi's debugging decision tree, with the control plane's resource names
from the environment (HAMI_RESOURCE_COUNT_NAME and the others; unset, HAMi's).

Exit codes: 0 shown, 1 no record / unknown node, 2 usage or API error.`;
}

export type Output = 'text' | 'json' | 'yaml' | 'wide';

/** Where the API is asked: a server directly, or the relay through kube-apiserver with the kubeconfig's credentials. */
export type Route = { readonly kind: 'server'; readonly server: string; readonly token?: string } | ({ readonly kind: 'kube' } & RelayOptions);

interface Common {
  readonly route: Route;
  /** `--kubeconfig` and `--context`: the cluster asked (kube route) and read for the decision tree (both routes). */
  readonly kube: KubeSelection;
  readonly output: Output;
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
  /** `namespace` undefined: every namespace (-A). */
  | (Common & { readonly kind: 'pods'; readonly namespace?: string })
  | (Common & { readonly kind: 'node'; readonly name: string })
  | (Common & { readonly kind: 'nodes' });

export interface ParseOptions {
  readonly program?: Program;
  /**
   * The selected context's namespace, as kubectl uses it when no `-n` is given; called only then. Undefined (no
   * kubeconfig, or a context without one) means `default`, as in kubectl.
   */
  readonly contextNamespace?: (kube: KubeSelection) => string | undefined;
}

const OUTPUTS: readonly Output[] = ['text', 'json', 'yaml', 'wide'];

export function parseCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, opts: ParseOptions = {}): Command {
  const program = opts.program ?? 'hami-diag';
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
        'all-namespaces': { type: 'boolean', short: 'A', default: false },
        ...kubeFlags,
        ...relayFlags,
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
    throw new UsageError(`${message}; see ${program} --help`, { cause: err });
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  if (positionals.length === 0) return { kind: 'help' };
  const output = values.json ? 'json' : (values.output ?? 'text');
  if (!(OUTPUTS as readonly string[]).includes(output)) throw new UsageError(`--output must be json, yaml, wide or text (got "${output}")`);
  const [verb, target, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const kube = kubeSelectionOf(values);
  const common: Common = { route: route(program, values, env, kube), kube, output: output as Output };
  const all = values['all-namespaces'];
  switch (verb) {
    case 'pod': {
      if (target === undefined) {
        if (values.detail || values.history) throw new UsageError(`--detail and --history apply to one pod, e.g. ${program} pod gpu-pod -n default --detail`);
        if (all && values.namespace !== undefined) throw new UsageError('-A lists every namespace and -n one: give one of them');
        if (all) return { kind: 'pods', ...common };
        return { kind: 'pods', ...common, namespace: nonEmpty(values.namespace) ?? nonEmpty(opts.contextNamespace?.(kube)) ?? 'default' };
      }
      if (all) throw new UsageError(`-A lists the pods of every namespace: give no pod name with it (${program} pod -A)`);
      const { namespace, name } = podTarget(program, target, nonEmpty(values.namespace), () => opts.contextNamespace?.(kube));
      return {
        kind: 'pod',
        ...common,
        namespace,
        name,
        detail: values.detail || output === 'wide',
        history: values.history,
        schedulerName: nonEmpty(values['scheduler-name']) ?? nonEmpty(env.HAMI_SCHEDULER_NAME) ?? 'hami-scheduler',
      };
    }
    case 'node':
      if (values.detail || values.history) throw new UsageError('--detail and --history apply to pod only');
      if (values.namespace !== undefined || all) throw new UsageError('nodes have no namespace; -n and -A apply to pod only');
      if (target === undefined || target === '') return { kind: 'nodes', ...common };
      return { kind: 'node', ...common, name: target };
    default:
      throw new UsageError(`unknown command "${verb}"; use pod, node or ui (see ${program} --help)`);
  }
}

/**
 * `--server` (or HAMI_API_URL) asks that server. Otherwise `kubectl hami` asks the relay through the Kubernetes API,
 * and `hami-diag` asks the local server unless a kubeconfig flag or a relay flag says to go through the cluster.
 */
function route(
  program: Program,
  values: { readonly server?: string | undefined; readonly token?: string | undefined } & { readonly [K in keyof typeof relayFlags]?: string | undefined },
  env: Readonly<Record<string, string | undefined>>,
  kube: KubeSelection,
): Route {
  const relayGiven = Object.keys(relayFlags).filter((flag) => values[flag as keyof typeof relayFlags] !== undefined);
  const server = nonEmpty(values.server) ?? nonEmpty(env.HAMI_API_URL);
  const viaKube = server === undefined && (program === 'kubectl hami' || relayGiven.length > 0 || kube.context !== undefined || kube.kubeconfig !== undefined);
  if (viaKube) {
    if (nonEmpty(values.token) !== undefined) throw new UsageError('--token goes with --server; through the Kubernetes API your kubeconfig\'s credentials are used');
    return { kind: 'kube', ...parseRelayFlags(values) };
  }
  if (relayGiven.length > 0) throw new UsageError(`--${relayGiven[0]} applies through the Kubernetes API, not with --server or HAMI_API_URL`);
  const token = nonEmpty(values.token) ?? nonEmpty(env.HAMI_API_TOKEN);
  return { kind: 'server', server: server ?? defaultServer, ...(token === undefined ? {} : { token }) };
}

/** `name` (namespace from -n, the kubeconfig context, else "default") or `namespace/name`. */
function podTarget(program: Program, target: string, flag: string | undefined, contextNamespace: () => string | undefined): { namespace: string; name: string } {
  const dns = /^[^/\s]+$/;
  if (target === '') throw new UsageError(`pod needs a name, e.g. ${program} pod gpu-pod -n default`);
  const slash = /^([^/\s]+)\/([^/\s]+)$/.exec(target);
  if (slash?.[1] && slash[2]) {
    if (flag !== undefined && flag !== slash[1]) throw new UsageError(`the namespace is given twice: "${slash[1]}/" and -n ${flag}`);
    return { namespace: slash[1], name: slash[2] };
  }
  if (!dns.test(target)) throw new UsageError(`"${target}" is not a pod name; use <name> -n <namespace> or <namespace>/<name>`);
  return { namespace: flag ?? nonEmpty(contextNamespace()) ?? 'default', name: target };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
