/**
 * The debugging decision tree (lib/diagnostics/decisionTree.ts) asks the engine's own rules with the configured
 * EngineConfig: with custom resource names (HAMI_RESOURCE_COUNT_NAME, docs/deploy.md) it agrees with the filter.
 */
import { loadEngineConfig } from '../../../lib/config';
import { clusterNodeSchema, clusterPodSchema, walkDecisionTree, type TreeBranch } from '../../../lib/diagnostics/decisionTree';
import { decide } from '../../../lib/engine/decide';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { defaultEngineConfig, type EngineConfig } from '../../../lib/engine/types';

const register = JSON.stringify([{ id: 'GPU-0', count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100-SXM4-80GB', numa: 0, mode: 'hami-core', health: true }]);

/** A node the device plugin registered, advertising its cards under `countName` (and none under the default name). */
function node(countName: string) {
  return clusterNodeSchema.parse({
    metadata: { name: 'gpu-1', annotations: { 'hami.io/node-nvidia-register': register } },
    status: { allocatable: { [countName]: '10', ...(countName === 'nvidia.com/gpu' ? {} : { 'nvidia.com/gpu': '0' }) } },
  });
}

/** A pod this scheduler placed on gpu-1 (its record since expired), asking for one card under `countName`. */
function pod(countName: string) {
  return clusterPodSchema.parse({
    metadata: { name: 'trainer', namespace: 'default', uid: 'u-1', annotations: { 'hami.io/vgpu-node': 'gpu-1' } },
    spec: { schedulerName: 'hami-scheduler', nodeName: 'gpu-1', containers: [{ name: 'cuda', resources: { limits: { [countName]: '1' } } }] },
    status: { phase: 'Running' },
  });
}

/** What the filter answers for the pod on the node, deciding afresh. */
function filterPlaces(config: EngineConfig, p: ReturnType<typeof pod>, n: ReturnType<typeof node>): boolean {
  const registration = parseNodeRegistration(n, config);
  const nodes = new Map([[n.metadata.name, { name: n.metadata.name, registration, usage: {} }]]);
  return decide({ pod: p, candidates: [n.metadata.name], nodes, config, nowMs: 0 }).kind === 'fit';
}

function branch(config: EngineConfig, p: ReturnType<typeof pod>, n: ReturnType<typeof node>): TreeBranch {
  return walkDecisionTree({ namespace: 'default', name: 'trainer' }, p, n, { schedulerName: 'hami-scheduler', engine: config }).branch;
}

describe('walkDecisionTree with HAMI_RESOURCE_COUNT_NAME set', () => {
  const custom = loadEngineConfig({ HAMI_RESOURCE_COUNT_NAME: 'example.com/vgpu' });

  it('reads the custom name as the filter does: the pod is managed, its node registered, the record expired', () => {
    const p = pod('example.com/vgpu');
    const n = node('example.com/vgpu');
    expect(filterPlaces(custom, p, n)).toBe(true);
    expect(branch(custom, p, n)).toBe('record-expired');
  });

  it('says the default name is not managed, as the filter passes such a pod through', () => {
    const p = pod('nvidia.com/gpu');
    const tree = walkDecisionTree({ namespace: 'default', name: 'trainer' }, p, node('example.com/vgpu'), { schedulerName: 'hami-scheduler', engine: custom });
    expect(tree.branch).toBe('no-managed-resources');
    expect(tree.steps[1]?.answer).toMatch(/^no \(none of example\.com\/vgpu, /);
    expect(tree.advice).toContain('add example.com/vgpu');
  });

  it('on the default settings, finds that node unregistered, as the filter does', () => {
    // With the defaults, the same node advertises 0 nvidia.com/gpu: the engine does not register it, and neither does the tree.
    const p = pod('nvidia.com/gpu');
    const n = node('example.com/vgpu');
    expect(parseNodeRegistration(n, defaultEngineConfig).registered).toBe(false);
    expect(filterPlaces(defaultEngineConfig, p, n)).toBe(false);
    expect(branch(defaultEngineConfig, p, n)).toBe('node-unregistered');
  });
});
