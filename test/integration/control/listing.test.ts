/**
 * The listing routes (docs/api.md §10) over real HTTP and dynalite: every node's devices view and the latest
 * attempt per pod, paginated with limit and continue, Kubernetes style.
 */
import { card, gpuNode, gpuPod } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

const { api } = useControlPlane({
  per: 'suite',
  nodes: Array.from({ length: 7 }, (_, i) => gpuNode(`node${i}`, [card(`GPU-${i}a`), card(`GPU-${i}b`, { devmem: 8192, type: 'NVIDIA-A10' })])),
  // team-a: three placed pods (one bound, one whose bind failed) and one that fits nowhere; team-b: one.
  prepare: async (api) => {
    for (const name of ['a1', 'a2', 'a3']) {
      const placed = await api.filter(gpuPod(name, [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'team-a' }), ['node0']);
      if (placed.json.NodeNames?.length !== 1) throw new Error(`not placed: ${placed.text}`);
    }
    await api.outcome(gpuPod('a1', [], { namespace: 'team-a' }), 'node0');
    await api.outcome(gpuPod('a2', [], { namespace: 'team-a' }), 'node0', 'pods "a2" is forbidden');
    await api.filter(gpuPod('huge', [{ name: 'main', gpu: 1, mem: 100_000 }], { namespace: 'team-a' }), ['node0', 'node1', 'node2']);
    await api.filter(gpuPod('b1', [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'team-b' }), ['node3']);
  },
});

/** Every page of a list, following `continue`. */
async function allPages(path: string, limit: number): Promise<{ pages: number; items: Record<string, unknown>[] }> {
  const items: Record<string, unknown>[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const res = await api.call('GET', `${path}?limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
    expect(res.status).toBe(200);
    pages++;
    items.push(...res.json.items);
    token = res.json.metadata.continue;
  } while (token !== undefined && pages < 50);
  return { pages, items };
}

describe('GET /api/v1/nodes', () => {
  it('lists every node once, by name, across pages of the asked size, with the remaining count', async () => {
    const first = await api.call('GET', '/api/v1/nodes?limit=3');
    expect(first.json).toMatchObject({ kind: 'NodeDevicesList', apiVersion: 'v1', metadata: { continue: expect.any(String), remainingItemCount: 4 } });
    expect(first.json.items.map((n: { name: string }) => n.name)).toEqual(['node0', 'node1', 'node2']);

    const { pages, items } = await allPages('/api/v1/nodes', 3);
    expect(pages).toBe(3);
    expect(items.map((n) => n.name)).toEqual(['node0', 'node1', 'node2', 'node3', 'node4', 'node5', 'node6']);
  });

  it('gives each node the devices view of /api/v1/nodes/{name}/devices', async () => {
    const { items } = await allPages('/api/v1/nodes', 500);
    const single = await api.devices('node0');
    const listed = items.find((n) => n.name === 'node0') as { devices: unknown[] };
    expect(listed.devices).toEqual(single.json.devices);
    const devices = single.json.devices as { id: string; type: string; usedmem: number; pods: string[] }[];
    expect(devices.map((d) => [d.id, d.type])).toEqual([
      ['GPU-0a', 'NVIDIA-Tesla T4'],
      ['GPU-0b', 'NVIDIA-A10'],
    ]);
    expect(devices.reduce((sum, d) => sum + d.usedmem, 0)).toBe(3000);
    expect(devices.flatMap((d) => d.pods).sort()).toEqual(['team-a/a1', 'team-a/a2', 'team-a/a3']);
  });

  it.each([
    ['limit=0', 'limit must be a whole number from 1 to 1000'],
    ['limit=1001', 'limit must be a whole number from 1 to 1000'],
    ['limit=ten', 'limit must be a whole number from 1 to 1000'],
    ['continue=not-a-token', 'continue token is not valid'],
  ])('answers ?%s with 400 and says why', async (query, message) => {
    const res = await api.call('GET', `/api/v1/nodes?${query}`);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest' });
    expect(res.json.message).toContain(message);
  });
});

describe('GET /api/v1/namespaces/{ns}/schedulerlogs and /api/v1/schedulerlogs', () => {
  it("lists one summary per pod of the namespace: the latest attempt's outcome, its bind, and the answer", async () => {
    const res = await api.call('GET', '/api/v1/namespaces/team-a/schedulerlogs');
    expect(res.json).toMatchObject({ kind: 'SchedulerLogList', apiVersion: 'v1', metadata: {} });
    const byName = new Map<string, Record<string, unknown>>(res.json.items.map((item: { pod: { name: string } }) => [item.pod.name, item]));
    expect([...byName.keys()].sort()).toEqual(['a1', 'a2', 'a3', 'huge']);
    expect(byName.get('a1')).toMatchObject({ status: 'succeeded', filter: { status: 'passed', node: 'node0' }, bind: { status: 'passed', node: 'node0' }, answer: { sentence: 'Scheduled: bound to node0.' } });
    expect(byName.get('a2')).toMatchObject({ status: 'failed', bind: { status: 'failed', summary: 'pods "a2" is forbidden' }, answer: { code: 'BindingFailed' } });
    expect(byName.get('a3')).toMatchObject({ status: 'pending', bind: { status: 'pending' } });
    expect(byName.get('huge')).toMatchObject({
      status: 'failed',
      filter: { status: 'failed', evaluated: 3, reasons: [{ code: 'CardInsufficientMemory', nodes: 3 }] },
      answer: { sentence: 'Pending: no node fits. All 3 nodes fail with CardInsufficientMemory.', code: 'CardInsufficientMemory', fix: expect.stringContaining('Lower the memory request') },
    });
  });

  it('pages through a namespace and through every namespace, each pod once', async () => {
    const ns = await allPages('/api/v1/namespaces/team-a/schedulerlogs', 1);
    expect(ns.items.map((i) => (i.pod as { name: string }).name).sort()).toEqual(['a1', 'a2', 'a3', 'huge']);
    const all = await allPages('/api/v1/schedulerlogs', 2);
    expect(all.items.map((i) => `${(i.pod as { namespace: string }).namespace}/${(i.pod as { name: string }).name}`).sort()).toEqual([
      'team-a/a1',
      'team-a/a2',
      'team-a/a3',
      'team-a/huge',
      'team-b/b1',
    ]);
    expect((await api.call('GET', '/api/v1/namespaces/nobody/schedulerlogs')).json.items).toEqual([]);
  });

  it("refuses another list's continue token, and names no pod in it", async () => {
    const page = await api.call('GET', '/api/v1/schedulerlogs?limit=1');
    const token: string = page.json.metadata.continue;
    expect(Buffer.from(token, 'base64url').toString('utf8')).not.toMatch(/team-|a1|a2|a3|huge|b1/);
    const elsewhere = await api.call('GET', `/api/v1/namespaces/team-a/schedulerlogs?continue=${encodeURIComponent(token)}`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.json.message).toBe('continue token belongs to another list');
  });

  it("names no namespace in a namespace's continue token, and refuses it for another namespace", async () => {
    const page = await api.call('GET', '/api/v1/namespaces/team-a/schedulerlogs?limit=1');
    const token: string = page.json.metadata.continue;
    expect(Buffer.from(token, 'base64url').toString('utf8')).not.toMatch(/team-|a1|a2|a3|huge/);
    const elsewhere = await api.call('GET', `/api/v1/namespaces/team-b/schedulerlogs?continue=${encodeURIComponent(token)}`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.json.message).toBe('continue token belongs to another list');
    const everywhere = await api.call('GET', `/api/v1/schedulerlogs?continue=${encodeURIComponent(token)}`);
    expect(everywhere.status).toBe(400);
    expect(everywhere.json.message).toBe('continue token belongs to another list');
  });

  it('shows the newest attempt once a pod is filtered again', async () => {
    await api.filter(gpuPod('b1', [{ name: 'main', gpu: 1, mem: 100_000 }], { namespace: 'team-b' }), ['node3']);
    const res = await api.call('GET', '/api/v1/namespaces/team-b/schedulerlogs');
    expect(res.json.items).toEqual([expect.objectContaining({ status: 'failed', filter: expect.objectContaining({ status: 'failed', evaluated: 1 }) })]);
  });
});
