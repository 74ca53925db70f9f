/** NVIDIA cards in words (../words.ts). */
import { PercentageUnset } from '../../types';
import { NVIDIA } from './names';
import type { KindWords } from '../wordsOf';

export const nvidiaWords: KindWords = {
  vendor: NVIDIA,
  noun: 'NVIDIA card',
  describeRequest(request) {
    const memory = request.memreq > 0 ? `${request.memreq} MiB` : request.mempercentagereq !== PercentageUnset ? `${request.mempercentagereq}% memory` : 'default memory';
    return `asks ${request.nums} card(s) × ${memory}, ${request.coresreq}% cores`;
  },
  selectsByType: true,
};
