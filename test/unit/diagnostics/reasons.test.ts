import { NodeFailure, ReasonCode } from '../../../lib/engine/types';
import { hintFor, hints } from '../../../lib/diagnostics/hints';
import { DEVICE_KINDS } from '../../../lib/engine/devices';
import { bindFailureKey, ExtraReasonKey, filterErrorKey, reasonKeysOf } from '../../../lib/diagnostics/reasons';

describe('reasonKeysOf', () => {
  it.each([
    ['1/8 ExclusiveDeviceAllocateConflict, 2/8 CardInsufficientCore', ['ExclusiveDeviceAllocateConflict', 'CardInsufficientCore']],
    ['NodeInsufficientDevice', ['NodeInsufficientDevice']],
    ['node unregistered', ['node unregistered']],
    ['Device type not found', ['Device type not found']],
    ['1/2 SomethingNew', []],
    ['2/8 CardInsufficientCore, garbage, 1/8 CardCordoned', ['CardInsufficientCore', 'CardCordoned']],
    ['node usage unavailable', []],
  ])('%j -> %j', (text, expected) => {
    expect(reasonKeysOf(text)).toEqual(expected);
  });
});

describe('bind and filter error texts', () => {
  it.each([
    ['node node3 has been locked within 5m0s: node lock contention', 'NodeLockContention'],
    ['node node3 is locked: node lock contention', 'NodeLockContention'],
    ['failed to bind pod: connection reset', 'BindingFailed'],
  ])('bind %j -> %s', (text, key) => {
    expect(bindFailureKey(text)).toBe(key);
  });
  it.each([
    ['invalid hami.io/device-scoring-weights annotation "x": expected key=value entries', 'InvalidDeviceScoringWeights'],
    ['invalid GPU resource request: container "c": nvidia.com/gpumem "-1" is negative', 'InvalidResourceRequest'],
    ['calcScore failed', 'FilterError'],
  ])('filter %j -> %s', (text, key) => {
    expect(filterErrorKey(text)).toBe(key);
  });
});

describe('hints', () => {
  const required = [...Object.values(ReasonCode), ...Object.values(NodeFailure), ...Object.values(ExtraReasonKey)];

  it.each(required)('%s has a meaning, a cause and a fix', (code) => {
    const hint = hintFor(code);
    expect(hint).toBeDefined();
    expect(hint?.code).toBe(code);
    for (const text of [hint?.meaning, hint?.cause, hint?.fix]) expect(text?.length ?? 0).toBeGreaterThan(20);
  });

  it('takes from the device kinds hints for codes and texts there are only', () => {
    for (const kind of DEVICE_KINDS) expect(Object.keys(kind.hints ?? {}).filter((key) => !(required as string[]).includes(key))).toEqual([]);
  });

  it('has no hint for an unknown code and no duplicate texts', () => {
    expect(hintFor('NotACode')).toBeUndefined();
    expect(new Set(hints.map((hint) => hint.fix)).size).toBe(hints.length);
    expect(hints).toHaveLength(new Set(required).size);
  });
});
