/**
 * The web console in a real headless Chromium (test/support/browser.ts), against `npm start`'s server holding the
 * demo's cluster, and against the relay's user port for the authorization cases. Also takes the README's
 * screenshots (UPDATE_SCREENSHOTS=1 writes them into docs/images; otherwise into a temporary directory).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { runDemo } from '../../../lib/demo/demo';
import { startLocalServer, type LocalServer } from '../../../lib/local/server';
import type { RunningRelay } from '../../../lib/relay/relay';
import { coresText, memoryText } from '../../../lib/console/web/units';
import { sortNodes, summarise } from '../../../lib/console/web/rank';
import type { NodeDevicesView } from '../../../lib/control/views';
import { launchBrowser, type LaunchedBrowser } from '../../support/browser';
import { card, controlClient, forwardedPod, gpuNode, gpuPod, neuronNode, neuronPod } from '../../support/cluster';
import { startFakeKube, type FakeKube } from '../../support/fakeKube';
import { eventually, recordingLogger, startTestRelay } from '../relay/harness';

const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(__dirname, '../../../docs/images') : mkdtempSync(join(tmpdir(), 'console-shots-'));
const MARKUP_TYPE = '<img src=x onerror="window.__pwned=1">';
const MARKUP_WEIGHTS = '<script>window.__pwned=2</script>';

let server: LocalServer;
let launched: LaunchedBrowser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  server = await startLocalServer({ env: {} });
  await runDemo(() => undefined, { url: server.url });
  const api = controlClient(server.url);
  // Hostile cluster data: a card type and a pod annotation that are markup.
  await api.events([{ type: 'ADDED', object: gpuNode('zz-hostile', [{ id: 'GPU-hostile', type: MARKUP_TYPE }]) }]);
  await api.filter(gpuPod('markup-pod', [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'default', annotations: { 'hami.io/device-scoring-weights': MARKUP_WEIGHTS } }), ['zz-hostile']);
  launched = await launchBrowser();
  page = await launched.browser.newPage();
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  // A CSP violation would show here: the console runs no inline script and sets no style attribute.
  // (HTTP errors the console expects and explains, 401 and 403, are logged by the browser too; they are not faults.)
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource: the server responded with a status of 40')) pageErrors.push(message.text());
  });
}, 120_000);

afterAll(async () => {
  await launched?.close();
  await server?.close();
});

afterEach(() => {
  // A fault in the page (an exception, a CSP violation) fails the test that caused it.
  const errors = pageErrors.splice(0);
  if (errors.length > 0) throw new Error(`the page reported errors:\n${errors.join('\n')}`);
});

/** Navigates to a console page and waits until it has drawn it. */
async function open(base: string, hash: string): Promise<void> {
  const url = `${base}/${hash}`;
  // The same address again changes nothing in the page: load it anew. Otherwise the mark of the page shown now is
  // removed first, so that it is not taken for the new page's.
  if (page.url() === url) await page.reload();
  else {
    await page.evaluate(() => document.querySelector('main')?.removeAttribute('data-rendered')).catch(() => undefined);
    await page.goto(url);
  }
  await page.waitForSelector('main[data-rendered]');
}

async function textOf(selector: string): Promise<string> {
  return page.$eval(selector, (el) => (el as HTMLElement).innerText);
}

describe('the console served by npm start, with the demo cluster loaded', () => {
  it("shows each named card's usage next to its bars, as the devices view holds it", async () => {
    await open(server.url, '#/');
    const devices = (await controlClient(server.url).devices('node3')).json as { devices: { id: string; usedmem: number; devmem: number; usedcores: number; devcore: number; used: number; count: number; pods: string[] }[] };
    for (const card of devices.devices) {
      const row = `section[data-node="node3"] tr[data-card="${card.id}"]`;
      expect(await textOf(`${row} [data-usage="memory ${card.id}"]`)).toBe(memoryText(card.usedmem, card.devmem));
      expect(await textOf(`${row} [data-usage="cores ${card.id}"]`)).toBe(coresText(card.usedcores, card.devcore, 'card'));
      expect(await textOf(`${row} [data-usage="slots ${card.id}"]`)).toBe(`${card.used} of ${card.count}`);
    }
    // The demo's first pod took two whole A100s on node3.
    const deepseek = devices.devices.filter((card) => card.pods.includes('llm/deepseek-5996b8569d-kgwgx'));
    expect(deepseek.map((card) => [card.usedcores, card.devmem])).toEqual([
      [100, 40960],
      [100, 40960],
    ]);
    expect(await textOf(`section[data-node="node3"] tr[data-card="${deepseek[0]?.id}"]`)).toContain('llm/deepseek-5996b8569d-kgwgx');
    expect(await textOf('section[data-node="node10"]')).toContain('Not scheduled:');
    expect(await textOf('#totals')).toMatch(/Nodes 10 registered of 11/);
    await page.screenshot({ path: join(SHOTS, 'console-overview.png') });
  });

  it('filters the nodes by name, card type and free memory', async () => {
    await open(server.url, '#/');
    await page.type('#filter-name', 'node1');
    expect((await page.$$eval('section.node', (els) => els.map((el) => el.getAttribute('data-node')))).sort()).toEqual(['node1', 'node10']);
    await page.$eval('#filter-name', (el) => ((el as HTMLInputElement).value = ''));
    await page.select('#filter-type', 'NVIDIA-Tesla-T4');
    await page.$eval('#filter-type', (el) => el.dispatchEvent(new Event('change')));
    expect(await page.$$eval('section.node', (els) => els.map((el) => el.getAttribute('data-node')))).toEqual(['node6']);
    await page.select('#filter-type', '');
    await page.type('#filter-free', '80');
    expect(await page.$$eval('section.node', (els) => els.map((el) => el.getAttribute('data-node')))).toEqual([]);
  });

  it('sorts the nodes, hides the empty ones, and draws one row per node with its cards on demand', async () => {
    await open(server.url, '#/');
    // Under a page of nodes the overview opens on every card, empty nodes shown, those needing a look first.
    expect(await page.$eval('#view', (el) => (el as HTMLSelectElement).value)).toBe('cards');
    expect(await page.$eval('#hide-empty', (el) => (el as HTMLInputElement).checked)).toBe(false);
    const listed = ((await controlClient(server.url).call('GET', '/api/v1/nodes?limit=500')).json as { items: NodeDevicesView[] }).items.map(summarise);
    const drawn = () => page.$$eval('section.node', (els) => els.map((el) => el.getAttribute('data-node')));
    expect(await drawn()).toEqual(sortNodes(listed, 'attention').map((s) => s.node.name));
    await page.select('#sort', 'name');
    expect(await drawn()).toEqual(listed.map((s) => s.node.name).sort((a, b) => a.localeCompare(b, 'en', { numeric: true })));
    await page.select('#sort', 'free');
    const free = (name: string | null) => listed.find((s) => s.node.name === name)!;
    const byFree = (await drawn()).map((name) => free(name).mem - free(name).memUsed);
    expect(byFree).toEqual([...byFree].sort((a, b) => b - a));

    // Hide empty nodes: none with nothing booked, wrong or in progress stays.
    const empty = listed.filter((s) => s.empty).map((s) => s.node.name);
    expect(empty.length).toBeGreaterThan(0);
    await page.click('#hide-empty');
    expect((await drawn()).filter((name) => empty.includes(name ?? ''))).toEqual([]);
    expect(await textOf('#shown')).toContain(`(${empty.length} empty node${empty.length === 1 ? '' : 's'} hidden)`);
    await page.click('#hide-empty');

    // One row per node, in human units; a node's cards under its row on demand, and away again.
    await page.select('#view', 'compact');
    expect(await page.$$('section.node')).toHaveLength(0);
    const node3 = free('node3');
    expect(await textOf('#node-table tr[data-node="node3"] [data-usage="memory node3"]')).toBe(memoryText(node3.memUsed, node3.mem));
    expect(await textOf('#node-table tr[data-node="node3"] [data-usage="cores node3"]')).toBe(coresText(node3.coresUsed, node3.cores, 'node'));
    expect(await page.$$('tr[data-cards-of="node3"]')).toHaveLength(0);
    await page.click('tr[data-node="node3"] button.expand');
    expect(await page.$eval('tr[data-node="node3"] button.expand', (el) => el.getAttribute('aria-expanded'))).toBe('true');
    expect(await page.$$eval('tr[data-cards-of="node3"] tr[data-card]', (rows) => rows.map((r) => r.getAttribute('data-card')))).toEqual(node3.node.devices.map((d) => d.id));
    expect(await textOf('tr[data-cards-of="node3"]')).toContain('llm/deepseek-5996b8569d-kgwgx');
    await page.click('tr[data-node="node3"] button.expand');
    expect(await page.$$('tr[data-cards-of="node3"]')).toHaveLength(0);

    // The bars' legend names the colours' thresholds and the units.
    const legend = await textOf('#legend');
    expect(legend).toContain('under 60 %');
    expect(legend).toContain('60 % to 90 %');
    expect(legend).toContain('90 % and more');
    expect(legend).toContain('1 GiB = 1,024 MiB');
    expect(await textOf('#totals [data-usage="total memory"]')).toMatch(/^[\d,.]+ GiB of [\d,.]+ GiB \([\d.<]+ %\)$/);
  });

  it('keeps timestamps and reason codes whole in the decisions table, however narrow the window', async () => {
    await page.setViewport({ width: 480, height: 900 });
    try {
      await open(server.url, '#/decisions');
      // Each such cell's text lies on one line: one client rect for its whole text.
      const lines = await page.$$eval('#decisions td.col-time, #decisions td.col-reason', (cells) =>
        cells.filter((c) => c.textContent !== '').map((c) => {
          const range = document.createRange();
          range.selectNodeContents(c);
          return [c.textContent, range.getClientRects().length];
        }),
      );
      expect(lines.length).toBeGreaterThan(6);
      expect(lines.filter(([, n]) => n !== 1)).toEqual([]);
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  it("draws the pending pod's page answer first: its reason code and the hint's fix", async () => {
    await open(server.url, '#/pods/default/gpu-pod-default');
    const answer = await textOf('#answer');
    // One vocabulary: the badge says what the sentence says, and the request sits beside the answer.
    expect(await textOf('#answer .badge')).toBe('pending');
    expect(answer).toContain('Pending: no node fits.');
    expect(await textOf('#answer-request')).toMatch(/^Request: \S+ asks \d+ card\(s\)/);
    expect(await textOf('main')).not.toContain('`');
    // The freshness of the decision in user words; the journal entry stays in the JSON.
    expect(await textOf('main')).toMatch(/decided on the cluster state as of \d+(\.\d)? s before/);
    expect(await textOf('main')).not.toMatch(/journal entry|ms old/);
    expect(answer).toContain('NodeInsufficientDevice');
    expect(answer).toContain('Fix: Lower nvidia.com/gpu');
    expect(await textOf('#nodes')).toContain('NodeInsufficientDevice');
    expect(await textOf('#bind')).toContain('not attempted');
    await page.screenshot({ path: join(SHOTS, 'console-pod.png') });
  });

  it('shows markup from cluster data as text and runs none of it', async () => {
    await open(server.url, '#/pods/default/markup-pod');
    expect(await textOf('#answer')).toContain(MARKUP_WEIGHTS);
    await open(server.url, '#/');
    await page.type('#filter-name', 'zz-hostile');
    expect(await textOf('section[data-node="zz-hostile"]')).toContain(MARKUP_TYPE);
    expect(await page.$$('main img, main script')).toHaveLength(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('is served with a Content-Security-Policy the browser enforces: an inline script never runs', async () => {
    await open(server.url, '#/');
    const ran = await page.evaluate(() => {
      const script = document.createElement('script');
      script.textContent = 'window.__inline = 1';
      document.body.append(script);
      return (window as unknown as { __inline?: number }).__inline;
    });
    expect(ran).toBeUndefined();
    expect(pageErrors.splice(0).join('\n')).toMatch(/inline script violates .*Content Security Policy directive 'script-src 'self''/);
  });

  it('reaches every pod page from the decisions list with the keyboard alone', async () => {
    await open(server.url, '#/decisions');
    const listed = await page.$$eval('#decisions a', (links) => links.map((a) => a.getAttribute('href')));
    expect(listed.length).toBeGreaterThanOrEqual(6);
    const reached = new Set<string>();
    for (let i = 0; i < 60 && reached.size < listed.length; i++) {
      await page.keyboard.press('Tab');
      const href = await page.evaluate(() => (document.activeElement?.closest('#decisions') ? document.activeElement.getAttribute('href') : null));
      if (href !== null) reached.add(href);
    }
    expect([...reached].sort()).toEqual([...listed].sort());
    // Enter on the focused link opens that pod's page.
    const focused = await page.evaluate(() => document.activeElement?.getAttribute('href'));
    await page.keyboard.press('Enter');
    await page.waitForFunction((hash) => location.hash === hash, {}, focused);
    await page.waitForSelector('main[data-rendered] #answer');
  });

  it('filters the decisions by namespace, outcome and reason code', async () => {
    await open(server.url, '#/decisions');
    await page.select('#filter-outcome', 'pending');
    await page.select('#filter-reason', 'NodeInsufficientDevice');
    expect(await page.$$eval('#decisions tbody tr', (rows) => rows.map((r) => r.getAttribute('data-pod')))).toEqual(['default/gpu-pod-default']);
    await page.select('#filter-reason', '');
    await page.select('#filter-namespace', 'llm');
    expect(await page.$$eval('#decisions tbody tr', (rows) => rows.map((r) => r.getAttribute('data-pod')))).toEqual([]);
    await page.select('#filter-outcome', '');
    expect(await page.$$eval('#decisions tbody tr', (rows) => rows.map((r) => r.getAttribute('data-pod')))).toEqual(['llm/deepseek-5996b8569d-kgwgx']);
  });

  it('answers "why is my pod pending?" from a namespace and a name', async () => {
    await open(server.url, '#/why');
    await page.$eval('#why-namespace', (el) => ((el as HTMLInputElement).value = ''));
    await page.type('#why-namespace', 'default');
    await page.type('#why-name', 'notebook-carol');
    await page.keyboard.press('Enter');
    await page.waitForSelector('main[data-rendered] #answer');
    // The demo's carol met alice's node lock, waited for its nudge, and was bound on the retry.
    expect(await textOf('#answer-sentence')).toBe('Scheduled: bound to node1.');
  });

  it('says when every node that fit had an allocation under way, and which were passed over', async () => {
    const api = controlClient(server.url);
    await api.events([{ type: 'ADDED', object: gpuNode('zz-busy-a', [{ id: 'GPU-busy-a' }]) }, { type: 'ADDED', object: gpuNode('zz-busy-b', [{ id: 'GPU-busy-b' }]) }]);
    // Two pods placed, one a node; the third finds both busy and takes the one with the fewest allocations under way.
    for (const name of ['busy-1', 'busy-2', 'busy-3']) await api.filter(gpuPod(name, [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'default' }), ['zz-busy-a', 'zz-busy-b']);
    await open(server.url, '#/pods/default/busy-3');
    expect(await textOf('#least-busy')).toBe("Every node that fits had an allocation under way: this one had the fewest (1), and the pod's bind waits for it");
    await api.filter(gpuPod('busy-4', [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'default' }), ['zz-busy-a', 'zz-busy-b']);
    await open(server.url, '#/pods/default/busy-4');
    expect(await textOf('main')).toMatch(/Passed over zz-busy-[ab]: default\/busy-\d is allocating there/);
  });

  it('says a pod was decided ahead and when kube-scheduler’s filter used the decision, or why it could not', async () => {
    // The demo's scenario 5: summarize-0 bound on its decision made ahead; summarize-1's decided node was tainted.
    await open(server.url, '#/pods/batch/summarize-0');
    expect(await textOf('#ahead')).toMatch(/^decided ahead, before kube-scheduler's filter asked; its filter was answered from this decision at \d{4}-\d\d-\d\dT[\d:.]+Z$/);
    await open(server.url, '#/pods/batch/summarize-1');
    expect(await textOf('#ahead')).toMatch(/^decided live: the decision made ahead at .* \(node node\d\) was not used: node node\d is not among the 9 nodes kube-scheduler sent/);
  });

  it("shows an attempt whose evidence this release cannot read, and says why its nodes are missing", async () => {
    // As a later release would have written it (evidence version 99), read by this one after a rollback.
    await server.deps.records.putAttempt(
      {
        pod: { namespace: 'default', name: 'from-a-later-release', uid: 'uid-later' },
        attemptId: 'later-1',
        attempt: 0,
        time: '2026-11-24T00:00:00.000Z',
        filter: { status: 'passed', summary: '', node: 'node1', nodePolicy: 'binpack', evaluated: 2, nodes: [], packed: { v: 99 } as never },
        bind: { status: 'pending', summary: '' },
      },
      Date.now(),
    );
    await open(server.url, '#/pods/default/from-a-later-release');
    expect(await textOf('main')).toContain("find fit node(node1); the nodes' evidence cannot be read");
    expect(await textOf('#evidence-note')).toBe("the nodes' evidence cannot be read (packed evidence of unknown version 99): written by a later release, or damaged");
  });

  it('draws a page for a link whose name is not valid percent-encoding instead of hanging on "Loading…"', async () => {
    await open(server.url, '#/pods/default/%E0');
    expect(await textOf('main')).toContain('%E0');
  });

  it('shows AWS Neuron devices in NeuronCores by index, outside the NVIDIA memory and core totals', async () => {
    const api = controlClient(server.url);
    const nvidiaTotals = async () => [await textOf('#totals [data-usage="total memory"]'), await textOf('#totals [data-usage="total cores"]')];
    await open(server.url, '#/');
    const before = await nvidiaTotals();
    await api.events([{ type: 'ADDED', object: neuronNode('zz-inf2', 2, 4, 'inf2.8xlarge') }]);
    expect((await api.filter(neuronPod('neuron-infer', [{ name: 'main', cores: 3 }], { namespace: 'default' }), ['zz-inf2'])).status).toBe(200);
    // The same address again would not draw the page again: load it anew.
    await page.reload();
    await page.waitForSelector('section[data-node="zz-inf2"]');
    const devices = (await api.devices('zz-inf2')).json as { devices: { id: string; coreIndexes: { used: number[]; free: number[] } }[] };
    expect(devices.devices.map((d) => d.coreIndexes)).toEqual([
      { used: [0, 1], free: [] },
      { used: [0], free: [1] },
    ]);
    for (const device of devices.devices) {
      const row = `section[data-node="zz-inf2"] tr[data-card="${device.id}"]`;
      const { used, free } = device.coreIndexes;
      expect(await textOf(`${row} [data-usage="NeuronCores ${device.id}"]`)).toBe(`${used.length} of ${used.length + free.length} NeuronCores`);
      expect(await textOf(row)).toContain(`in use: ${used.join(', ')}`);
      expect(await page.$(`${row} [data-usage="cores ${device.id}"]`)).toBeNull();
      expect(await textOf(row)).toContain('default/neuron-infer');
    }
    expect(await textOf('#totals [data-usage="total NeuronCores"]')).toBe('3 of 4 (75 %)');
    // The NVIDIA totals do not change when Neuron devices arrive (their cores are masks, their memory is not booked).
    expect(await nvidiaTotals()).toEqual(before);
    // The pod's page says what it asked and was given in Neuron's words, as hami-diag does.
    await open(server.url, '#/pods/default/neuron-infer');
    const evidence = await page.$eval('main', (el) => el.textContent ?? '');
    expect(evidence).toContain('asks 3 NeuronCore(s)');
    expect(evidence).toContain('Chosen: device 0 zz-inf2-AWSNeuron-0, cores 0,1');
    expect(evidence).not.toContain('% cores');
  });

  it('marks a card booked past its capacity over-committed, and counts it in the totals', async () => {
    const api = controlClient(server.url);
    await api.events([{ type: 'ADDED', object: gpuNode('zz-over', [card('GPU-zz-over')]) }]);
    // Two pods nobody placed claim the whole card each (docs/api.md §4, "Adoption past capacity").
    const claims = { 'hami.io/vgpu-node': 'zz-over', 'hami.io/vgpu-devices-allocated': 'GPU-zz-over,NVIDIA,16384,100:;' };
    const adopted = await api.events(
      ['team-a', 'team-b'].map((namespace) => ({ type: 'ADDED', object: forwardedPod(gpuPod('claimer', [{ name: 'main', gpu: 1 }], { namespace }), claims, { phase: 'Running' }) })),
    );
    expect(adopted.json.rejected).toEqual([]);
    await open(server.url, '#/');
    await page.reload();
    await page.waitForSelector('section[data-node="zz-over"]');
    expect(await textOf('section[data-node="zz-over"] [data-overcommitted="GPU-zz-over"]')).toBe('over-committed: memory, cores');
    expect(await textOf('#totals')).toContain('(1 over-committed)');
  });

  it("names both sides of a CardTypeMismatch in the pod's per-card evidence", async () => {
    const api = controlClient(server.url);
    await api.events([{ type: 'ADDED', object: gpuNode('zz-t4', [card('GPU-zz-t4', { type: 'NVIDIA-Tesla T4' })]) }]);
    expect((await api.filter(gpuPod('wants-a100', [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'default', annotations: { 'nvidia.com/use-gputype': 'A100' } }), ['zz-t4'])).status).toBe(200);
    await open(server.url, '#/pods/default/wants-a100');
    await page.click('details.evidence[data-node="zz-t4"] summary');
    expect(await textOf('details.evidence[data-node="zz-t4"] .mismatch')).toBe('card type NVIDIA-Tesla T4; the pod asks for A100');
  });

  it("says the devices of another kind a pod's kind never tried", async () => {
    const api = controlClient(server.url);
    const gpu = gpuNode('zz-mixed', [card('GPU-zz-mixed')]);
    const trn = neuronNode('zz-mixed', 2, 4, 'trn1.2xlarge', { annotations: gpu.metadata.annotations as Record<string, string> });
    const capacity = { ...trn.status.capacity, 'nvidia.com/gpu': '10' };
    await api.events([{ type: 'ADDED', object: { ...trn, status: { capacity, allocatable: capacity } } }]);
    expect((await api.filter(gpuPod('too-big-mixed', [{ name: 'main', gpu: 1, mem: 100_000 }], { namespace: 'default' }), ['zz-mixed'])).status).toBe(200);
    await open(server.url, '#/pods/default/too-big-mixed');
    expect(await textOf('.other-kinds[data-node="zz-mixed"]')).toBe('zz-mixed: 2 Neuron devices not considered: the pod asks for NVIDIA cards');
  });

  it('marks a booked pod whose bind failed as such beside its card', async () => {
    const api = controlClient(server.url);
    await api.events([{ type: 'ADDED', object: gpuNode('zz-bindfail', [card('GPU-zz-bindfail')]) }]);
    const claims = { 'hami.io/vgpu-node': 'zz-bindfail', 'hami.io/vgpu-devices-allocated': 'GPU-zz-bindfail,NVIDIA,1024,10:;' };
    const pods = await api.events([
      { type: 'ADDED', object: forwardedPod(gpuPod('bind-lost', [{ name: 'main', gpu: 1 }], { namespace: 'team-a' }), { ...claims, 'hami.io/bind-phase': 'failed' }) },
      { type: 'ADDED', object: forwardedPod(gpuPod('bind-ok', [{ name: 'main', gpu: 1 }], { namespace: 'team-a' }), { ...claims, 'hami.io/bind-phase': 'success' }, { phase: 'Running' }) },
    ]);
    expect(pods.json.rejected).toEqual([]);
    await open(server.url, '#/');
    await page.reload();
    await page.waitForSelector('section[data-node="zz-bindfail"]');
    const items = await page.$$eval('section[data-node="zz-bindfail"] ul.pods li', (lis) => lis.map((li) => li.textContent));
    expect(items.sort()).toEqual(['team-a/bind-lost bind failed', 'team-a/bind-ok']);
  });
});

describe('the console on the relay user port', () => {
  let kube: FakeKube;
  let relay: RunningRelay;

  beforeAll(async () => {
    kube = await startFakeKube({ requiredToken: 'relay-token' });
    kube.addUser('nobody-token', { username: 'nobody' });
    kube.addUser('viewer-token', { username: 'viewer' });
    kube.grant({ user: 'viewer', verb: 'list', resource: 'nodes' });
    relay = await startTestRelay(kube, server.url, { logger: recordingLogger(), env: { HAMI_API_TOKEN: '', HAMI_CONTROL_PLANE_AUTH: 'none' } });
  });

  afterAll(async () => {
    await relay.close();
    await kube.close();
  });

  it('asks for a token, keeps it for the tab, and shows a user without rights a clear 403 and no data', async () => {
    await open(relay.userUrl, '#/');
    expect(await page.$('#sign-in')).not.toBeNull();
    await page.type('#token', 'nobody-token');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#forbidden');
    expect(await textOf('main')).toContain('nodes is forbidden: User "nobody" cannot list resource "nodes"');
    expect(await page.$$('section.node')).toHaveLength(0);
    expect(await textOf('main')).not.toContain('node3');
    expect(await page.evaluate(() => [sessionStorage.getItem('hami-explain.token'), localStorage.length, location.href])).toEqual(['nobody-token', 0, `${relay.userUrl}/#/`]);

    await open(relay.userUrl, '#/pods/llm/deepseek-5996b8569d-kgwgx');
    await page.waitForSelector('#forbidden');
    expect(await textOf('main')).not.toContain('node3');
  });

  it('shows a user who may list nodes but read no namespace the usage and how many pods, naming none', async () => {
    const api = controlClient(server.url);
    const podsListed = async () => ((await api.call('GET', '/api/v1/nodes')).json as { items: { devices: { pods: string[] }[] }[] }).items.flatMap((n) => n.devices.flatMap((d) => d.pods));
    // The relay's first complete lists (its fake cluster holds no pod) clear the demo's bookings; then a pod of its own.
    await eventually(async () => expect(await podsListed()).toEqual([]));
    await api.events([{ type: 'ADDED', object: gpuNode('viewer-node', [{ id: 'GPU-viewer-0' }]) }]);
    expect((await api.filter(gpuPod('secret-train', [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'secret-ns' }), ['viewer-node'])).json.Error).toBe('');
    expect(await podsListed()).toEqual(['secret-ns/secret-train']);

    // Signed in as the viewer: the token the console keeps for the tab, then the page drawn anew.
    await open(relay.userUrl, '#/');
    await page.evaluate(() => sessionStorage.setItem('hami-explain.token', 'viewer-token'));
    await open(relay.userUrl, '#/');
    const text = await textOf('section[data-node="viewer-node"]');
    expect(text).not.toContain('secret');
    expect(await textOf('section[data-node="viewer-node"] tr[data-card="GPU-viewer-0"] [data-hidden-pods]')).toBe('1 in namespaces you may not read');
  });
});

describe('the console at 1,000 nodes x 8 cards', () => {
  let big: LocalServer;
  const name = (i: number) => `gpu-${String(i).padStart(4, '0')}`;
  const cardOf = (node: string, c: number) => `GPU-${node}-${c}`;
  const claim = (node: string, c: number, mem: number, cores: number) => ({ 'hami.io/vgpu-node': node, 'hami.io/vgpu-devices-allocated': `${cardOf(node, c)},NVIDIA,${mem},${cores}:;` });

  beforeAll(async () => {
    big = await startLocalServer({ env: {} });
    const api = controlClient(big.url);
    const events: { type: string; object: unknown }[] = [];
    for (let i = 0; i < 1000; i++) {
      const node = name(i);
      events.push({ type: 'ADDED', object: gpuNode(node, Array.from({ length: 8 }, (_, c) => card(cardOf(node, c), { devmem: 81920, type: 'NVIDIA-A100-SXM4-80GB', health: i !== 700 || c !== 3 }))) });
    }
    // 400 pods on 50 nodes, one a card; two claims past the capacity of a card of gpu-0500.
    for (let i = 100; i < 150; i++) for (let c = 0; c < 8; c++) events.push({ type: 'ADDED', object: forwardedPod(gpuPod(`run-${i}-${c}`, [{ name: 'main', gpu: 1 }], { namespace: 'prod' }), claim(name(i), c, 8000, 10), { phase: 'Running' }) });
    for (const namespace of ['team-a', 'team-b']) events.push({ type: 'ADDED', object: forwardedPod(gpuPod('claimer', [{ name: 'main', gpu: 1 }], { namespace }), claim(name(500), 0, 81920, 100), { phase: 'Running' }) });
    for (let i = 0; i < events.length; i += 500) {
      const res = await api.events(events.slice(i, i + 500));
      if (res.json.rejected.length > 0) throw new Error(`cluster events refused: ${res.text.slice(0, 300)}`);
    }
    // A pod placed and bound whose bind phase the relay has not forwarded yet: an allocation in progress on gpu-0900.
    const waiting = gpuPod('waiting', [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'ml' });
    const placed = await api.filter(waiting, [name(900)]);
    const bound = await api.bind(waiting, name(900));
    if (placed.json.Error !== '' || bound.json.Error !== '') throw new Error(`the waiting pod was not placed and bound: ${placed.text} ${bound.text}`);
  }, 120_000);

  afterAll(async () => {
    await big?.close();
  });

  it('opens on one row per node, empty nodes hidden, the troubled and the busiest first, in human units', async () => {
    await open(big.url, '#/');
    expect(await page.$eval('#view', (el) => (el as HTMLSelectElement).value)).toBe('compact');
    expect(await page.$eval('#hide-empty', (el) => (el as HTMLInputElement).checked)).toBe(true);
    expect(await textOf('#shown')).toContain('53 of 1,000 nodes match (947 empty nodes hidden)');
    const rows = await page.$$eval('#node-table tr.node-row', (els) => els.map((el) => el.getAttribute('data-node')));
    // Over-committed, then an unhealthy card, then an allocation in progress, then by usage.
    expect(rows.slice(0, 5)).toEqual(['gpu-0500', 'gpu-0700', 'gpu-0900', 'gpu-0100', 'gpu-0101']);
    expect(rows).toHaveLength(50);
    expect(await textOf('tr[data-node="gpu-0500"] [data-flag="overcommitted"]')).toBe('1 over-committed');
    expect(await textOf('tr[data-node="gpu-0700"] [data-flag="unhealthy"]')).toBe('1 unhealthy');
    expect(await textOf('tr[data-node="gpu-0900"] [data-flag="lock"]')).toContain('ml/waiting');
    expect(await textOf('tr[data-node="gpu-0100"] [data-usage="memory gpu-0100"]')).toBe('62.5 GiB of 640 GiB (9.8 %)');
    expect(await textOf('tr[data-node="gpu-0100"] [data-usage="cores gpu-0100"]')).toBe('10 % (0.8 of 8 cards)');
    const totals = await textOf('#totals');
    expect(totals).toContain('Cards 8,000 (1 unhealthy) (1 over-committed) · 1 allocation in progress');
    // 400 pods of 8,000 MiB and 10 %, two whole-card claims, the waiting pod's 1,000 MiB.
    expect(await textOf('#totals [data-usage="total memory"]')).toBe('3,286 GiB of 640,000 GiB (0.5 %)');
    expect(await textOf('#totals [data-usage="total cores"]')).toBe("0.5 % of the cluster (42 of 8,000 cards' worth)");
    expect(await textOf('#totals [data-usage="total slots"]')).toBe('403 of 80,000 (0.5 %)');
    expect(totals).toContain('Pods booked 403');
    await page.screenshot({ path: join(SHOTS, 'console-overview-1000.png') });

    await page.click('tr[data-node="gpu-0500"] button.expand');
    expect(await page.$$('tr[data-cards-of="gpu-0500"] tr[data-card]')).toHaveLength(8);
    expect(await textOf(`tr[data-cards-of="gpu-0500"] [data-overcommitted="${cardOf(name(500), 0)}"]`)).toBe('over-committed: memory, cores');

    await page.click('#hide-empty');
    expect(await textOf('#shown')).toContain('1,000 of 1,000 nodes match');
    expect(await textOf('.pager')).toContain('page 1 of 20');
    await page.select('#sort', 'pending');
    expect(await page.$eval('#node-table tr.node-row', (el) => el.getAttribute('data-node'))).toBe('gpu-0900');
  });
});
