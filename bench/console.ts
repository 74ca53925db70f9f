/**
 * `npm run bench:console`: how long the console's overview takes to draw its default view completely in a real
 * headless Chromium, at 100 and 1,000 nodes x 8 cards with one running pod booked on every card (8,000 pods at
 * 1,000 nodes), served by the local server with its store in a child process as `npm start` runs it. The default
 * view is what a user opens on: every card of every node up to one page of nodes; past that (1,000 nodes) one row
 * per node, sorted by what needs a look, empty nodes hidden (docs/api.md §11). Time is from the start of
 * navigation to the end of the first complete render (every node loaded through GET /api/v1/nodes, summaries,
 * totals and the order computed, the first page of nodes drawn), read from the page's own performance timeline;
 * the median of `--runs` loads after a warm-up. Also the bytes of the console's assets.
 * Last line: one JSON object. Target (issues 18 and 45): at most 1,000 ms at 1,000 nodes.
 *
 * Flags: --runs 5 --sizes 100,1000
 */
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { consoleAssetBytes } from '../lib/console/serve';
import type { startLocalServer as StartLocalServer } from '../lib/local/server';
import { launchBrowser } from '../test/support/browser';
import { card, controlClient, gpuNode, gpuPod } from '../test/support/cluster';
import { cardId } from './workload';
import { assets } from 'virtual:console-assets';
import { errorMessage } from '../lib/errors';

// Set before the server's observability clients are built (they read the environment at import): quiet logs.
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const CARDS = 8;
let startLocalServer: typeof StartLocalServer;
const BATCH = 500;

function runningPod(node: string, c: number) {
  const pod = gpuPod(`run-${node}-${c}`, [{ name: 'main', gpu: 1, mem: 8000, cores: 10 }], { namespace: 'prod' });
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    ...pod,
    metadata: { ...pod.metadata, annotations: { 'hami.io/vgpu-node': node, 'hami.io/vgpu-devices-allocated': `${cardId(node, c)},NVIDIA,8000,10:;`, 'hami.io/bind-phase': 'success' } },
    spec: { ...pod.spec, nodeName: node },
    status: { phase: 'Running' },
  };
}

async function measure(
  nodes: number,
  runs: number,
  log: (line: string) => void,
): Promise<{ nodes: number; cards: number; podsBooked: number; defaultView: string; firstRenderMs: number; runsMs: number[]; listBytes: number }> {
  const server = await startLocalServer({ env: {}, storeMode: 'child-process' });
  const browser = await launchBrowser();
  try {
    const api = controlClient(server.url);
    const names = Array.from({ length: nodes }, (_, i) => `gpu-${String(i).padStart(4, '0')}`);
    const events: { type: string; object: unknown }[] = names.map((name) => ({ type: 'ADDED', object: gpuNode(name, Array.from({ length: CARDS }, (_, c) => card(cardId(name, c), { devmem: 81920, type: 'NVIDIA-A100-SXM4-80GB' }))) }));
    for (const name of names) for (let c = 0; c < CARDS; c++) events.push({ type: 'ADDED', object: runningPod(name, c) });
    for (let i = 0; i < events.length; i += BATCH) {
      const res = await api.events(events.slice(i, i + BATCH));
      if (res.status !== 200 || res.json.rejected.length > 0) throw new Error(`cluster events refused: ${res.text.slice(0, 300)}`);
    }
    const listBytes = (await api.call('GET', '/api/v1/nodes?limit=1000')).text.length;
    const page = await browser.browser.newPage();
    const times: number[] = [];
    const views = new Set<string>();
    for (let run = 0; run <= runs; run++) {
      await page.goto('about:blank');
      await page.goto(`${server.url}/#/`);
      await page.waitForSelector('main[data-rendered]', { timeout: 60_000 });
      // The default view: one row per node past a page of nodes, every card below that.
      const view = await page.$eval('#view', (el) => (el as HTMLSelectElement).value);
      const drawn = await page.$$eval(view === 'compact' ? '#node-table tr.node-row' : 'section.node tr[data-card]', (rows) => rows.length);
      if (drawn === 0) throw new Error(`the overview's default view (${view}) drew nothing`);
      views.add(view);
      const ms = await page.evaluate(() => performance.getEntriesByName('console-rendered')[0]?.startTime ?? Number.NaN);
      // The first load warms the server's and the browser's caches; it is reported apart.
      if (run > 0) times.push(Math.round(ms));
      log(`  ${nodes} nodes: load ${run}${run === 0 ? ' (warm-up)' : ''}: ${Math.round(ms)} ms`);
    }
    const sorted = [...times].sort((a, b) => a - b);
    return { nodes, cards: nodes * CARDS, podsBooked: nodes * CARDS, defaultView: [...views].join(','), firstRenderMs: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN, runsMs: times, listBytes };
  } finally {
    await browser.close();
    await server.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: 'string', default: '5' }, sizes: { type: 'string', default: '100,1000' } }, strict: true });
  ({ startLocalServer } = await import('../lib/local/server'));
  const runs = Number(values.runs);
  const sizes = (values.sizes ?? '').split(',').map(Number);
  const results = [];
  for (const nodes of sizes) {
    process.stdout.write(`overview at ${nodes} nodes x ${CARDS} cards, ${nodes * CARDS} pods booked\n`);
    results.push(await measure(nodes, runs, (line) => process.stdout.write(`${line}\n`)));
  }
  const gzipBytes = assets.reduce((sum, asset) => sum + gzipSync(asset.body).length, 0);
  const at1000 = results.find((r) => r.nodes === 1000);
  process.stdout.write(
    `${JSON.stringify({
      bench: 'console',
      assetBytes: consoleAssetBytes(),
      assetGzipBytes: gzipBytes,
      overview: results,
      targetMs: 1000,
      targetMet: at1000 === undefined ? null : at1000.firstRenderMs <= 1000,
    })}\n`,
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:console failed: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
