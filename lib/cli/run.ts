/**
 * hami-diag as a function: arguments, environment and ports in, exit code out. main.ts wires it to
 * the process; tests call it directly.
 */
import { getNodeDevices, getSchedulerLog, type ApiOptions } from './apiClient';
import { parseCommand, usage, type Command } from './args';
import { defaultTreeOptions, walkDecisionTree, type ClusterNode, type ClusterReader } from './decisionTree';
import { CliError } from './errors';
import { renderNodeDevicesText, renderNotFoundText, renderSchedulerLogText } from './render';
import { ansi, plain, shouldUseColour } from './style';
import { VERSION } from '../version';
import { errorMessage } from '../errors';

/** A reader, or why none is available (no kubeconfig): the 404 path then says so instead of guessing. */
export type ClusterAccess = { readonly kind: 'ready'; readonly reader: ClusterReader } | { readonly kind: 'unavailable'; readonly reason: string };

export interface CliDeps {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown };
  /** Built only when needed (a pod without a record). */
  readonly cluster: () => ClusterAccess;
  readonly now: () => number;
  readonly timeoutMs?: number;
  /** The kubeconfig's current-context namespace (kubectl's default for -n); read only when a pod has no namespace. */
  readonly contextNamespace?: () => string | undefined;
}

export const ExitCode = { Ok: 0, NotFound: 1, Error: 2 } as const;

export async function run(argv: readonly string[], deps: CliDeps): Promise<number> {
  try {
    const command = parseCommand(argv, deps.env, deps.contextNamespace);
    return await execute(command, deps);
  } catch (err) {
    if (err instanceof CliError) {
      deps.stderr.write(`hami-diag: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}

async function execute(command: Command, deps: CliDeps): Promise<number> {
  if (command.kind === 'help') {
    deps.stdout.write(`${usage}\n`);
    return ExitCode.Ok;
  }
  if (command.kind === 'version') {
    deps.stdout.write(`hami-diag ${VERSION}\n`);
    return ExitCode.Ok;
  }
  const api: ApiOptions = { server: command.server, timeoutMs: deps.timeoutMs ?? 10_000, ...(command.token ? { token: command.token } : {}) };
  const style = shouldUseColour(deps.stdout.isTTY === true, deps.env) && !command.json ? ansi : plain;
  if (command.kind === 'node') {
    const found = await getNodeDevices(api, command.name);
    if (found.kind === 'notFound') {
      deps.stderr.write(`hami-diag: ${found.message}\n`);
      return ExitCode.NotFound;
    }
    deps.stdout.write(command.json ? `${JSON.stringify(found.raw, null, 2)}\n` : renderNodeDevicesText(found.value, { style, nowMs: deps.now() }));
    return ExitCode.Ok;
  }
  const found = await getSchedulerLog(api, command.namespace, command.name, { detail: command.detail, history: command.history });
  if (found.kind === 'found') {
    deps.stdout.write(command.json ? `${JSON.stringify(found.raw, null, 2)}\n` : renderSchedulerLogText(found.value, { style }));
    return ExitCode.Ok;
  }
  const tree = await walkTree(command, deps);
  if (command.json) {
    deps.stdout.write(`${JSON.stringify({ found: false, message: found.message, ...('unavailable' in tree ? { treeUnavailable: tree.unavailable } : { tree }) }, null, 2)}\n`);
  } else {
    deps.stdout.write(renderNotFoundText(command.namespace, command.name, tree, { style }));
  }
  return ExitCode.NotFound;
}

async function walkTree(command: Extract<Command, { kind: 'pod' }>, deps: CliDeps) {
  const access = deps.cluster();
  if (access.kind === 'unavailable') return { unavailable: access.reason };
  try {
    const pod = await access.reader.getPod(command.namespace, command.name);
    const nodeName = pod?.spec?.nodeName;
    const node: ClusterNode | undefined = nodeName ? await access.reader.getNode(nodeName) : undefined;
    return walkDecisionTree(command, pod, node, { ...defaultTreeOptions, schedulerName: command.schedulerName });
  } catch (err) {
    return { unavailable: `reading the cluster failed: ${errorMessage(err)}` };
  }
}
