/**
 * hami-diag entry point (bundled to dist/hami-diag.js; bin/hami-diag.js and bin/kubectl-hami load it). The script that
 * started it names the program: `kubectl hami` asks the relay through the Kubernetes API by default, and says so.
 */
import { spawn } from 'node:child_process';
import { CliError } from './errors';
import { kubeClusterAccess, kubeContextNamespace, loadKubeConfig } from './kubeClusterReader';
import { programOf } from './args';
import { run } from './run';
import { parseUiArgs, startUi, uiUsage } from './ui';
import { errorMessage } from '../errors';

/** `kubectl hami ui`: runs until interrupted. */
async function ui(argv: readonly string[]): Promise<number> {
  const options = parseUiArgs(argv, program);
  if (options === 'help') {
    process.stdout.write(`${uiUsage(program)}\n`);
    return 0;
  }
  const loaded = loadKubeConfig(process.env, options.kube);
  if (!loaded.ok) throw new CliError(`cannot open the console: ${loaded.reason}`);
  const running = await startUi(loaded.config, options);
  process.stdout.write(`hami-explain console: ${running.url} (through ${loaded.config.getCurrentCluster()?.server ?? 'the cluster'} to ${options.relayNamespace}/${options.relayService}:${options.relayPort}); Ctrl-C to stop\n`);
  if (!running.forwardsToken) process.stdout.write('your kubeconfig user has no bearer token (a client certificate?): the console will ask for one (kubectl create token ...)\n');
  if (options.openBrowser) {
    const opener = process.platform === 'darwin' ? ['open', [running.url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '', running.url]] : ['xdg-open', [running.url]];
    const child = spawn(opener[0] as string, opener[1] as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => process.stdout.write('open that address in your browser\n'));
    child.unref();
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await running.close();
  return 0;
}

const program = programOf(process.argv[1]);
const argv = process.argv.slice(2);
(argv[0] === 'ui'
  ? ui(argv.slice(1))
  : run(argv, {
      env: process.env,
      stdout: process.stdout,
      stderr: process.stderr,
      program,
      cluster: (kube) => kubeClusterAccess(process.env, kube),
      contextNamespace: (kube) => kubeContextNamespace(process.env, kube),
      now: () => Date.now(),
    })
).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof CliError) {
      process.stderr.write(`${program}: ${err.message}\n`);
      process.exitCode = err.exitCode;
      return;
    }
    process.stderr.write(`${program}: unexpected error: ${errorMessage(err)}\n`);
    process.exitCode = 2;
  },
);
