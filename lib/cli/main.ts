/** hami-diag entry point (bundled to dist/hami-diag.js; bin/hami-diag.js and bin/kubectl-hami load it). */
import { kubeClusterAccess, kubeContextNamespace } from './kubeClusterReader';
import { run } from './run';

run(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  cluster: () => kubeClusterAccess(process.env),
  contextNamespace: () => kubeContextNamespace(process.env),
  now: () => Date.now(),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`hami-diag: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  },
);
