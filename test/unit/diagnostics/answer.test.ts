import { answerFor, type AnswerInput } from '../../../lib/diagnostics/answer';

const filter = (over: Partial<AnswerInput['filter']> = {}): AnswerInput['filter'] => ({ status: 'passed', summary: 'find fit node(node3)', node: 'node3', reasons: [], evaluated: 4, ...over });
const bind = (over: Partial<AnswerInput['bind']> = {}): AnswerInput['bind'] => ({ status: 'pending', summary: '', ...over });

describe('answerFor: one sentence, outcome first, with the fix of its reason', () => {
  it.each<[string, AnswerInput, { sentence: string; code?: string }]>([
    ['bound', { status: 'succeeded', filter: filter(), bind: bind({ status: 'passed', node: 'node3' }) }, { sentence: 'Scheduled: bound to node3.' }],
    ['placed, bind not reported', { status: 'pending', filter: filter(), bind: bind() }, { sentence: 'Placed on node3; the bind has not been reported yet.' }],
    [
      'bind met the node lock',
      { status: 'failed', filter: filter(), bind: bind({ status: 'failed', summary: 'node node3 has been locked within 5m0s: node lock contention' }) },
      { sentence: 'Pending: node3 was chosen, but the bind failed: node node3 has been locked within 5m0s: node lock contention', code: 'NodeLockContention' },
    ],
    [
      'no node fits, one reason',
      { status: 'failed', filter: filter({ status: 'failed', reasons: [{ code: 'CardInsufficientMemory', nodes: 1 }], evaluated: 1 }), bind: bind() },
      { sentence: 'Pending: no node fits. 1 of 1 node fails with CardInsufficientMemory.', code: 'CardInsufficientMemory' },
    ],
    [
      'no node fits, several reasons',
      { status: 'failed', filter: filter({ status: 'failed', reasons: [{ code: 'CardCordoned', nodes: 3 }, { code: 'node unregistered', nodes: 1 }], evaluated: 4 }), bind: bind() },
      { sentence: 'Pending: no node fits. 3 of 4 nodes fail with CardCordoned; 1 other reason on the rest.', code: 'CardCordoned' },
    ],
    [
      'a bad pod',
      { status: 'failed', filter: filter({ status: 'failed', summary: 'invalid hami.io/device-scoring-weights annotation "x": expected slot, core, and memory weights', evaluated: 0 }), bind: bind() },
      { sentence: 'Pending: the filter refused the pod before trying any node: invalid hami.io/device-scoring-weights annotation "x": expected slot, core, and memory weights', code: 'InvalidDeviceScoringWeights' },
    ],
    ['no candidates', { status: 'failed', filter: filter({ status: 'failed', summary: 'no available node, 0 nodes do not meet', evaluated: 0 }), bind: bind() }, { sentence: 'Pending: the scheduler offered no candidate node to the filter.' }],
  ])('%s', (_case, input, expected) => {
    const answer = answerFor(input);
    expect({ sentence: answer.sentence, code: answer.code }).toEqual({ sentence: expected.sentence, code: expected.code });
    // Every answer that names a reason carries that reason's fix, and only those.
    expect(answer.fix !== undefined).toBe(expected.code !== undefined);
  });
});
