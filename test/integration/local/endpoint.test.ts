/**
 * `DDB_ENDPOINT=<endpoint> npm start`: the local server on an external DynamoDB-compatible store (DynamoDB Local
 * where Java is installed, as in CI; dynalite as its own server everywhere) serves the demo, and says which store
 * it uses. The real entry point runs as its own process; the demo plays against it over HTTP.
 */
import { runDemo } from '../../../lib/demo/demo';
import { backends, type DynamoBackend } from '../../support/dynamo';
import { killHard, startNpmStart, type Started } from '../../support/npmStart';

describe.each(backends)('npm start with DDB_ENDPOINT (%s)', (_name, startBackend) => {
  let backend: DynamoBackend;
  let server: Started;

  beforeAll(async () => {
    backend = await startBackend();
    // A short lock wait: the demo's fourth scenario waits for a lock, and this server's clock is real.
    server = await startNpmStart({ DDB_ENDPOINT: backend.endpoint, HAMI_BIND_LOCK_WAIT_SECONDS: '0', AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_PROFILE: '' });
  }, 90_000);

  afterAll(async () => {
    if (server) await killHard(server.child);
    if (backend) await backend.stop();
  });

  it('says which store it uses, and serves the demo end to end', async () => {
    expect(server.firstLine).toContain(backend.endpoint);
    const lines: string[] = [];
    await runDemo((line) => lines.push(line), { url: server.url });
    expect(lines.find((line) => /^\s+Normal\s+FilteringSucceed\s+hami-scheduler\s/.test(line))).toMatch(/find fit node\(node3\), 8 nodes not fit, 2 nodes fit\(node4:0\.50,node3:1\.50\)$/);
    const log = await fetch(`${server.url}/api/v1/namespaces/llm/pods/deepseek-5996b8569d-kgwgx/schedulerlog`);
    expect(log.status).toBe(200);
    expect(await log.json()).toMatchObject({ status: 'succeeded', filter: { status: 'passed' }, bind: { status: 'passed' } });
    const devices = await fetch(`${server.url}/api/v1/nodes/node3/devices`);
    expect(((await devices.json()) as { registered: boolean }).registered).toBe(true);
  }, 120_000);
});
