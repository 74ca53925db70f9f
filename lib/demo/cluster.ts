/**
 * The demo's simulated cluster, as the relay would forward it (docs/api.md §4): ten GPU nodes and the
 * workloads already running on them, chosen so that a 2-card, whole-card, same-NUMA A100 pod fits
 * node3 and node4 only and each other node fails for its own, everyday reason. Fixed names and uids
 * keep the output identical from run to run.
 */

export interface Card {
  readonly index: number;
  readonly type: string;
  readonly devmem: number;
  /** Tasks that may share the card (the device plugin's deviceSplitCount). */
  readonly count: number;
  readonly numa: number;
  readonly health: boolean;
}

export interface DemoNode {
  readonly name: string;
  readonly cards: readonly Card[];
  /** Extra node annotations (e.g. `hami.io/device-cordon`). */
  readonly annotations?: Readonly<Record<string, string>>;
  /** The device plugin never registered the node: no `hami.io/node-nvidia-register`. */
  readonly unregistered?: true;
}

/** One card booked by a running pod. */
export interface CardUse {
  readonly node: string;
  readonly card: number;
  readonly mem: number;
  readonly cores: number;
}

export interface Workload {
  readonly namespace: string;
  readonly name: string;
  readonly uses: readonly CardUse[];
}

export interface ContainerAsk {
  readonly name: string;
  readonly gpu: number;
  readonly mem: number;
  readonly cores: number;
}

const A100_40 = 'NVIDIA-A100-SXM4-40GB';
const A100_80 = 'NVIDIA-A100-SXM4-80GB';
const T4 = 'NVIDIA-Tesla-T4';

export function cardUuid(node: string, index: number): string {
  return `GPU-${node}-${index}`;
}

function cards(n: number, overrides: (index: number) => Partial<Card> = () => ({})): Card[] {
  return Array.from({ length: n }, (_, index) => ({ index, type: A100_40, devmem: 40960, count: 10, numa: 0, health: true, ...overrides(index) }));
}

const uniform = (card: Partial<Card>) => () => card;

export const demoNodes: readonly DemoNode[] = [
  // Eight 80 GB cards, all busy with fine-tuning jobs: too little memory left for 20 GiB.
  { name: 'node1', cards: cards(8, uniform({ type: A100_80, devmem: 81920 })) },
  // Each card is shared by a notebook without a core limit: a whole-card (100% cores) ask conflicts.
  { name: 'node2', cards: cards(4) },
  { name: 'node3', cards: cards(4) },
  { name: 'node4', cards: cards(4) },
  // An administrator cordoned every card for a driver upgrade.
  { name: 'node5', cards: cards(4), annotations: { 'hami.io/device-cordon': [0, 1, 2, 3].map((i) => cardUuid('node5', i)).join(',') } },
  // Older inference node: T4 cards, but the pod asks for A100 (nvidia.com/use-gputype).
  { name: 'node6', cards: cards(4, uniform({ type: T4, devmem: 15360 })) },
  // Three cards reported unhealthy (XID errors); one healthy card is not enough for two.
  { name: 'node7', cards: cards(4, (i) => ({ health: i === 3 })) },
  // Cards not shared (deviceSplitCount 1), each already running a batch job.
  { name: 'node8', cards: cards(4, uniform({ count: 1 })) },
  // Two NUMA nodes with one free card each: the pod wants both cards on one NUMA node.
  { name: 'node9', cards: cards(4, (i) => ({ numa: i < 2 ? 0 : 1 })) },
  // The device plugin is not running there yet.
  { name: 'node10', cards: cards(4), unregistered: true },
];

const use = (node: string, card: number, mem: number, cores: number): CardUse => ({ node, card, mem, cores });

export const demoWorkloads: readonly Workload[] = [
  { namespace: 'train', name: 'llama-finetune', uses: [0, 1, 2, 3].map((c) => use('node1', c, 65536, 80)) },
  { namespace: 'train', name: 'bert-pretrain', uses: [4, 5, 6, 7].map((c) => use('node1', c, 65536, 50)) },
  ...[0, 1, 2, 3].map((c) => ({ namespace: 'research', name: `notebook-${c}`, uses: [use('node2', c, 4096, 0)] })),
  { namespace: 'serving', name: 'whisper-large', uses: [use('node3', 0, 8192, 30)] },
  { namespace: 'research', name: 'notebook-4', uses: [use('node4', 0, 4096, 0)] },
  { namespace: 'batch', name: 'embed-0', uses: [use('node8', 0, 8192, 25), use('node8', 1, 8192, 25)] },
  { namespace: 'batch', name: 'embed-1', uses: [use('node8', 2, 8192, 25), use('node8', 3, 8192, 25)] },
  { namespace: 'serving', name: 'sdxl', uses: [use('node9', 0, 30720, 50)] },
  { namespace: 'serving', name: 'sdxl-2', uses: [use('node9', 2, 30720, 50)] },
];

/** A Node object with HAMi's JSON registration annotation (unless unregistered). */
export function nodeObject(node: DemoNode) {
  const register = node.cards.map((c) => ({
    id: cardUuid(node.name, c.index),
    index: c.index,
    count: c.count,
    devmem: c.devmem,
    devcore: 100,
    type: c.type,
    numa: c.numa,
    mode: 'hami-core',
    health: c.health,
  }));
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: {
      name: node.name,
      resourceVersion: '100',
      annotations: { ...(node.unregistered ? {} : { 'hami.io/node-nvidia-register': JSON.stringify(register) }), ...node.annotations },
    },
    status: { allocatable: { cpu: '64', ...(node.unregistered ? {} : { 'nvidia.com/gpu': String(node.cards.length * 10) }) } },
  };
}

export function podUid(namespace: string, name: string): string {
  // Stable, readable uids: the demo prints them.
  return `uid-${namespace}-${name}`;
}

/** A Pending pod as kube-scheduler sends it to the extender. */
export function pendingPod(namespace: string, name: string, containers: readonly ContainerAsk[], annotations: Readonly<Record<string, string>> = {}) {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name, namespace, uid: podUid(namespace, name), resourceVersion: '1', annotations: { ...annotations } },
    spec: {
      schedulerName: 'hami-scheduler',
      containers: containers.map((c) => ({
        name: c.name,
        image: 'vllm/vllm-openai:v0.8.4',
        resources: {
          limits: { 'nvidia.com/gpu': String(c.gpu), 'nvidia.com/gpumem': String(c.mem), 'nvidia.com/gpucores': String(c.cores) },
        },
      })),
    },
    status: { phase: 'Pending' },
  };
}

export type PodObject = ReturnType<typeof pendingPod>;

/** A running pod holding its cards, as the relay forwards it after the device plugin allocated them. */
export function runningWorkload(workload: Workload) {
  const node = workload.uses[0]?.node ?? '';
  const devices = workload.uses.map((u) => `${cardUuid(u.node, u.card)},NVIDIA,${u.mem},${u.cores}:`).join('');
  const pod = pendingPod(workload.namespace, workload.name, [{ name: 'main', gpu: workload.uses.length, mem: workload.uses[0]?.mem ?? 0, cores: workload.uses[0]?.cores ?? 0 }]);
  return withAnnotations(pod, { 'hami.io/vgpu-node': node, 'hami.io/vgpu-devices-allocated': `${devices};`, 'hami.io/bind-phase': 'success' }, 'Running');
}

/** The pod after the relay applied annotation patches (null deletes), as its next watch event carries it. */
export function withAnnotations(pod: PodObject, patch: Readonly<Record<string, string | null>>, phase = 'Pending', resourceVersion = '2'): PodObject {
  const annotations: Record<string, string> = { ...pod.metadata.annotations };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete annotations[key];
    else annotations[key] = value;
  }
  return { ...pod, metadata: { ...pod.metadata, annotations, resourceVersion }, status: { phase } };
}
