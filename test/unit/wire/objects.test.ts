/**
 * The one Pod and Node shape (lib/wire/objects.ts): what every boundary hands the engine.
 */
import { nodeSchema, podSchema } from '../../../lib/wire/objects';

describe('podSchema', () => {
  it('keeps what the engine reads and drops the rest', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'job', namespace: 'team-a', uid: 'u-1', annotations: { a: 'b' }, managedFields: [{}] },
      spec: { schedulerName: 'hami-scheduler', containers: [{ name: 'c', image: 'x', resources: { limits: { 'nvidia.com/gpu': '1' } } }] },
      status: { phase: 'Pending' },
    };
    expect(podSchema.parse(pod)).toEqual({
      metadata: { name: 'job', namespace: 'team-a', uid: 'u-1', annotations: { a: 'b' } },
      spec: { containers: [{ name: 'c', resources: { limits: { 'nvidia.com/gpu': '1' } } }] },
    });
  });

  it('reads null as absent, as Go would have left the field out', () => {
    const parsed = podSchema.parse({ metadata: { name: 'job', annotations: null, labels: null }, spec: { initContainers: null, containers: [{ name: 'c', resources: null }] } });
    expect(parsed.metadata.annotations).toBeUndefined();
    expect(parsed.spec?.initContainers).toBeUndefined();
    expect(parsed.spec?.containers?.[0]?.resources).toBeUndefined();
  });

  it('refuses a pod whose name Kubernetes would refuse', () => {
    expect(podSchema.safeParse({ metadata: { name: 'Not_A_Pod' } }).success).toBe(false);
  });
});

describe('nodeSchema', () => {
  it('keeps the annotations, labels, allocatable and capacity devices are registered from', () => {
    const node = { metadata: { name: 'n1', labels: { l: 'v' }, uid: 'x' }, status: { capacity: { 'aws.amazon.com/neuron': '16' }, allocatable: null, conditions: [] } };
    expect(nodeSchema.parse(node)).toEqual({ metadata: { name: 'n1', labels: { l: 'v' } }, status: { capacity: { 'aws.amazon.com/neuron': '16' } } });
  });
});
