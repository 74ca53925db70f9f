/**
 * Names at the boundaries: the one-pass check of long name lists (kube-scheduler's NodeNames) accepts and refuses
 * exactly what `kubeName` does, name by name, with the same issues.
 */
import { z } from 'zod';
import { isKubeName, kubeName, kubeNames, MAX_NAME_LENGTH } from '../../../lib/wire/names';

const tricky: unknown[] = [
  'node-1',
  'ip-10-0-0-1.ec2.internal',
  'Ünïcode-node',
  '',
  'a'.repeat(MAX_NAME_LENGTH),
  'a'.repeat(MAX_NAME_LENGTH + 1),
  'ns/name',
  'a#b',
  'two words',
  'tab\there',
  'bell\u0007',
  'line\nbreak',
  '\u00a0',
  7,
  null,
];

describe('names: lists of names', () => {
  it.each(tricky.map((value) => [JSON.stringify(value), value]))('isKubeName agrees with kubeName on %s', (_label, value) => {
    expect(isKubeName(value)).toBe(kubeName.safeParse(value).success);
  });

  it('a list of good names is taken as it is', () => {
    const names = ['node-1', 'ip-10-0-0-1.ec2.internal', 'a'.repeat(MAX_NAME_LENGTH)];
    expect(kubeNames.parse(names)).toEqual(names);
  });

  it('a list with bad names reports what z.array(kubeName) reports, at the same positions', () => {
    const list = ['good', '', 'ns/name', 'good-too', 'a'.repeat(MAX_NAME_LENGTH + 1), 'bell\u0007'];
    const reported = (schema: z.ZodType) => (schema.safeParse(list).error?.issues ?? []).map((issue) => ({ path: issue.path, message: issue.message }));
    const expected = reported(z.array(kubeName));
    expect(expected.length).toBeGreaterThanOrEqual(4);
    expect(reported(kubeNames)).toEqual(expected);
    // Inside an object, the path starts at the list's own key, as kube-scheduler's field is reported.
    const inside = z.object({ nodenames: kubeNames.nullish() }).safeParse({ nodenames: ['ok', 'a#b'] });
    expect(inside.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([['nodenames.1', 'must be a Kubernetes name (no "/", "#", spaces or control characters)']]);
  });

  it('a list holding something other than a string is refused as before', () => {
    expect(kubeNames.safeParse(['ok', 7]).error?.issues.map((issue) => issue.path)).toEqual([[1]]);
    expect(kubeNames.safeParse('node-1').success).toBe(false);
  });
});
