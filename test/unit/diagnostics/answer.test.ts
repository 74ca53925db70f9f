import { answerFor, noFitCounts, type AnswerInput } from '../../../lib/diagnostics/answer';

const filter = (over: Partial<AnswerInput['filter']> = {}): AnswerInput['filter'] => ({ status: 'passed', summary: 'find fit node(node3)', node: 'node3', reasons: [], evaluated: 4, ...over });
const bind = (over: Partial<AnswerInput['bind']> = {}): AnswerInput['bind'] => ({ status: 'pending', summary: '', ...over });

describe('answerFor: one sentence, outcome first, with the fix of its reason', () => {
  it.each<[string, AnswerInput, { sentence: string; code?: string }]>([
    ['bound', { status: 'succeeded', filter: filter(), bind: bind({ status: 'passed', node: 'node3' }) }, { sentence: 'Scheduled: bound to node3.' }],
    ['placed, bind not reported', { status: 'pending', filter: filter(), bind: bind() }, { sentence: 'Binding: placed on node3; the bind has not been reported yet.' }],
    [
      'bind met the node lock',
      { status: 'failed', filter: filter(), bind: bind({ status: 'failed', summary: 'node node3 has been locked within 5m0s: node lock contention' }) },
      { sentence: 'Bind failed: node3 was chosen, but the pod could not be bound there: node node3 has been locked within 5m0s: node lock contention', code: 'NodeLockContention' },
    ],
    [
      'no node fits, one reason',
      { status: 'failed', filter: filter({ status: 'failed', reasons: [{ code: 'CardInsufficientMemory', nodes: 1 }], evaluated: 1 }), bind: bind() },
      { sentence: 'Pending: no node fits. The only node evaluated fails with CardInsufficientMemory.', code: 'CardInsufficientMemory' },
    ],
    [
      'no node fits, several reasons',
      { status: 'failed', filter: filter({ status: 'failed', reasons: [{ code: 'CardCordoned', nodes: 3 }, { code: 'node unregistered', nodes: 1 }], evaluated: 4 }), bind: bind() },
      { sentence: 'Pending: no node fits. 3 of 4 nodes fail with CardCordoned; also node unregistered on 1 node.', code: 'CardCordoned' },
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

describe('noFitCounts: the counts of the answer are right for every mix of nodes and reasons', () => {
  const r = (code: string, nodes: number) => ({ code, nodes });
  it.each<[string, ReturnType<typeof r>[], number, string]>([
    ['1 node, 1 reason', [r('CardNotHealth', 1)], 1, 'The only node evaluated fails with CardNotHealth'],
    ['n nodes, all the same reason', [r('CardNotHealth', 4)], 4, 'All 4 nodes fail with CardNotHealth'],
    ['n nodes, 1 reason on some, none on the others', [r('CardNotHealth', 3)], 4, '3 of 4 nodes fail with CardNotHealth; the other 1 node shows no reason code'],
    ['n nodes, 1 reason on one node, none on the others', [r('CardNotHealth', 1)], 3, '1 of 3 nodes fails with CardNotHealth; the other 2 nodes show no reason code'],
    ['n nodes, two reasons', [r('CardInsufficientMemory', 2), r('CardNotHealth', 2)], 4, '2 of 4 nodes fail with CardInsufficientMemory; also CardNotHealth on 2 nodes'],
    ['all nodes one reason, another reason on some of them', [r('NodeUnfitPod', 4), r('CardNotHealth', 1)], 4, 'All 4 nodes fail with NodeUnfitPod; also CardNotHealth on 1 node'],
    ['1 node, two reasons', [r('NodeUnfitPod', 1), r('CardNotHealth', 1)], 1, 'The only node evaluated fails with NodeUnfitPod; also CardNotHealth on 1 node'],
    ['three reasons', [r('A', 3), r('B', 2), r('C', 1)], 4, '3 of 4 nodes fail with A; also B on 2 nodes and C on 1 node'],
    ['several reasons: two named, the rest counted', [r('A', 2), r('B', 2), r('C', 1), r('D', 1), r('E', 1)], 4, '2 of 4 nodes fail with A; also B on 2 nodes, C on 1 node and 2 other reasons'],
    ['one more reason than named', [r('A', 2), r('B', 1), r('C', 1), r('D', 1)], 4, '2 of 4 nodes fail with A; also B on 1 node, C on 1 node and 1 other reason'],
  ])('%s', (_case, reasons, evaluated, expected) => {
    expect(noFitCounts(reasons, evaluated)).toBe(expected);
    // Never a "rest" the counts cannot back.
    expect(noFitCounts(reasons, evaluated)).not.toContain('the rest');
  });
});
