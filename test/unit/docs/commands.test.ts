/**
 * Every command the README and docs/ show is exercised somewhere: each is matched by an entry below that names
 * the test (or the demo code) running it, or, for the few that need AWS, a cluster or a Docker engine, the test
 * that checks what they would deploy or build. A new command without an entry fails here, and so does an entry
 * whose evidence is gone.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '../../..');

interface Exercised {
  readonly command: RegExp;
  /** The file that runs it (or checks what it would do), and a string proving that file is about it. */
  readonly by: string;
  readonly marker: string;
  /** Set when the command cannot run in the test environment (no AWS account, cluster or Docker engine). */
  readonly offline?: string;
}

const exercised: readonly Exercised[] = [
  { command: /^npm ci$/, by: 'test/unit/infra/installScripts.test.ts', marker: 'allowScripts' },
  { command: /^npm start( &)?$/, by: 'test/integration/demo/demo.test.ts', marker: 'startLocalServer' },
  { command: /^npm run dynamodb-local$/, by: 'test/integration/local/dynamoDbLocal.test.ts', marker: 'startDynamoDbLocal({ port: 0 })' },
  { command: /^DDB_ENDPOINT=http:\/\/127\.0\.0\.1:8000 npm start$/, by: 'test/integration/local/endpoint.test.ts', marker: 'DDB_ENDPOINT: backend.endpoint' },
  { command: /^npm test$/, by: 'package.json', marker: '"test": "node scripts/check-node.cjs && npm run typecheck && npm run lint && jest"' },
  { command: /^curl -s localhost:8080\/cluster\/events -d /, by: 'test/integration/control/controlPlane.test.ts', marker: '/cluster/events' },
  // controlPlane.test.ts drives these routes through test/support/cluster.ts over HTTP against the local server.
  { command: /^curl -s localhost:8080\/filter -d /, by: 'test/support/cluster.ts', marker: "call('POST', '/filter'" },
  { command: /^curl -s "?localhost:8080\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/schedulerlog/, by: 'test/integration/demo/demo.test.ts', marker: '/schedulerlog' },
  { command: /^curl -s localhost:8080\/api\/v1\/nodes\/node1\/devices$/, by: 'test/support/cluster.ts', marker: '/api/v1/nodes/${node}/devices' },
  { command: /^npm run demo( -- --url http:\/\/127\.0\.0\.1:8080)?$/, by: 'test/integration/demo/demo.test.ts', marker: 'url: server.url' },
  { command: /^HAMI_LOG_VERBOSITY=5 POWERTOOLS_LOG_LEVEL=INFO npm run demo$/, by: 'test/unit/diagnostics/decisionLogs.test.ts', marker: 'setVerbosity' },
  { command: /^npx hami-diag pod deepseek-5996b8569d-kgwgx -n llm$/, by: 'test/integration/demo/demo.test.ts', marker: "'-n', 'llm'" },
  { command: /^npm run package\b/, by: 'test/unit/infra/serverless-template.test.ts', marker: 'package' },
  { command: /^npx osls (deploy|info) /, by: 'test/unit/infra/serverless-template.test.ts', marker: 'HttpApiUrl', offline: 'needs an AWS account; the template it deploys is packaged and checked' },
  { command: /^URL=\$\(npx osls info /, by: 'test/unit/infra/serverless-template.test.ts', marker: 'HttpApiUrl', offline: 'needs an AWS account; the output is checked in the template' },
  { command: /^awscurl |^curl -s "\$URL\/healthz"/, by: 'test/unit/infra/serverless-template.test.ts', marker: 'healthz', offline: 'needs a deployed API; its routes and auth are checked in the template' },
  { command: /^docker (build|push) /, by: 'test/unit/infra/dockerfile.test.ts', marker: 'Dockerfile', offline: 'no Docker engine here; the Dockerfile is checked and the bundle it ships is run' },
  { command: /^helm template hami-explain infra\/helm\/hami-explain --namespace hami-system -f infra\/helm\/examples\/eks-irsa\.yaml$/, by: 'test/unit/infra/chart.test.ts', marker: "'-f', 'infra/helm/examples/eks-irsa.yaml'" },
  { command: /^npm run --silent helm -- template hami-explain infra\/helm\/hami-explain --namespace hami-system -f infra\/helm\/examples\/eks-irsa\.yaml$/, by: 'test/unit/docs/helmCommand.test.ts', marker: "['run', '--silent', 'helm', '--', 'template', 'hami-explain'" },
  { command: /^helm install hami-explain infra\/helm\/hami-explain --namespace hami-system --create-namespace -f infra\/helm\/examples\/eks-irsa\.yaml$/, by: 'test/unit/infra/chart.test.ts', marker: "'--create-namespace', ...example, '--dry-run=client'", offline: 'needs a cluster; run as a client-side dry run' },
  { command: /^kubectl -n hami-system rollout status deployment\/hami-relay$/, by: 'test/unit/infra/chart.test.ts', marker: 'rollout status deployment/hami-relay', offline: 'needs a cluster; the NOTES that print it are checked' },
  { command: /^kubectl apply -k infra\/kustomize-example$/, by: 'test/unit/infra/chart.test.ts', marker: "'kustomize', join(ROOT, 'infra/kustomize-example')", offline: 'needs a cluster; `kubectl kustomize` builds what it applies' },
  { command: /^kubectl hami pod (deepseek-5996b8569d-kgwgx -n llm|-A -o wide)$/, by: 'test/integration/cli/kubectl.test.ts', marker: "kubectlHami(['pod', '-A', '-o', 'wide'" },
  { command: /^kubectl hami node node1 -o yaml --context prod$/, by: 'test/integration/cli/kubectl.test.ts', marker: "kubectlHami(['node', 'node1', '-o', 'yaml'" },
  { command: /^npm pack$/, by: 'test/integration/cli/plugin.test.ts', marker: 'What infra/krew/hami.yaml installs', offline: 'writes a tarball; the test runs what it installs (bin/ and the bundle, no sources)' },
  { command: /^npm install -g hami-explain-0\.1\.0\.tgz$/, by: 'test/integration/cli/plugin.test.ts', marker: '`npm install -g` of that tarball', offline: 'installs globally; the test runs the same files from a temporary directory' },
  { command: /^kubectl hami ui$/, by: 'test/integration/cli/ui.test.ts', marker: 'startUi(kube.kubeConfig(token)' },
  { command: /^HAMI_CHROMIUM=\/usr\/bin\/chromium npm test$/, by: 'test/support/browser.ts', marker: 'HAMI_CHROMIUM' },
  { command: /^nvidia-smi --query-(gpu|compute-apps)=/, by: 'test/unit/realtime/nvidiaSmi.test.ts', marker: 'query' },
  // Transcripts ($ lines in output blocks) printed by the demo or produced by hami-diag's tests.
  { command: /^\$ kubectl describe pod -n \S+ \S+$/, by: 'lib/demo/demo.ts', marker: '$ kubectl describe pod -n ' },
  { command: /^\$ hami-diag pod (llm\/deepseek-5996b8569d-kgwgx|default\/gpu-pod-default)( --detail| --history)?$/, by: 'lib/demo/demo.ts', marker: 'out(`$ hami-diag ${args.join(\' \')}`)' },
  { command: /^\$ hami-diag node node\d+$/, by: 'test/unit/cli/render.test.ts', marker: 'node' },
  { command: /^\$ (npx )?hami-diag pod (default\/wrong-scheduler|trainer-5gpu -n ml)$/, by: 'test/unit/cli/run.test.ts', marker: 'trainer-5gpu' },
];

/** Commands in ```sh blocks (comments dropped, continuation lines joined) and `$ ` lines in other blocks. */
function commandsIn(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const commands: string[] = [];
  for (const block of text.matchAll(/```([a-z]*)\n([\s\S]*?)```/g)) {
    const shell = ['sh', 'bash', 'console'].includes(block[1] ?? '');
    for (const line of (block[2] ?? '').split('\n')) {
      if (shell) {
        const command = line.replace(/\s+#.*$/, '').trimEnd();
        if (command === '' || command.startsWith('#')) continue;
        // A line starting with whitespace or a quote continues the previous command (the README's long curl bodies).
        if (/^\s|^"/.test(command) && commands.length > 0) continue;
        commands.push(command);
      } else if (line.startsWith('$ ')) {
        commands.push(line.trimEnd());
      }
    }
  }
  return commands;
}

const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const shown = files.flatMap((file) => commandsIn(file).map((command) => ({ file, command })));

describe('commands in README.md and docs/', () => {
  it('finds the commands (the scan itself works)', () => {
    expect(shown.map((s) => s.command)).toEqual(expect.arrayContaining(['npm ci', 'kubectl apply -k infra/kustomize-example']));
  });

  it.each(shown.map((s) => [`${s.file}: ${s.command}`, s.command] as const))('%s is exercised', (_label, command) => {
    const entry = exercised.find((e) => e.command.test(command));
    expect({ command, exercisedBy: entry?.by }).toEqual({ command, exercisedBy: expect.any(String) });
  });

  it.each(exercised.map((e) => [e.by, e] as const))('the evidence in %s is there', (_by, entry) => {
    expect(readFileSync(join(ROOT, entry.by), 'utf8')).toContain(entry.marker);
  });

  it('every entry is still used by some document', () => {
    const unused = exercised.filter((e) => !shown.some((s) => e.command.test(s.command))).map((e) => String(e.command));
    expect(unused).toEqual([]);
  });
});
