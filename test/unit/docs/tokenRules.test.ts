/**
 * `HAMI_API_TOKEN`'s rules as the README and docs/api.md state them are the ones `lib/config.ts` enforces: the
 * minimum length each document names is refused one character short, with the message the documents quote.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../../lib/config';
import { ConfigError } from '../../../lib/errors';

const ROOT = join(__dirname, '../../..');

function statedMinimum(file: string): { readonly length: number; readonly message: string } {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const rule = /The token must be at least (\d+) characters/.exec(text);
  const message = /`(HAMI_API_TOKEN: must be at least \d+ characters)`/.exec(text);
  if (!rule?.[1] || !message?.[1]) throw new Error(`${file} states no minimum length for HAMI_API_TOKEN`);
  return { length: Number(rule[1]), message: message[1] };
}

function problems(token: string): readonly string[] {
  try {
    loadConfig({ HAMI_API_TOKEN: token });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe.each(['README.md', 'docs/api.md'])("HAMI_API_TOKEN's rules in %s", (file) => {
  const { length, message } = statedMinimum(file);

  it('are enforced: one character short stops start-up with the quoted message', () => {
    expect(problems('x'.repeat(length - 1))).toEqual([message]);
  });

  it('admit a token of exactly the minimum length, of any characters', () => {
    expect(problems('é ü#"'.padEnd(length, '!'))).toEqual([]);
    expect(loadConfig({ HAMI_API_TOKEN: 'y'.repeat(length) }).apiToken).toBe('y'.repeat(length));
  });

  it('treat an empty value as no token', () => {
    expect(loadConfig({ HAMI_API_TOKEN: '' }).apiToken).toBeUndefined();
  });
});
