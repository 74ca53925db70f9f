/**
 * `POST /filter/ahead` over real HTTP (local server, embedded dynalite): a batch decided in queue order, booked under
 * the guards without over-booking a card, with answers the relay applies and a scheduler log that says so.
 */
import { aheadAnswerSchema } from '../../../lib/wire/decidedAhead';
import { schedulerLogSchema } from '../../../lib/diagnostics/schedulerLog';
import { startLocalServer, type LocalServer } from '../../../lib/local/server';
import { card, controlClient, gpuNode, gpuPod } from '../../support/cluster';

describe('decide-ahead over HTTP', () => {
  let server: LocalServer;
  let api: ReturnType<typeof controlClient>;

  beforeEach(async () => {
    server = await startLocalServer({ env: {} });
    api = controlClient(server.url);
    const nodes = Array.from({ length: 4 }, (_, n) => gpuNode(`node${n}`, [card(`GPU-${n}a`, { devmem: 16000 }), card(`GPU-${n}b`, { devmem: 16000 })]));
    const res = await api.events(nodes.map((object) => ({ type: 'ADDED', object })));
    if (res.json.accepted !== 4) throw new Error(`nodes not registered: ${res.text}`);
  });

  afterEach(async () => {
    await server.close();
  });

  it('decides a batch in queue order, fills every card exactly, and leaves the rest to the live filter', async () => {
    // 8 cards of 16,000 MiB hold two 7,000 MiB pods each: 16 of these 24 fit.
    const pods = Array.from({ length: 24 }, (_, i) => {
      const pod = gpuPod(`p${i}`, [{ name: 'c', gpu: 1, mem: 7000, cores: 10 }]);
      // Sent newest first, with the last one urgent: the queue's order is not the order sent.
      return { ...pod, metadata: { ...pod.metadata, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 24 - i)).toISOString() }, spec: { ...pod.spec, ...(i === 0 ? { priority: -5 } : {}) } };
    });
    const res = await api.call('POST', '/filter/ahead', { pods });
    expect(res.status).toBe(200);
    const answer = aheadAnswerSchema.parse(res.json);
    expect(answer.decisions.map((d) => d.name)).toEqual(pods.map((p) => p.metadata.name));
    const placed = answer.decisions.filter((d) => d.status === 'fit').map((d) => d.name);
    // Oldest first (p23 … p8), p0's low priority puts it last.
    expect(placed.sort()).toEqual(Array.from({ length: 16 }, (_, i) => `p${i + 8}`).sort());
    expect(answer.decisions.find((d) => d.name === 'p0')).toMatchObject({ status: 'noFit', Effects: [] });
    for (let n = 0; n < 4; n++) {
      const devices = await api.devices(`node${n}`);
      for (const device of devices.json.devices as { usedmem: number; used: number }[]) expect(device).toMatchObject({ usedmem: 14000, used: 2 });
    }
    const fit = answer.decisions.find((d) => d.status === 'fit')!;
    expect(fit.Effects.map((e) => e.kind)).toEqual(['PatchPodAnnotations', 'RecordEvent']);
    const log = await api.schedulerLog('default', fit.name);
    const parsed = schedulerLogSchema.parse(log.json);
    expect(parsed.ahead).toEqual({ kind: 'decided' });
    expect(parsed.filter.status).toBe('passed');
  });

  it('refuses a batch it cannot read, naming the field', async () => {
    const res = await api.call('POST', '/filter/ahead', { pods: [] });
    expect(res.status).toBe(400);
    expect(res.text).toContain('pods');
  });
});
