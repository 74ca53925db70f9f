/**
 * Extender answers as the relay reads them (lib/wire/extender.ts): as kube-scheduler's Go decoder would, or an
 * explained error.
 */
import { readBindingResult, readFilterResult } from '../../../lib/wire/extender';

describe('readFilterResult', () => {
  it('takes keys in any letter case under their own names, leaves absent keys absent and drops unknown ones', () => {
    expect(readFilterResult({ nodeNames: ['n1'], FAILEDNODES: { n2: 'x' }, Extra: 1 })).toEqual({ ok: true, value: { NodeNames: ['n1'], FailedNodes: { n2: 'x' } } });
  });

  it('says what is wrong with an answer that does not match', () => {
    expect(readFilterResult({ NodeNames: 'n1', Error: '' })).toEqual({ ok: false, error: expect.stringMatching(/^control plane sent an invalid ExtenderFilterResult: NodeNames: /) });
    expect(readFilterResult({ Nodes: { items: [{ metadata: {} }] } })).toEqual({ ok: false, error: expect.stringMatching(/Nodes\.items\.0\.metadata\.name/) });
  });
});

describe('readBindingResult', () => {
  it('reads Error, and refuses one that is not text', () => {
    expect(readBindingResult({ error: 'locked' })).toEqual({ ok: true, value: { Error: 'locked' } });
    expect(readBindingResult({ Error: null })).toEqual({ ok: false, error: expect.stringMatching(/^control plane sent an invalid ExtenderBindingResult: Error: /) });
  });
});
