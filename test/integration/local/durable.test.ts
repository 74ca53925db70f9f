/**
 * `npm start` with a data directory keeps its state across a hard kill: nodes, bookings, locks and scheduler
 * logs are there after a restart. Runs the real entry point as its own process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundled } from '../../support/bundle';
import { card, controlClient, gpuNode, gpuPod } from '../../support/cluster';

interface Started {
  readonly child: ChildProcess;
  readonly url: string;
  readonly firstLine: string;
}

async function start(env: Record<string, string>): Promise<Started> {
  const entry = await bundled('lib/local/main.ts');
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, PORT: '0', POWERTOOLS_LOG_LEVEL: 'ERROR', NODE_PATH: resolve(__dirname, '../../../node_modules'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const firstLine = await new Promise<string>((resolveLine, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolveLine(text.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${errors}`)));
  });
  const url = /listening on (http:\/\/\S+)/.exec(firstLine)?.[1];
  if (!url) throw new Error(`no address in: ${firstLine}`);
  return { child, url, firstLine };
}

function killHard(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill('SIGKILL');
  });
}

describe('npm start with HAMI_DATA_DIR', () => {
  let dir: string;
  let running: Started | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hami-data-'));
  });

  afterAll(async () => {
    if (running) await killHard(running.child);
    rmSync(dir, { recursive: true, force: true });
  });

  it('says where state lives, and keeps nodes, bookings, locks and scheduler logs across kill -9', async () => {
    running = await start({ HAMI_DATA_DIR: dir });
    expect(running.firstLine).toContain(`embedded store kept in ${dir}`);
    let api = controlClient(running.url);
    await api.events([{ type: 'ADDED', object: gpuNode('node1', [card('GPU-a')]) }]);
    const pod = gpuPod('kept', [{ name: 'c', gpu: 1, mem: 3000 }]);
    expect((await api.filter(pod, ['node1'])).json.NodeNames).toEqual(['node1']);
    expect((await api.bind(pod, 'node1')).json.Error).toBe('');
    await api.outcome(pod, 'node1');

    await killHard(running.child);
    running = await start({ HAMI_DATA_DIR: dir });
    api = controlClient(running.url);
    const devices = await api.devices('node1');
    expect(devices.json).toMatchObject({ registered: true, lock: { holder: 'default/kept' } });
    expect(devices.json.devices[0]).toMatchObject({ usedmem: 3000, pods: ['default/kept'] });
    const log = await api.schedulerLog('default', 'kept');
    expect(log.json).toMatchObject({ status: 'succeeded', bind: { status: 'passed' } });
    // And the restarted server keeps scheduling on top of what it found.
    expect((await api.filter(gpuPod('next', [{ name: 'c', gpu: 1, mem: 3000 }]), ['node1'])).json.NodeNames).toEqual(['node1']);
  }, 60_000);

  it('says plainly when state is kept in memory only', async () => {
    const memory = await start({ HAMI_DATA_DIR: '' });
    try {
      expect(memory.firstLine).toContain('embedded store in memory: state is lost when this process ends (set HAMI_DATA_DIR=<dir> to keep it)');
    } finally {
      await killHard(memory.child);
    }
  }, 60_000);
});
