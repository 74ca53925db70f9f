/**
 * `npm start` with a data directory keeps its state across a hard kill: nodes, bookings, locks and scheduler
 * logs are there after a restart. Runs the real entry point as its own process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { card, controlClient, gpuNode, gpuPod } from '../../support/cluster';
import { killHard, startNpmStart as start, type Started } from '../../support/npmStart';

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
