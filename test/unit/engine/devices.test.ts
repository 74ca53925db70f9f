/** The registry of device kinds and what is read beside it (lib/engine/devices). */
import { DEFAULT_KIND, DEVICE_KINDS, SchedulerOwnedPodAnnotations, vendorOf } from '../../../lib/engine/devices';
import { DEFAULT_WORDS, KIND_WORDS, wordsFor } from '../../../lib/engine/devices/words';
import { requestPhrase } from '../../../lib/diagnostics/phrases';

describe('device kinds', () => {
  it('carry the words the browser reads without them, in the same order, the default kind first', () => {
    expect(KIND_WORDS).toEqual(DEVICE_KINDS.map((kind) => kind.words));
    expect(KIND_WORDS.map((words) => words.vendor)).toEqual(DEVICE_KINDS.map((kind) => kind.vendor));
    expect(DEFAULT_WORDS).toBe(DEFAULT_KIND.words);
    expect(vendorOf({})).toBe(DEFAULT_KIND.vendor);
  });

  it('say each request in its kind’s words, and a type no kind places in the default kind’s', () => {
    const request = { nums: 2, memreq: 4000, mempercentagereq: 101, coresreq: 30 };
    expect(requestPhrase({ ...request, type: 'NVIDIA' })).toBe('asks 2 card(s) × 4000 MiB, 30% cores');
    expect(requestPhrase({ ...request, type: 'AWSNeuron', coresreq: 0 })).toBe('asks 2 Neuron device(s)');
    expect(requestPhrase({ ...request, type: 'AWSNeuron', coresreq: 3 })).toBe('asks 3 NeuronCore(s)');
    expect(requestPhrase({ ...request, type: 'Unknown' })).toBe(DEFAULT_WORDS.describeRequest({ ...request, type: 'Unknown' }));
    expect(wordsFor('Unknown')).toBeUndefined();
  });

  it('list every scheduler-written pod annotation once: the common ones and each kind’s own', () => {
    expect(new Set(SchedulerOwnedPodAnnotations).size).toBe(SchedulerOwnedPodAnnotations.length);
    for (const kind of DEVICE_KINDS) for (const annotation of kind.ownedPodAnnotations) expect(SchedulerOwnedPodAnnotations).toContain(annotation);
    expect(SchedulerOwnedPodAnnotations).toEqual(expect.arrayContaining(['hami.io/vgpu-devices-allocated', 'hami.io/vgpu-mig-allocations', 'hami.io/aws-neuron-devices-allocated', 'AWS_NEURON_IDS']));
  });
});
