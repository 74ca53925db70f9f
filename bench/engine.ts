/**
 * `npm run bench:engine`: decides one 2-container pod against N nodes of 8 cards with existing
 * usage, given as the control plane gives it: each node's state made from its ledger (`toNodeState`, usage by position
 * included) and the states by candidate position. No memo: every node is fitted, as a decision on nodes that all
 * changed since the last one. Prints per-size lines, then, as the last line, one JSON summary:
 * {"nodes":1000,"cardsPerNode":8,"medianMs":…,"p99Ms":…,"scaling":[{"nodes":100,"medianMs":…,"runs":[…]},…],
 *  "coldStart":{"nodes":5000,"buildMs":…,"firstDecideMs":…,"runs":[…]}}
 *
 * Each size is measured in a Node.js process of its own, as a control plane's execution environment only ever decides
 * on its own cluster: decisions on other sizes in the same process leave V8's compiled code shaped by them (an array
 * packed at one size and holey at another, objects whose hidden class changed), which no environment sees. Inputs are
 * built once, outside the timed region, and warmed up first. The summary times `decide` alone. The engine builds the
 * evidence objects when `decision.evidence` is first read (callers that log or store it pay for them then), so
 * afterwards, for information, the same process also times `decide` plus reading the whole evidence.
 *
 * Each size is measured in `SIZE_ROUNDS` processes, the sizes taken in turn, and its figures are the median of its
 * processes' (each process's median in `runs`): on a shared machine a busy spell during one process moved that size's
 * median by 10 to 20 %, and with it the ratio of two sizes.
 *
 * `coldStart` is the first decision of a new execution environment (a new Lambda environment's first filter, once its
 * view is loaded): each run is a fresh Node.js process that builds the 5,000-node input (`buildMs`, not part of the
 * decision) and then times its first `decide` (`firstDecideMs` is the median of the runs', each run's figures in
 * `runs`). Nothing is warmed up: that first call pays for compiling the engine's code and preparing every node.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { decide } from '../lib/engine/decide';
import { parseNodeRegistration } from '../lib/engine/registration';
import { defaultEngineConfig } from '../lib/config';
import { toNodeState, type Booking, type CardUse, type NodeLedger } from '../lib/control/ledger';
import type { NodeRegistration, NodeState, PodLike } from '../lib/engine/types';
import type { DecideInput } from '../lib/engine/decision';
import { cardId } from './workload';

const CARDS_PER_NODE = 8;
const SIZES = [100, 1000, 5000];
const HEADLINE_NODES = 1000;
const COLD_NODES = 5000;
const COLD_RUNS = 3;
/** Processes per size (see the top of this file). */
const SIZE_ROUNDS = 5;
/** The argument that makes this script one cold-start run (see `coldStart`). */
const COLD_FLAG = '--cold-start-run';
/** The argument, followed by a node count, that makes this script the measurement of one size (see `sizeRun`). */
const SIZE_FLAG = '--size-run';

interface SizeResult {
  readonly nodes: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  /** `decide` plus reading every node's evidence, measured after the figures above. */
  readonly withEvidence: { readonly medianMs: number; readonly p99Ms: number };
}

/** Deterministic pseudo-random numbers so runs are comparable. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function cluster(nodeCount: number): DecideInput {
  const random = lcg(42);
  const nowMs = Date.now();
  const nodes = new Map<string, NodeState>();
  const candidates: string[] = [];
  for (let n = 0; n < nodeCount; n++) {
    const name = `node-${String(n).padStart(5, '0')}`;
    const devices = Array.from({ length: CARDS_PER_NODE }, (_, i) => ({
      id: cardId(name, i),
      index: i,
      count: 10,
      devmem: 81920,
      devcore: 100,
      type: 'NVIDIA-A100-SXM4-80GB',
      numa: i < 4 ? 0 : 1,
      health: true,
      mode: 'hami-core',
    }));
    const registration = parseNodeRegistration(
      { metadata: { name, annotations: { 'hami.io/node-nvidia-register': JSON.stringify(devices) } } },
      defaultEngineConfig,
    );
    // The existing usage as bookings on the node's ledger, and the node's state as the control plane's view gives it
    // to the engine (lib/control/ledger.ts `toNodeState`: usage by position included).
    const uses = devices.map((device) => {
      const used = Math.floor(random() * 6);
      return { uuid: device.id, slots: used, mem: used * 8000, cores: used * 10 };
    });
    nodes.set(name, toNodeState(ledgerOf(name, registration, uses), nowMs));
    candidates.push(name);
  }
  const pod: PodLike = {
    metadata: { name: 'bench', namespace: 'default', annotations: {} },
    spec: {
      containers: [
        { name: 'trainer', resources: { limits: { 'nvidia.com/gpu': 2, 'nvidia.com/gpumem': 20000, 'nvidia.com/gpucores': 30 } } },
        { name: 'sidecar', resources: { limits: { 'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 4000, 'nvidia.com/gpucores': 10 } } },
      ],
    },
  };
  // By position, as the control plane's view passes them (`ClusterView.engineCandidates`), in an array made the same way:
  // `map` makes a packed array for 1,000 nodes and a holey one for 5,000, and the engine's code, compiled for the one,
  // was compiled again for both when the bench came to the other.
  const candidateStates = new Array<NodeState | undefined>(candidates.length);
  for (let i = 0; i < candidates.length; i++) candidateStates[i] = nodes.get(candidates[i]!);
  return { pod, candidates, candidateStates, nodes, config: defaultEngineConfig, nowMs };
}

/** A node's ledger holding `uses` as one confirmed booking. */
function ledgerOf(name: string, registration: NodeRegistration, uses: CardUse[]): NodeLedger {
  const booking: Booking = {
    namespace: 'default',
    name: `running-on-${name}`,
    state: 'confirmed',
    initCount: 0,
    initDone: true,
    uses,
    holdsAppCards: true,
    origin: 'decided',
  };
  return { name, version: 1, deleted: false, registration, registrationVersion: 1, bookings: { [`uid-${name}`]: booking }, counters: {} };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Decides once; with `readEvidence`, also builds every node's evidence (what logging and records read). */
function decideOnce(input: DecideInput, readEvidence: boolean): void {
  const decision = decide(input);
  if (decision.kind !== 'fit') throw new Error(`benchmark pod did not fit: ${decision.kind}`);
  if (readEvidence && decision.evidence.length !== input.candidates.length) throw new Error('evidence is missing nodes');
}

function measure(input: DecideInput, runs: number, readEvidence = false): { medianMs: number; p99Ms: number } {
  for (let i = 0; i < Math.max(20, runs / 5); i++) decideOnce(input, readEvidence); // warm-up: let the JIT settle
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    decideOnce(input, readEvidence);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const round = (ms: number): number => Math.round(ms * 1000) / 1000;
  return { medianMs: round(percentile(times, 50)), p99Ms: round(percentile(times, 99)) };
}

/** One cold-start run, in this fresh process: prints `{"buildMs":…,"firstDecideMs":…}`. */
function coldStartRun(): void {
  const built = performance.now();
  const input = cluster(COLD_NODES);
  const start = performance.now();
  decideOnce(input, false);
  const end = performance.now();
  const round = (ms: number): number => Math.round(ms * 10) / 10;
  console.log(JSON.stringify({ buildMs: round(start - built), firstDecideMs: round(end - start) }));
}

/** One size measured in this fresh process: prints a `SizeResult` as JSON. */
function sizeRun(nodes: number): void {
  if (!Number.isInteger(nodes) || nodes < 1) throw new Error(`${SIZE_FLAG} needs a node count, got ${nodes}`);
  const input = cluster(nodes);
  const decideOnly = measure(input, nodes >= 5000 ? 100 : 200);
  // After the figures above, so the evidence objects' garbage cannot land in their timings.
  const withEvidence = measure(input, nodes >= 5000 ? 20 : 50, true);
  const result: SizeResult = { nodes, ...decideOnly, withEvidence };
  console.log(JSON.stringify(result));
}

/** Runs this script again in a new process with this process's Node.js and flags; returns the last line's JSON. */
function runChild<T>(args: readonly string[], what: string): T {
  const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, ...args], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`${what} failed (exit ${child.status}): ${child.stderr}`);
  const lines = child.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as T;
}

/** Cold-start runs, each in a new process (see `coldStartRun`). */
function coldStart(): { nodes: number; buildMs: number; firstDecideMs: number; runs: { buildMs: number; firstDecideMs: number }[] } {
  const runs: { buildMs: number; firstDecideMs: number }[] = [];
  for (let i = 0; i < COLD_RUNS; i++) runs.push(runChild<{ buildMs: number; firstDecideMs: number }>([COLD_FLAG], 'cold-start run'));
  return { nodes: COLD_NODES, buildMs: median(runs.map((r) => r.buildMs)), firstDecideMs: median(runs.map((r) => r.firstDecideMs)), runs };
}

function main(): void {
  // First, while this process has built nothing: each run is a process of its own.
  const cold = coldStart();
  console.log(`nodes=${cold.nodes} cold start: build=${cold.buildMs}ms first decide=${cold.firstDecideMs}ms (median of ${COLD_RUNS} fresh processes)`);
  // One process after the other, never side by side: each has the machine to itself.
  const results = new Map<number, SizeResult[]>(SIZES.map((nodes) => [nodes, []]));
  for (let round = 0; round < SIZE_ROUNDS; round++) {
    for (const nodes of SIZES) {
      const result = runChild<SizeResult>([SIZE_FLAG, String(nodes)], `measurement of ${nodes} nodes`);
      console.log(`nodes=${nodes} cards=${nodes * CARDS_PER_NODE} median=${result.medianMs}ms p99=${result.p99Ms}ms; decide + read all evidence: median=${result.withEvidence.medianMs}ms p99=${result.withEvidence.p99Ms}ms`);
      results.get(nodes)!.push(result);
    }
  }
  const scaling = SIZES.map((nodes) => {
    const runs = results.get(nodes)!;
    return { nodes, medianMs: median(runs.map((r) => r.medianMs)), p99Ms: median(runs.map((r) => r.p99Ms)), runs: runs.map((r) => r.medianMs) };
  });
  for (const size of scaling) console.log(`nodes=${size.nodes} median of ${SIZE_ROUNDS} processes: median=${size.medianMs}ms p99=${size.p99Ms}ms`);
  const headline = scaling.find((size) => size.nodes === HEADLINE_NODES)!;
  console.log(
    JSON.stringify({
      nodes: HEADLINE_NODES,
      cardsPerNode: CARDS_PER_NODE,
      medianMs: headline.medianMs,
      p99Ms: headline.p99Ms,
      scaling: scaling.map(({ nodes, medianMs, runs }) => ({ nodes, medianMs, runs })),
      coldStart: cold,
    }),
  );
}

/** The middle value (the upper middle of an even count). */
function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

const sizeAt = process.argv.indexOf(SIZE_FLAG);
if (process.argv.includes(COLD_FLAG)) coldStartRun();
else if (sizeAt >= 0) sizeRun(Number(process.argv[sizeAt + 1]));
else main();
