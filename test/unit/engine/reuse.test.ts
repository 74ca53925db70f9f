/**
 * Decisions with a memo (lib/engine/reuse.ts) are exactly decisions without one: same choice, same lists, same
 * evidence and packed evidence, on random clusters whose nodes change between pods. And the memo is used: nodes
 * whose state did not change are copied, not fitted again.
 */
import fc from 'fast-check';
import { decide } from '../../../lib/engine/decide';
import { EvaluationMemo } from '../../../lib/engine/reuse';
import type { DeviceInfo, DeviceUsage, NodeState, QuotaView } from '../../../lib/engine/types';
import type { Decision } from '../../../lib/engine/decision';
import { cardFiguresArb, cardUsageArb, config, gpu, input, pod, type Limits } from './fixtures';

type Generated<A> = A extends fc.Arbitrary<infer T> ? T : never;

const cardArb = cardFiguresArb({ count: 4, devmem: 24000 });
const usageArb = cardUsageArb({ used: 4, usedmem: 24000 });
type CardSpec = Generated<typeof cardArb>;
type UsageSpec = Generated<typeof usageArb>;
const nodeArb = fc.record({ cards: fc.array(cardArb, { maxLength: 4 }), kind: fc.constantFrom('registered', 'registered', 'registered', 'unregistered', 'unschedulable') });
// Small domains, so that pods often share some of their plan and differ in the rest (what the memo's key must tell
// apart).
const containerArb: fc.Arbitrary<Limits> = fc.record(
  {
    'nvidia.com/gpu': fc.integer({ min: 1, max: 2 }),
    'nvidia.com/gpumem': fc.constantFrom(0, 4000, 12000, 20000),
    'nvidia.com/gpucores': fc.constantFrom(0, 50, 100),
  },
  { requiredKeys: ['nvidia.com/gpu'] },
);
const shapeArb = fc.record({ app: fc.array(containerArb, { minLength: 1, maxLength: 2 }), init: fc.array(containerArb, { maxLength: 1 }) });
const annotationsArb = fc
  .tuple(
    fc.constantFrom<Record<string, string>>(
      {},
      { 'hami.io/gpu-scheduler-policy': 'spread' },
      { 'hami.io/gpu-scheduler-policy': 'numa' },
      { 'nvidia.com/use-gputype': 'A100' },
      { 'hami.io/node-scheduler-policy': 'spread' },
    ),
    // Annotations the engine does not read: pods that differ only in these share a plan.
    fc.option(fc.constantFrom('0', '1', '2'), { nil: undefined }),
  )
  .map(([engine, index]) => ({ ...(index !== undefined ? { 'batch.kubernetes.io/job-completion-index': index } : {}), ...engine }));
const quotaArb: fc.Arbitrary<QuotaView | undefined> = fc.constantFrom(undefined, { usedMem: 3000, usedCores: 0 }, { memLimit: 6000, usedMem: 0, usedCores: 0 }, { memLimit: 30000, usedMem: 14000, usedCores: 0 });
/**
 * One pod: which containers, its annotations, the namespace's quota view then, which nodes it is asked about (all, or
 * a window as kube-scheduler sends in large clusters), and which nodes got a new state before it (new usage, or the
 * same usage in a new object).
 */
const stepArb = fc.record({ shape: fc.nat(), annotations: annotationsArb, quota: quotaArb, window: fc.option(fc.record({ start: fc.nat(), length: fc.integer({ min: 1, max: 8 }) }), { nil: undefined }), changed: fc.array(fc.record({ node: fc.nat(), usage: fc.array(usageArb, { maxLength: 4 }) }), { maxLength: 3 }) });

function nodeState(n: number, spec: { cards: CardSpec[]; kind: string }, usage: UsageSpec[]): NodeState {
  const devices: DeviceInfo[] = spec.cards.map((c, i) => ({ id: `GPU-${n}-${i}`, index: i, type: 'NVIDIA-T4', mode: 'hami-core', ...c }));
  const used: Record<string, DeviceUsage> = {};
  usage.slice(0, devices.length).forEach((u, i) => (used[`GPU-${n}-${i}`] = u));
  const registration = spec.kind === 'unregistered' ? { registered: false as const, reason: 'node unregistered' } : { registered: true as const, devices, cordoned: [], pairScores: {} };
  return { name: `node-${n}`, registration, usage: used, ...(spec.kind === 'unschedulable' ? { unschedulable: 'node is being deleted' } : {}) };
}

/** Everything a caller can read of a decision, evidence and packed evidence included. */
function observable(decision: Decision): unknown {
  return JSON.parse(JSON.stringify({ ...decision, ...('packEvidence' in decision ? { packed: decision.packEvidence() } : {}) }));
}

describe('decisions reuse what they can of earlier ones, and decide the same', () => {
  it('equal a decision without the memo on every pod, while nodes change between pods', () => {
    fc.assert(
      fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 8 }), fc.array(shapeArb, { minLength: 1, maxLength: 4 }), fc.array(stepArb, { minLength: 1, maxLength: 12 }), (specs, shapes, steps) => {
        const states = specs.map((spec, n) => nodeState(n, spec, []));
        const memo = new EvaluationMemo();
        // A second memo fed as the control plane's view feeds it: one array per distinct list (the memo then finds
        // rows by position), and the candidates' states by position.
        const listMemo = new EvaluationMemo();
        const lists = new Map<string, string[]>();
        const cfg = config();
        for (const step of steps) {
          for (const change of step.changed) {
            const n = change.node % specs.length;
            states[n] = nodeState(n, specs[n]!, change.usage);
          }
          const shape = shapes[step.shape % shapes.length]!;
          const p = pod(shape.app, { init: shape.init, annotations: step.annotations });
          const { quota } = step;
          const candidates = step.window === undefined ? undefined : Array.from({ length: step.window.length }, (_, i) => `node-${(step.window!.start + i) % states.length}`);
          const extra = { config: cfg, ...(quota ? { quota } : {}), ...(candidates ? { candidates } : {}) };
          const plain = decide(input(p, states, extra));
          const reused = decide({ ...input(p, states, extra), memo });
          expect(observable(reused)).toEqual(observable(plain));
          const names = candidates ?? states.map((s) => s.name);
          const list = lists.get(names.join()) ?? names;
          lists.set(names.join(), list);
          const byName = new Map(states.map((s) => [s.name, s]));
          const byPosition = decide({ ...input(p, states, { ...extra, candidates: list }), candidateStates: list.map((name) => byName.get(name)), memo: listMemo });
          expect(observable(byPosition)).toEqual(observable(plain));
          // Released as the filter releases them: rows no memo entry keeps go to later decisions (RowStore).
          for (const done of [reused, byPosition]) if (done.kind !== 'error') done.release();
        }
      }),
      { numRuns: 200 },
    );
  });

  it('gives the rows of decisions no memo keeps any more to later decisions, and never reads rows given away', () => {
    const states = [0, 1, 2].map((n) => nodeState(n, { cards: [{ count: 4, devmem: 24000, devcore: 100, numa: 0, health: true }], kind: 'registered' }, []));
    const memo = new EvaluationMemo();
    const first = decide({ ...input(pod([{ 'nvidia.com/gpu': 1 }]), states, { config: config() }), memo });
    if (first.kind !== 'error') first.release();
    // Every node changed: the memo's rows move to the second decision's trace, and the first one's go back.
    const changed = states.map((_, n) => nodeState(n, { cards: [{ count: 4, devmem: 24000, devcore: 100, numa: 0, health: true }], kind: 'registered' }, []));
    const second = decide({ ...input(pod([{ 'nvidia.com/gpu': 1 }]), changed, { config: config() }), memo });
    expect(memo.rowStore.reused).toBe(0);
    if (second.kind !== 'error') second.release();
    const third = decide({ ...input(pod([{ 'nvidia.com/gpu': 1 }]), changed, { config: config() }), memo });
    // The third decision builds its rows in arrays an earlier one gave back.
    expect(memo.rowStore.reused).toBeGreaterThan(0);
    // The first decision's rows are the third's now: reading them through the first is refused, not wrong.
    expect(() => (first.kind !== 'error' ? first.packEvidence() : undefined)).toThrow('decision trace read after its rows were given back');
    expect(observable(third)).toEqual(observable(decide(input(pod([{ 'nvidia.com/gpu': 1 }]), changed, { config: config() }))));
  });

  it('copies the nodes whose state is the same object, and fits again the ones that changed or whose pod differs', () => {
    const states = Array.from({ length: 4 }, (_, n) => nodeState(n, { cards: [{ count: 4, devmem: 16000, devcore: 100, numa: 0, health: true }], kind: 'registered' }, []));
    const memo = new EvaluationMemo();
    const cfg = config();
    const small = pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]);
    decide({ ...input(small, states, { config: cfg }), memo });
    expect([memo.copied, memo.evaluated]).toEqual([0, 4]);
    // One node changed: three copied, one fitted.
    states[2] = nodeState(2, { cards: [{ count: 4, devmem: 16000, devcore: 100, numa: 0, health: true }], kind: 'registered' }, [{ used: 1, usedmem: 15000, usedcores: 0 }]);
    const second = decide({ ...input(small, states, { config: cfg }), memo });
    expect([memo.copied, memo.evaluated]).toEqual([3, 5]);
    expect(second.kind === 'fit' && second.failedNodes).toEqual({});
    // Another plan (more memory) has nothing to copy yet...
    const large = decide({ ...input(pod([gpu(1, { 'nvidia.com/gpumem': 2000 })]), states, { config: cfg }), memo });
    expect([memo.copied, memo.evaluated]).toEqual([3, 9]);
    expect(large.kind === 'fit' && large.failedNodes).toEqual({ 'node-2': '1/1 CardInsufficientMemory' });
    // ...while the first plan is still remembered, and another configuration starts afresh.
    decide({ ...input(small, states, { config: cfg }), memo });
    expect([memo.copied, memo.evaluated]).toEqual([7, 9]);
    decide({ ...input(small, states, { config: config() }), memo });
    expect([memo.copied, memo.evaluated]).toEqual([7, 13]);
  });

  it('keeps each node’s rows from the last decision that saw it, so moving windows of candidates are reused too', () => {
    const states = Array.from({ length: 6 }, (_, n) => nodeState(n, { cards: [{ count: 4, devmem: 16000, devcore: 100, numa: 0, health: true }], kind: 'registered' }, []));
    const memo = new EvaluationMemo();
    const cfg = config();
    const small = pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]);
    const window = (...n: number[]) => ({ ...input(small, states, { config: cfg, candidates: n.map((i) => `node-${i}`) }), memo });
    decide(window(0, 1, 2));
    decide(window(3, 4, 5));
    expect([memo.copied, memo.evaluated]).toEqual([0, 6]);
    // Both earlier windows' rows are kept: a window across them copies all.
    const across = decide(window(1, 2, 3, 4));
    expect([memo.copied, memo.evaluated]).toEqual([4, 6]);
    expect(across.kind === 'fit' && across.fitNodes.map((n) => n.name).sort()).toEqual(['node-1', 'node-2', 'node-3', 'node-4']);
  });

  it('drops the rows of a node that no decision of its plan asked about for 32 to 64 decisions (gone, or no longer sent)', () => {
    const states = Array.from({ length: 2 }, (_, n) => nodeState(n, { cards: [{ count: 4, devmem: 16000, devcore: 100, numa: 0, health: true }], kind: 'registered' }, []));
    const memo = new EvaluationMemo();
    const cfg = config();
    const small = pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]);
    const on = (...n: number[]) => decide({ ...input(small, states, { config: cfg, candidates: n.map((i) => `node-${i}`) }), memo });
    on(0, 1);
    for (let i = 0; i < 30; i++) on(1);
    // 31 decisions later node-0's rows are still there...
    on(0);
    expect([memo.copied, memo.evaluated]).toEqual([31, 2]);
    for (let i = 0; i < 64; i++) on(1);
    // ...64 more without it, and they are gone: node-0 is fitted again, though its state did not change.
    on(0);
    expect([memo.copied, memo.evaluated]).toEqual([95, 3]);
  });

  it('does not reuse decisions under the real-time check (it reads the clock) or a namespace quota with limits', () => {
    const states = [nodeState(0, { cards: [{ count: 4, devmem: 16000, devcore: 100, numa: 0, health: true }], kind: 'registered' }, [])];
    const memo = new EvaluationMemo();
    const cfg = config();
    const checked = pod([gpu(1, { 'nvidia.com/gpumem': 1000 })], { annotations: { 'hami.io/enable-realtime-check': 'true' } });
    decide({ ...input(checked, states, { config: cfg }), memo });
    decide({ ...input(checked, states, { config: cfg }), memo });
    const limited = pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]);
    const quota = { memLimit: 4000, usedMem: 1000, usedCores: 0 };
    decide({ ...input(limited, states, { config: cfg, quota }), memo });
    decide({ ...input(limited, states, { config: cfg, quota }), memo });
    expect([memo.copied, memo.evaluated]).toEqual([0, 0]);
    // A quota without limits does not enter Fit: reused.
    decide({ ...input(limited, states, { config: cfg, quota: { usedMem: 1000, usedCores: 0 } }), memo });
    decide({ ...input(limited, states, { config: cfg, quota: { usedMem: 2000, usedCores: 0 } }), memo });
    expect([memo.copied, memo.evaluated]).toEqual([1, 1]);
  });
});
