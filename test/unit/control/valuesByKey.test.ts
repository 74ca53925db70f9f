/**
 * The warm view's indexes (pod uid -> nodes holding a booking, pod name -> uids) keep a key's one value as it is and
 * a list only for more: a pod filtered again on other nodes, a pod of the same name created again. Whatever the order
 * of adds and removes, they answer as a map of sets would.
 */
import fc from 'fast-check';
import { ValuesByKey } from '../../../lib/control/view';

describe('the view’s indexes answer as a map of sets would', () => {
  it('through a pod booked on one node, then on two more, then given back one by one', () => {
    const holders = new ValuesByKey();
    expect(holders.add('uid-1', 'n1')).toBe(true);
    expect(holders.add('uid-1', 'n1')).toBe(false);
    expect(holders.add('uid-1', 'n2')).toBe(false);
    expect(holders.add('uid-1', 'n3')).toBe(false);
    expect(holders.values('uid-1')).toEqual(['n1', 'n2', 'n3']);
    expect(holders.remove('uid-1', 'n2')).toBe(false);
    expect(holders.remove('uid-1', 'n9')).toBe(false);
    expect(holders.values('uid-1')).toEqual(['n1', 'n3']);
    expect(holders.remove('uid-1', 'n1')).toBe(false);
    expect(holders.values('uid-1')).toEqual(['n3']);
    expect(holders.remove('uid-1', 'n3')).toBe(true);
    expect(holders.values('uid-1')).toEqual([]);
    expect(holders.remove('uid-1', 'n3')).toBe(false);
  });

  it('on random adds and removes', () => {
    const op = fc.record({ add: fc.boolean(), key: fc.constantFrom('a', 'b'), value: fc.constantFrom('n1', 'n2', 'n3', 'n4') });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const index = new ValuesByKey();
        const model = new Map<string, Set<string>>();
        for (const { add, key, value } of ops) {
          const set = model.get(key) ?? new Set<string>();
          const wasEmpty = set.size === 0;
          const had = set.has(value);
          if (add) set.add(value);
          else set.delete(value);
          model.set(key, set);
          // add: true when the key had no value; remove: true when the key's last value went.
          const answer = add ? index.add(key, value) : index.remove(key, value);
          expect(answer).toBe(add ? wasEmpty : had && set.size === 0);
          for (const k of ['a', 'b']) expect(new Set(index.values(k))).toEqual(model.get(k) ?? new Set());
        }
      }),
    );
  });
});
