/**
 * What each device kind is called and how its requests read, in words, so that hami-diag, the scheduler log and the
 * web console say the same for every kind (docs/devices.md). Data and pure functions that import nothing at run time
 * but each kind's own words: the browser bundle carries them without the kinds' rules. Each kind holds its words
 * (`DeviceKind.words`); test/unit/engine/devices.test.ts holds this list to the kinds'.
 */
import { neuronWords } from './neuron/words';
import { nvidiaWords } from './nvidia/words';
import type { KindWords } from './wordsOf';

export type { KindWords } from './wordsOf';

export const KIND_WORDS: readonly KindWords[] = [nvidiaWords, neuronWords];

/** The default kind's words (the first kind's, as `DEFAULT_KIND` in ./index.ts): a request of a type no kind places reads in them. */
export const DEFAULT_WORDS: KindWords = KIND_WORDS[0]!;

const byVendor = new Map(KIND_WORDS.map((words) => [words.vendor, words]));

/** The words of the kind with this vendor word (a request's `type`); undefined for a type no kind places. */
export function wordsFor(vendor: string): KindWords | undefined {
  return byVendor.get(vendor);
}
