/**
 * hami-diag (and kubectl hami) as a function: arguments, environment and ports in, exit code out. main.ts wires it to
 * the process; tests call it directly.
 */
import { stringify } from 'yaml';
import type { z } from 'zod';
import { getNodeDevices, getSchedulerLog, listAll, type ApiOptions } from './apiClient';
import { parseCommand, usage, type Command, type Program } from './args';
import { ApiResponseError, CliError } from './errors';
import { loadKubeConfig, type KubeSelection } from './kubeClusterReader';
import { kubeRequest } from './relayRoute';
import { renderNodesText, renderPodsText, summaryRowSchema } from './renderList';
import { walkDecisionTree, type ClusterAccess, type ClusterNode } from '../diagnostics/decisionTree';
import { nodeDevicesSchema } from '../diagnostics/nodeDevices';
import { loadEngineConfig } from '../config';
import { renderNodeDevicesText, renderNotFoundText, renderSchedulerLogText } from './render';
import { ansi, plain, shouldUseColour } from './style';
import { VERSION } from '../version';
import { ConfigError, errorMessage } from '../errors';

export interface CliDeps {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown };
  /** How it was invoked (default hami-diag): its help, its errors and its default route follow. */
  readonly program?: Program;
  /** Built only when needed (a pod without a record), on the kubeconfig and context the command line selects. */
  readonly cluster: (kube: KubeSelection) => ClusterAccess;
  readonly now: () => number;
  readonly timeoutMs?: number;
  /** The selected context's namespace (kubectl's default for -n); read only when a pod has no namespace. */
  readonly contextNamespace?: (kube: KubeSelection) => string | undefined;
  /** The kubeconfig for the route through the Kubernetes API (default: found as kubectl finds it, from `env`). */
  readonly kubeConfig?: (kube: KubeSelection) => ReturnType<typeof loadKubeConfig>;
}

export const ExitCode = { Ok: 0, NotFound: 1, Error: 2 } as const;

export async function run(argv: readonly string[], deps: CliDeps): Promise<number> {
  const program = deps.program ?? 'hami-diag';
  try {
    const command = parseCommand(argv, deps.env, { program, ...(deps.contextNamespace ? { contextNamespace: deps.contextNamespace } : {}) });
    return await execute(command, deps, program);
  } catch (err) {
    if (err instanceof CliError) {
      deps.stderr.write(`${program}: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}

async function execute(command: Command, deps: CliDeps, program: Program): Promise<number> {
  if (command.kind === 'help') {
    deps.stdout.write(`${usage(program)}\n`);
    return ExitCode.Ok;
  }
  if (command.kind === 'version') {
    deps.stdout.write(`${program} ${VERSION}\n`);
    return ExitCode.Ok;
  }
  const api = await apiOptions(command, deps);
  const style = shouldUseColour(deps.stdout.isTTY === true, deps.env) && command.output !== 'json' && command.output !== 'yaml' ? ansi : plain;
  const { output } = command;
  const raw = output === 'json' || output === 'yaml' ? (value: unknown) => deps.stdout.write(serialize(value, output)) : undefined;
  const list = { style, nowMs: deps.now(), wide: command.output === 'wide' };
  switch (command.kind) {
    case 'pods': {
      const listing = await listAll(api, command.namespace === undefined ? '/api/v1/schedulerlogs' : `/api/v1/namespaces/${encodeURIComponent(command.namespace)}/schedulerlogs`);
      if (raw) raw(listing);
      else deps.stdout.write(renderPodsText(rowsOf(listing.items, summaryRowSchema), command.namespace, list));
      return ExitCode.Ok;
    }
    case 'nodes': {
      const listing = await listAll(api, '/api/v1/nodes');
      if (raw) raw(listing);
      else deps.stdout.write(renderNodesText(rowsOf(listing.items, nodeDevicesSchema), list));
      return ExitCode.Ok;
    }
    case 'node': {
      const found = await getNodeDevices(api, command.name);
      if (found.kind === 'notFound') {
        deps.stderr.write(`${program}: ${found.message}\n`);
        return ExitCode.NotFound;
      }
      if (raw) raw(found.raw);
      else deps.stdout.write(renderNodeDevicesText(found.value, { style, nowMs: deps.now() }));
      return ExitCode.Ok;
    }
    case 'pod':
      break;
  }
  const found = await getSchedulerLog(api, command.namespace, command.name, { detail: command.detail, history: command.history });
  if (found.kind === 'found') {
    if (raw) raw(found.raw);
    else deps.stdout.write(renderSchedulerLogText(found.value, { style }));
    return ExitCode.Ok;
  }
  const tree = await walkTree(command, deps);
  if (raw) {
    raw({ found: false, message: found.message, ...('unavailable' in tree ? { treeUnavailable: tree.unavailable } : { tree }) });
  } else {
    deps.stdout.write(renderNotFoundText(command.namespace, command.name, tree, { style }));
  }
  return ExitCode.NotFound;
}

/** The route the command line chose, made concrete: the server's address, or the kubeconfig's credentials. */
async function apiOptions(command: Exclude<Command, { kind: 'help' | 'version' }>, deps: CliDeps): Promise<ApiOptions> {
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const { route } = command;
  if (route.kind === 'server') return { server: route.server, timeoutMs, ...(route.token ? { token: route.token } : {}) };
  const loaded = (deps.kubeConfig ?? ((kube: KubeSelection) => loadKubeConfig(deps.env, kube)))(command.kube);
  if (!loaded.ok) throw new CliError(`cannot reach the relay through the Kubernetes API: ${loaded.reason} (or pass --server to ask a server directly)`);
  const { kind: _kind, ...relay } = route;
  return { kube: await kubeRequest(loaded.config), relay, timeoutMs };
}

/** -o json or -o yaml: the value as the API sent it. */
function serialize(value: unknown, output: 'json' | 'yaml'): string {
  return output === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value);
}

/** Items a table can show; one of another shape stops with a clear error rather than a half-filled row. */
function rowsOf<T>(items: readonly unknown[], schema: z.ZodType<T>): T[] {
  return items.map((item, index) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    throw new ApiResponseError(`unexpected list item ${index} from the scheduler API${issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : ''}: ${issue?.message ?? 'invalid'} (-o json shows it as sent)`);
  });
}

async function walkTree(command: Extract<Command, { kind: 'pod' }>, deps: CliDeps) {
  const access = deps.cluster(command.kube);
  if (access.kind === 'unavailable') return { unavailable: access.reason };
  // The control plane's resource names, from the same variables (docs/deploy.md): the walk applies the filter's rules.
  let engine;
  try {
    engine = loadEngineConfig(deps.env);
  } catch (err) {
    if (err instanceof ConfigError) return { unavailable: `the environment's scheduler settings are invalid: ${err.problems.join('; ')}` };
    throw err;
  }
  try {
    const pod = await access.reader.getPod(command.namespace, command.name);
    const nodeName = pod?.spec?.nodeName;
    const node: ClusterNode | undefined = nodeName ? await access.reader.getNode(nodeName) : undefined;
    return walkDecisionTree(command, pod, node, { schedulerName: command.schedulerName, engine });
  } catch (err) {
    return { unavailable: `reading the cluster failed: ${errorMessage(err)}` };
  }
}
