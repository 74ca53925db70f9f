/** The benchmarks' cluster and pods: nodes of 8 A100-80GB cards, mostly one-container pods of 6-9 GB. */
import { createHash } from 'node:crypto';

/**
 * A card's id as HAMi's device plugin registers it: the GPU's UUID (`GPU-ebe7c3f7-303d-558d-435e-99a160631fe4`),
 * here derived from node and position so runs are comparable. Ids spelled from the node's name compress to almost
 * nothing; real UUIDs do not, and decision records list a card per node evaluated, so the bench writes what a real
 * cluster costs.
 */
export function cardId(node: string, card: number): string {
  const hex = createHash('sha256').update(`${node}/${card}`).digest('hex');
  return `GPU-${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export type NodeNameStyle = 'short' | 'aws';

/**
 * The cluster's node names. `short`: `node-00042`, which compresses to almost nothing. `aws`: EC2's private DNS names
 * (`ip-10-0-187-33.eu-west-1.compute.internal`), as EKS names its nodes, their addresses scattered over the subnet as
 * a cluster's are (a fixed permutation: every run the same names, all distinct, up to 65,536 nodes).
 */
export function nodeNames(count: number, style: NodeNameStyle): string[] {
  if (style === 'aws' && count > 65_536) throw new Error('--node-names aws names at most 65,536 nodes');
  return Array.from({ length: count }, (_, i) => {
    if (style === 'short') return `node-${String(i).padStart(5, '0')}`;
    const address = (i * 40_503 + 12_345) % 65_536;
    return `ip-10-0-${address >> 8}-${address & 255}.eu-west-1.compute.internal`;
  });
}

export const CARDS = 8;
export const CARD_MEM = 81920;

export function nodeObject(name: string, rv: number) {
  const register = Array.from({ length: CARDS }, (_, i) => ({
    id: cardId(name, i),
    index: i,
    count: 10,
    devmem: CARD_MEM,
    devcore: 100,
    type: 'NVIDIA-A100-SXM4-80GB',
    numa: i < 4 ? 0 : 1,
    mode: 'hami-core',
    health: true,
  }));
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: { name, resourceVersion: String(rv), annotations: { 'hami.io/node-nvidia-register': JSON.stringify(register) } },
    status: { allocatable: { 'nvidia.com/gpu': String(CARDS * 10) } },
  };
}

export interface BenchPod {
  readonly metadata: { readonly name: string; readonly namespace: string; readonly uid: string; readonly resourceVersion: string; readonly annotations: Record<string, string> };
  readonly spec: { readonly containers: { name: string; resources: { limits: Record<string, string> } }[] };
  readonly status: { readonly phase: string };
}

const container = (name: string, mem: number, cores: number) => ({
  name,
  resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': String(mem), 'nvidia.com/gpucores': String(cores) } },
});

/** Mostly one-container pods, every fifth a two-container pod. */
export function workloadPod(i: number): BenchPod {
  const containers = i % 5 === 0 ? [container('a', 4000, 10), container('b', 2000, 10)] : [container('main', 6000 + (i % 4) * 1000, 15)];
  return {
    metadata: { name: `bench-${i}`, namespace: 'bench', uid: `uid-bench-${i}`, resourceVersion: '1', annotations: {} },
    spec: { containers },
    status: { phase: 'Pending' },
  };
}

/** A pod placed before we took over (8 GB, 10 cores on one card), as the relay's first list reports it. */
export function runningPod(node: string, card: number, k: number) {
  const uuid = cardId(node, card);
  const allocated = `${uuid},NVIDIA,8000,10:;`;
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name: `running-${node}-${card}-${k}`,
      namespace: 'prod',
      uid: `uid-running-${node}-${card}-${k}`,
      resourceVersion: '1',
      annotations: { 'hami.io/vgpu-node': node, 'hami.io/vgpu-devices-allocated': allocated, 'hami.io/vgpu-devices-to-allocate': ';', 'hami.io/bind-phase': 'success' },
    },
    spec: { nodeName: node, containers: [container('main', 8000, 10)] },
    status: { phase: 'Running' },
  };
}

/**
 * The node names kube-scheduler sends the extender: it stops looking once it has found enough feasible nodes
 * (numFeasibleNodesToFind: every node below 100; else `percentage`% of them, 0 meaning 50 - nodes/125 but at
 * least 5, and never fewer than 100), starting where its last search stopped. Every bench node is feasible to it.
 */
export function candidateRotation(names: readonly string[], percentage: number): () => readonly string[] {
  const total = names.length;
  const adaptive = Math.max(5, 50 - Math.floor(total / 125));
  const wanted = total < 100 ? total : Math.max(100, Math.floor((total * (percentage === 0 ? adaptive : percentage)) / 100));
  if (wanted >= total) return () => names;
  let start = 0;
  return () => {
    const picked = Array.from({ length: wanted }, (_, i) => names[(start + i) % total]!);
    start = (start + wanted) % total;
    return picked;
  };
}
