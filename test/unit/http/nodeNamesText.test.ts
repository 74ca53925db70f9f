import fc from 'fast-check';
import { readFilterArgs } from '../../../lib/http/routes';
import { NodeNamesMemo, splitNodeNames } from '../../../lib/http/nodeNamesText';

/**
 * A filter whose `NodeNames` text is the one checked last takes the names checked then (lib/http/nodeNamesText.ts).
 * Whatever the body, the arguments (or the error) must be exactly those of a reading with nothing remembered.
 */
const NAMES = ['node-a', 'node-b', 'node-c'];
const NAMES_TEXT = JSON.stringify(NAMES);

function pod(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { metadata: { name, namespace: 'team', uid: `uid-${name}`, annotations: {} }, spec: { containers: [{ name: 'main', resources: { limits: { 'nvidia.com/gpu': '1' } } }] }, ...extra };
}

/** Go's ExtenderArgs, as kube-scheduler writes them. */
function goBody(podObject: unknown, names: readonly string[] = NAMES): string {
  return JSON.stringify({ Pod: podObject, Nodes: null, NodeNames: names });
}

type Outcome = { args: unknown } | { error: string };

function outcome(read: () => unknown): Outcome {
  try {
    return { args: read() };
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

/** The memo primed with NAMES_TEXT, as after an earlier filter over the same nodes. */
function primedMemo(): NodeNamesMemo {
  const memo = new NodeNamesMemo();
  readFilterArgs(goBody(pod('earlier')), memo);
  expect(memo.reuse(NAMES_TEXT)).toEqual(NAMES);
  return memo;
}

function expectSameAsUnremembered(body: string): Outcome {
  const remembered = outcome(() => readFilterArgs(body, primedMemo()));
  expect(remembered).toEqual(outcome(() => readFilterArgs(body, new NodeNamesMemo())));
  return remembered;
}

describe('splitNodeNames', () => {
  it('cuts the names member off the end of a body as Go writes it', () => {
    const body = goBody(pod('p'));
    const split = splitNodeNames(body);
    expect(split?.namesText).toBe(NAMES_TEXT);
    expect(JSON.parse(split!.rest)).toEqual({ Pod: pod('p'), Nodes: null });
  });

  it.each([
    ['spaces', JSON.stringify({ Pod: pod('p'), NodeNames: NAMES }, null, 1)],
    ['names not last', JSON.stringify({ NodeNames: NAMES, Pod: pod('p') })],
    ['names inside the pod, at its end', JSON.stringify({ Pod: pod('p', { x: { NodeNames: NAMES } }) })],
    ['a bracket in a name', JSON.stringify({ Pod: pod('p'), NodeNames: ['a]', 'b'] })],
  ])('leaves a body alone when the names are not its last member as Go writes it (%s)', (_what, body) => {
    expect(splitNodeNames(body)).toBeUndefined();
  });
});

describe('readFilterArgs with the names text seen before', () => {
  it('takes the names checked before, and the pod of this body', () => {
    const memo = primedMemo();
    const first = readFilterArgs(goBody(pod('one')), memo);
    const second = readFilterArgs(goBody(pod('two')), memo);
    expect(second.pod.metadata.name).toBe('two');
    expect(second.nodenames).toEqual(NAMES);
    // The very same array: the view then finds its resolved list without comparing names.
    expect(second.nodenames).toBe(first.nodenames);
    expect(Object.isFrozen(second.nodenames)).toBe(true);
  });

  it('forgets a list when another comes', () => {
    const memo = primedMemo();
    expect(readFilterArgs(goBody(pod('p'), ['node-z']), memo).nodenames).toEqual(['node-z']);
    expect(memo.reuse(NAMES_TEXT)).toBeUndefined();
    expect(memo.reuse(JSON.stringify(['node-z']))).toEqual(['node-z']);
  });

  it.each([
    ['a body as Go writes it', goBody(pod('p'))],
    ['the names key also in lower case, earlier', `{"nodenames":["node-x"],"Pod":${JSON.stringify(pod('p'))},"NodeNames":${NAMES_TEXT}}`],
    // JSON.parse keeps the first place of a repeated key, so the lower-case key's value is folded in last.
    ['the names key twice and in lower case between', `{"NodeNames":["node-x"],"nodenames":["node-y"],"Pod":${JSON.stringify(pod('p'))},"NodeNames":${NAMES_TEXT}}`],
    ['the names key twice', `{"NodeNames":["node-x"],"Pod":${JSON.stringify(pod('p'))},"NodeNames":${NAMES_TEXT}}`],
    ['nothing but the names', `{"NodeNames":${NAMES_TEXT}}`],
    ['an empty member before the names', `{,"NodeNames":${NAMES_TEXT}}`],
    ['no pod', `{"Nodes":null,"NodeNames":${NAMES_TEXT}}`],
    ['a pod that fails its check', `{"Pod":{"metadata":{"name":"Not_A_Name","uid":"u"}},"NodeNames":${NAMES_TEXT}}`],
    ['a rest that is not JSON', `{"Pod":{"metadata":,"NodeNames":${NAMES_TEXT}}`],
    ['an unclosed string before the names', `{"Pod":"abc,"NodeNames":${NAMES_TEXT}}`],
    ['names nested in the pod and again at the top', `{"Pod":${JSON.stringify(pod('p', { x: { NodeNames: ['node-x'] } }))},"NodeNames":${NAMES_TEXT}}`],
  ])('reads %s as a reading with nothing remembered does', (_what, body) => {
    expectSameAsUnremembered(body);
  });

  it('reads any body ending with the remembered names as a reading with nothing remembered does', () => {
    const member = fc.oneof(
      fc.constant('"Pod":' + JSON.stringify(pod('p'))),
      fc.constant('"pod":' + JSON.stringify(pod('q'))),
      fc.constant('"Nodes":null'),
      fc.constant('"nodenames":["node-x"]'),
      fc.constant('"NodeNames":["node-y"]'),
      fc.constant('"NODENAMES":null'),
      fc.string({ maxLength: 12 }),
      fc.json({ maxDepth: 2 }).map((value) => `"x":${value}`),
    );
    fc.assert(
      fc.property(fc.array(member, { maxLength: 4 }), (members) => {
        expectSameAsUnremembered(`{${members.join(',')},"NodeNames":${NAMES_TEXT}}`);
      }),
      { numRuns: 300 },
    );
  });
});
