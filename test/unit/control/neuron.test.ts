/**
 * AWS Neuron pods through the control plane's services, on the in-memory store (docs/devices.md, "AWS Neuron"):
 * registration from forwarded Nodes, bookings written under the node's version, confirmation, adoption of pods
 * HAMi placed, release on delete, binding without the node lock, and the NVIDIA quota left alone.
 */
import { bindPodToNode } from '../../../lib/control/bind';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { filterPod } from '../../../lib/control/filter';
import { toQuotaView } from '../../../lib/control/ledger';
import { listSchedulerLogs, readNodeDevices } from '../../../lib/control/views';
import { hintFor } from '../../../lib/diagnostics/hints';
import { card, forwardedPod, gpuNode, gpuPod, neuronNode, neuronPod, type NeuronContainerSpec } from '../../support/cluster';
import { filterOf, placedPatch, world, type Environment } from './fixtures';

const added = (object: unknown) => ({ type: 'ADDED', object });
const modified = (object: unknown) => ({ type: 'MODIFIED', object });
const deleted = (object: unknown) => ({ type: 'DELETED', object });

async function filter(env: Environment, pod: ReturnType<typeof neuronPod>, nodes: string[]) {
  return filterPod(env.deps, filterOf(pod, nodes));
}

async function place(env: Environment, name: string, containers: NeuronContainerSpec[], nodes: string[]) {
  const pod = neuronPod(name, containers);
  const answer = await filter(env, pod, nodes);
  return { pod, annotations: placedPatch(answer), node: answer.result.NodeNames?.[0] };
}

const usedCores = async (env: Environment, node: string) => (await readNodeDevices(env.deps, node)).devices.map((d) => d.usedcores);

describe('AWS Neuron pods in the control plane', () => {
  it('registers the devices of a forwarded Node from its capacity and instance-type label', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('trn', 16, 32, 'trn1.32xlarge'))]);
    const view = await readNodeDevices(env.deps, 'trn');
    expect(view.registered).toBe(true);
    expect(view.devices).toHaveLength(16);
    expect(view.devices[3]).toMatchObject({ id: 'trn-AWSNeuron-3', index: 3, type: 'AWSNeuron', count: 2, devcore: 3, devmem: 0, used: 0 });
    expect(w.store.stored('trn')!.registration).toMatchObject({ registered: true });
    const stored = w.store.stored('trn')!.registration;
    expect(stored?.registered && stored.devices[0]).toMatchObject({ vendor: 'AWSNeuron', nodeType: 'trn1.32xlarge' });
  });

  it('a capacity change re-registers the node with its new geometry', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('inf', 1, 2, 'inf2.xlarge'))]);
    await ingestClusterEvents(env.deps, [modified(neuronNode('inf', 1, 4, 'inf2.xlarge', { rv: '2' }))]);
    expect((await readNodeDevices(env.deps, 'inf')).devices.map((d) => [d.count, d.devcore])).toEqual([[4, 15]]);
  });

  it('places a core pod with the AWS annotations, books it under the node\'s version, confirms it and frees it on delete', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('inf', 2, 4, 'inf2.xlarge'))]);
    const calls = env.store.calls.length;
    const { pod, annotations } = await place(env, 'infer', [{ name: 'main', cores: 1 }], ['inf']);
    expect(annotations).toEqual({
      'hami.io/vgpu-node': 'inf',
      'hami.io/vgpu-time': String(Math.floor(w.clock.now / 1000)),
      'hami.io/aws-neuron-devices-allocated': 'inf-AWSNeuron-1,AWSNeuron,0,1:;',
      AWS_NEURON_IDS: '2',
      NEURON_ALLOC_TIME: `${w.clock.now}000000`,
      NEURON_ALLOCATED: 'false',
      NEURON_RESOURCE_TYPE: 'aws.amazon.com/neuroncore',
      'aws.amazon.com/predicate-node': 'inf',
    });
    // Cores are taken by index: the per-card counters cannot guard that, the node's version does.
    const operations = env.store.calls.slice(calls).map((c) => c.operation);
    expect(operations).toContain('putNode');
    expect(operations).not.toContain('reserve');
    expect(w.store.stored('inf')!.bookings[pod.metadata.uid]).toMatchObject({ state: 'reserved', holdsAppCards: false, uses: [{ uuid: 'inf-AWSNeuron-1', slots: 1, mem: 0, cores: 1, vendor: 'AWSNeuron' }] });
    expect(await usedCores(env, 'inf')).toEqual([0, 1]);

    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, { ...annotations, NEURON_ALLOCATED: 'true' }, { phase: 'Running' }))]);
    expect(w.store.stored('inf')!.bookings[pod.metadata.uid]).toMatchObject({ state: 'confirmed', origin: 'decided' });

    await ingestClusterEvents(env.deps, [deleted(forwardedPod(pod, annotations, { rv: '9' }))]);
    expect(await usedCores(env, 'inf')).toEqual([0, 0]);
  });

  it('gives the next pods the other cores, and refuses a pod the booked cores leave no room for, by code', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('inf', 1, 2, 'inf2.xlarge'))]);
    await place(env, 'a', [{ name: 'main', cores: 1 }], ['inf']);
    const b = await place(env, 'b', [{ name: 'main', cores: 1 }], ['inf']);
    expect(b.annotations.AWS_NEURON_IDS).toBe('1');
    expect(await usedCores(env, 'inf')).toEqual([3]);
    const answer = await filter(env, neuronPod('c', [{ name: 'main', cores: 1 }]), ['inf']);
    expect(answer.result.FailedNodes).toEqual({ inf: '1/1 CardTimeSlicingExhausted' });
    // The listing's one-line answer (read from the summary the filter wrote) gives the fix in Neuron's terms.
    const listed = (await listSchedulerLogs(env.deps, { limit: 10, namespace: 'default' })).items.find((item) => item.pod.name === 'c');
    expect(listed?.answer.code).toBe('CardTimeSlicingExhausted');
    expect(listed?.answer.fix).toBe(hintFor('CardTimeSlicingExhausted', 'AWSNeuron')?.fix);
    expect(listed?.answer.fix).not.toBe(hintFor('CardTimeSlicingExhausted')?.fix);
  });

  it('adopts a Neuron pod HAMi placed before we took over, from hami.io/aws-neuron-devices-allocated', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('trn', 16, 32, 'trn1.32xlarge'))]);
    const pod = neuronPod('old', [{ name: 'main', devices: 1 }]);
    const annotations = { 'hami.io/vgpu-node': 'trn', 'hami.io/aws-neuron-devices-allocated': 'trn-AWSNeuron-0,AWSNeuron,0,3:;', AWS_NEURON_IDS: '0', NEURON_ALLOCATED: 'true' };
    await ingestClusterEvents(env.deps, [added(forwardedPod(pod, annotations, { phase: 'Running' }))]);
    expect(w.store.stored('trn')!.bookings[pod.metadata.uid]).toMatchObject({ state: 'confirmed', origin: 'adopted', holdsAppCards: false });
    // Device 0 is taken: a 4-device pod gets the next aligned group.
    const next = await place(env, 'next', [{ name: 'main', devices: 4 }], ['trn']);
    expect(next.annotations.AWS_NEURON_IDS).toBe('4,5,6,7');
  });

  it('fix (HAMi adds masks in int32, wrapping): adopted masks that add up past int32 read as every core used, not as free cores', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('wide', 1, 31, 'trn9.example'))]);
    // Three pods adopted on all 31 cores of the device: 3 × (2^31 - 1) wraps in int32 to a mask with core 1 free.
    const whole = { 'hami.io/vgpu-node': 'wide', 'hami.io/aws-neuron-devices-allocated': 'wide-AWSNeuron-0,AWSNeuron,0,2147483647:;', NEURON_ALLOCATED: 'true' };
    const adopted = ['x', 'y', 'z'].map((name) => forwardedPod(neuronPod(name, [{ name: 'main', devices: 1 }]), whole, { phase: 'Running' }));
    await ingestClusterEvents(env.deps, adopted.map(added));
    const answer = await filter(env, neuronPod('small', [{ name: 'main', cores: 1 }]), ['wide']);
    expect(answer.result.FailedNodes).toEqual({ wide: '1/1 CardInsufficientCore' });
  });

  it('binds without HAMi\'s node lock (the AWS device plugin takes none)', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('trn', 16, 32, 'trn1.32xlarge'))]);
    const { pod } = await place(env, 'train', [{ name: 'main', devices: 4 }], ['trn']);
    const answer = await bindPodToNode(env.deps, { pod: { namespace: 'default', name: 'train', uid: pod.metadata.uid }, node: 'trn' });
    expect(answer.result.Error).toBe('');
    expect(answer.effects.map((e) => e.kind)).toEqual(['PatchPodAnnotations', 'BindPod']);
    expect(w.store.stored('trn')!.lock).toBeUndefined();
  });

  it('a pod asking NVIDIA and Neuron devices gets the one-kind-per-pod Error and books nothing', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('trn', 16, 32, 'trn1.32xlarge')), added(gpuNode('gpu', [card('GPU-0')]))]);
    const answer = await filter(env, neuronPod('both', [{ name: 'main', devices: 1, gpu: 1 }]), ['trn', 'gpu']);
    expect(answer.result.Error).toBe(
      'invalid GPU resource request: container "main": nvidia.com/gpu and aws.amazon.com/neuron "both" ask for two kinds of device in one pod; a pod may use one kind',
    );
    expect(Object.keys(w.store.stored('trn')!.bookings)).toEqual([]);
  });

  it('Neuron bookings do not count toward the namespace\'s NVIDIA memory and cores quota', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(neuronNode('trn', 16, 32, 'trn1.32xlarge')), added(gpuNode('gpu', [card('GPU-0')]))]);
    await place(env, 'train', [{ name: 'main', devices: 16 }], ['trn']);
    const gpu = gpuPod('cuda', [{ name: 'main', gpu: 1, mem: 1000, cores: 10 }]);
    await filterPod(env.deps, { pod: gpu, podRef: { namespace: 'default', name: 'cuda', uid: gpu.metadata.uid }, nodeNames: ['gpu'], nodes: null });
    const quota = toQuotaView('default', { version: 1, quotas: { q: { mem: 100_000, cores: 1000 } } }, env.deps.view.all(), w.clock.now);
    expect(quota).toEqual({ memLimit: 100_000, coreLimit: 1000, usedMem: 1000, usedCores: 10 });
  });
});
