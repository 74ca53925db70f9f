/**
 * Cards booked past their capacity (lib/engine/capacity.ts) and real-time readings dated ahead of the clock
 * (lib/engine/fit.ts): what Fit does with each, next to HAMi's own checks, which keep deciding everything else.
 */
import { isOvercommitted, overcommittedDimensions } from '../../../lib/engine/capacity';
import { decide } from '../../../lib/engine/decide';
import { REALTIME_CLOCK_ALLOWANCE_MS, realtimeReportFresh } from '../../../lib/engine/fit';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { ReasonCode, type DeviceUsage, type NodeState } from '../../../lib/engine/types';
import { type Decision } from '../../../lib/engine/decision';
import { hintFor } from '../../../lib/diagnostics/hints';
import { card, config, gpu, input, node, pod } from './fixtures';

const reasonOf = (d: Decision, name = 'n1'): string | undefined => (d.kind === 'noFit' ? d.failedNodes[name] : `not refused: ${d.kind}`);
const usage = (used: number, usedmem: number, usedcores: number): DeviceUsage => ({ used, usedmem, usedcores });

describe('capacity: the rule', () => {
  const capacity = { count: 10, devmem: 16384, devcore: 100 };
  it.each<[string, DeviceUsage, boolean, string[]]>([
    ['idle', usage(0, 0, 0), false, []],
    ['exactly full', usage(10, 16384, 100), false, []],
    ['memory past', usage(2, 32384, 100), false, ['memory']],
    ['cores past', usage(2, 1000, 150), false, ['cores']],
    ['slots past', usage(11, 1000, 10), false, ['slots']],
    ['everything past', usage(11, 16385, 101), false, ['slots', 'memory', 'cores']],
    ['cores as a mask are no amount', usage(1, 0, 150), true, []],
    ['slots still count where cores are a mask', usage(11, 0, 1), true, ['slots']],
  ])('%s', (_label, use, coreMask, dimensions) => {
    expect(overcommittedDimensions(capacity, use.used, use.usedmem, use.usedcores, coreMask)).toEqual(dimensions);
    expect(isOvercommitted(capacity, use.used, use.usedmem, use.usedcores, coreMask)).toBe(dimensions.length > 0);
  });
});

describe('capacity: Fit refuses an over-committed card', () => {
  const request = pod([gpu(1, { 'nvidia.com/gpumem': 100 })]);
  const twoCards = (usageOfA: DeviceUsage): NodeState => node('n1', [card('a', { devmem: 16384 }), card('b', { index: 1, devmem: 16384 })], { usage: { a: usageOfA, b: usage(0, 16384, 0) } });

  it.each<[string, DeviceUsage, string]>([
    ['memory past its devmem', usage(2, 32384, 100), '1/2 CardInsufficientMemory, 1/2 CardOvercommitted'],
    ['cores past its devcore', usage(2, 1000, 150), '1/2 CardInsufficientMemory, 1/2 CardOvercommitted'],
    ['slots past its count', usage(11, 1000, 10), '1/2 CardInsufficientMemory, 1/2 CardOvercommitted'],
    // At capacity, not past it: HAMi's checks say why, as HAMi would.
    ['memory exactly full (HAMi’s reason)', usage(1, 16384, 0), '2/2 CardInsufficientMemory'],
    ['slots exactly full (HAMi’s reason)', usage(10, 1000, 10), '1/2 CardInsufficientMemory, 1/2 CardTimeSlicingExhausted'],
  ])('%s', (_label, usageOfA, reason) => {
    expect(reasonOf(decide(input(request, [twoCards(usageOfA)])))).toBe(reason);
  });

  it('a sum past int32 stays past the card (the engine\'s int32 arrays clamp it, never wrap it to free memory)', () => {
    // 2^32 + 100 MiB booked would wrap to 100 MiB used.
    const wrapped = node('n1', [card('a', { devmem: 16384 })], { usage: { a: usage(2, 2 ** 32 + 100, 0) } });
    expect(reasonOf(decide(input(request, [wrapped])))).toBe('1/1 CardOvercommitted');
  });

  it('takes the card again once it is back within its capacity', () => {
    const back = node('n1', [card('a', { devmem: 16384 })], { usage: { a: usage(1, 16000, 0) } });
    const d = decide(input(request, [back]));
    expect(d.kind).toBe('fit');
  });

  it('comes before HAMi’s capacity checks and after the checks that say the card is not for this pod', () => {
    const over = usage(11, 32384, 150);
    const unhealthy = node('n1', [card('a', { health: false })], { usage: { a: over } });
    expect(reasonOf(decide(input(request, [unhealthy])))).toBe('1/1 CardNotHealth');
    const otherType = pod([gpu(1, { 'nvidia.com/gpumem': 100 })], { annotations: { 'nvidia.com/use-gputype': 'H100' } });
    expect(reasonOf(decide(input(otherType, [node('n1', [card('a')], { usage: { a: over } })])))).toBe('1/1 CardTypeMismatch');
  });

  it('names the outcome in the card’s evidence, and the code has a hint', () => {
    const d = decide(input(request, [node('n1', [card('a', { devmem: 16384 })], { usage: { a: usage(2, 32384, 100) } })]));
    if (d.kind === 'error') throw new Error(d.message);
    expect(d.evidence[0]!.containers[0]!.cards.map((c) => [c.outcome, c.usedMem, c.totalMem])).toEqual([[ReasonCode.CardOvercommitted, 32384, 16384]]);
    expect(hintFor(ReasonCode.CardOvercommitted)?.meaning).toMatch(/booked past its memory, cores or slots/);
  });

  it('applies to AWS Neuron devices by their slots (their cores are masks)', () => {
    const trn = { metadata: { name: 'trn', labels: { 'node.kubernetes.io/instance-type': 'trn1.32xlarge' } }, status: { capacity: { 'aws.amazon.com/neuron': '1', 'aws.amazon.com/neuroncore': '2', cpu: '8' } } };
    const registration = parseNodeRegistration(trn, config());
    const state = (use: DeviceUsage): NodeState => ({ name: 'trn', registration, usage: { 'trn-AWSNeuron-0': use } });
    const wants = pod([{ 'aws.amazon.com/neuroncore': 1 }]);
    expect(reasonOf(decide(input(wants, [state(usage(3, 0, 1))])), 'trn')).toBe('1/1 CardOvercommitted');
    expect(reasonOf(decide(input(wants, [state(usage(2, 0, 3))])), 'trn')).toBe('1/1 CardTimeSlicingExhausted');
  });
});

describe('real-time readings dated ahead of the clock', () => {
  const now = 1_700_000_000_000;
  const maxAgeMs = 60_000;

  it.each<[string, number, boolean]>([
    ['a second old', 1_000, true],
    ['at the age limit', maxAgeMs, true],
    ['past the age limit', maxAgeMs + 1, false],
    ['a second ahead (clocks disagree a little)', -1_000, true],
    ['at the clock allowance', -REALTIME_CLOCK_ALLOWANCE_MS, true],
    ['past the clock allowance', -REALTIME_CLOCK_ALLOWANCE_MS - 1, false],
    ['a year ahead', -365 * 24 * 3600 * 1000, false],
  ])('%s', (_label, ageMs, fresh) => {
    expect(realtimeReportFresh(now - ageMs, now, maxAgeMs)).toBe(fresh);
  });

  it('a reading dated far ahead is stale: strict mode falls back to the ledger instead of refusing the card', () => {
    const cfg = config({ realtime: { enabled: true, mode: 'strict', marginMiB: 100, maxAgeMs } });
    // The reading says the card is nearly full; the ledger has it idle.
    const reading = (timeMs: number) => ({ timeMs, devices: { a: { usedMemMB: 8000, totalMemMB: 8192 } } });
    const wants = pod([gpu(1, { 'nvidia.com/gpumem': 2000 })]);
    const ahead = decide(input(wants, [node('n1', [card('a')], { realtime: reading(now + 3600_000) })], { config: cfg, nowMs: now }));
    expect(ahead.kind).toBe('fit');
    expect(ahead.kind === 'fit' ? ahead.realtime.map((n) => n.outcome) : []).toEqual(['fallback']);
    const slightlyAhead = decide(input(wants, [node('n1', [card('a')], { realtime: reading(now + 5_000) })], { config: cfg, nowMs: now }));
    expect(reasonOf(slightlyAhead)).toBe('1/1 CardRealtimeInsufficientMemory');
  });
});
