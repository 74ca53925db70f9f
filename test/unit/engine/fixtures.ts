/** Fresh fixtures for engine tests: every call builds new objects. */
import fc from 'fast-check';
import { isEngineAnnotation } from '../../../lib/engine/reuse';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { defaultEngineConfig } from '../../../lib/config';
import { AWS_NEURON } from '../../../lib/engine/devices/neuron/names';
import type { DeviceInfo, DeviceUsage, EngineConfig, NodeLike, NodeState, PodLike, QuotaView, RealtimeReport } from '../../../lib/engine/types';
import type { DecideInput } from '../../../lib/engine/decision';

export function card(id: string, overrides: Partial<DeviceInfo> = {}): DeviceInfo {
  return { id, index: 0, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true, ...overrides };
}

/** `n` cards `<prefix>-0 … <prefix>-(n-1)` with index = position. */
export function cards(prefix: string, n: number, overrides: Partial<DeviceInfo> = {}): DeviceInfo[] {
  return Array.from({ length: n }, (_, i) => card(`${prefix}-${i}`, { index: i, ...overrides }));
}

/** A random card's figures for property tests (ids, types and usage are the test's). */
export function cardFiguresArb(bounds: { readonly count: number; readonly devmem: number }) {
  return fc.record({
    count: fc.integer({ min: 0, max: bounds.count }),
    devmem: fc.integer({ min: 0, max: bounds.devmem }),
    devcore: fc.constantFrom(0, 100),
    numa: fc.integer({ min: 0, max: 1 }),
    health: fc.boolean(),
  });
}

/** A random card usage for property tests. */
export function cardUsageArb(bounds: { readonly used: number; readonly usedmem: number }) {
  return fc.record({ used: fc.integer({ min: 0, max: bounds.used }), usedmem: fc.integer({ min: 0, max: bounds.usedmem }), usedcores: fc.integer({ min: 0, max: 100 }) });
}

export interface NodeOptions {
  usage?: Record<string, DeviceUsage>;
  cordoned?: string[];
  pairScores?: Record<string, Record<string, number>>;
  realtime?: RealtimeReport;
  /** The ledger's registration version (records keep it); 1, a node registered once, unless given. */
  registrationVersion?: number;
}

export function node(name: string, devices: DeviceInfo[], options: NodeOptions = {}): NodeState {
  return {
    name,
    registration: { registered: true, devices, cordoned: options.cordoned ?? [], pairScores: options.pairScores ?? {} },
    registrationVersion: options.registrationVersion ?? 1,
    usage: options.usage ?? {},
    ...(options.realtime ? { realtime: options.realtime } : {}),
  };
}

export type Limits = Record<string, string | number>;

export interface PodOptions {
  annotations?: Record<string, string>;
  init?: Limits[];
  namespace?: string;
}

/** A pod whose app containers have the given limits (`{}` = no GPU). */
/**
 * A pod's annotations that the engine may read only within ENGINE_ANNOTATION_DOMAINS: the decision memo keys plans
 * by those alone (lib/engine/reuse.ts), so a read of any other annotation fails the test that made it.
 */
export function engineReadable(annotations: Record<string, string>): Record<string, string> {
  return new Proxy(annotations, {
    get(target, key, receiver) {
      if (typeof key === 'string' && !isEngineAnnotation(key) && !Object.prototype.hasOwnProperty.call(Object.prototype, key)) {
        throw new Error(`the engine read pod annotation "${key}", outside ENGINE_ANNOTATION_DOMAINS (lib/engine/reuse.ts)`);
      }
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

export function pod(app: Limits[], options: PodOptions = {}): PodLike {
  return {
    metadata: { name: 'p', namespace: options.namespace ?? 'default', uid: 'uid-1', annotations: engineReadable(options.annotations ?? {}) },
    spec: {
      initContainers: (options.init ?? []).map((limits, i) => ({ name: `init${i}`, resources: { limits } })),
      containers: app.map((limits, i) => ({ name: `c${i}`, resources: { limits } })),
    },
  };
}

export function gpu(nums: number, extra: Limits = {}): Limits {
  return { 'nvidia.com/gpu': nums, ...extra };
}

export function config(overrides: Partial<EngineConfig> = {}): EngineConfig {
  return { ...defaultEngineConfig, ...overrides };
}

export function input(p: PodLike, nodes: NodeState[], extra: { config?: EngineConfig; quota?: QuotaView; nowMs?: number; candidates?: string[] } = {}): DecideInput {
  return {
    pod: p,
    candidates: extra.candidates ?? nodes.map((n) => n.name),
    nodes: new Map(nodes.map((n) => [n.name, n])),
    config: extra.config ?? config(),
    nowMs: extra.nowMs ?? 1_700_000_000_000,
    ...(extra.quota ? { quota: extra.quota } : {}),
  };
}

export const NEURON = 'aws.amazon.com/neuron';
export const NEURON_CORES = 'aws.amazon.com/neuroncore';

/** A Node as the stock AWS Neuron device plugin advertises it: devices, cores and the instance type label. */
export function neuronNode(name: string, devices: number, cores: number, instanceType = 'trn1.32xlarge'): NodeLike {
  return {
    metadata: { name, labels: { 'node.kubernetes.io/instance-type': instanceType } },
    status: { capacity: { [NEURON]: String(devices), [NEURON_CORES]: String(cores), cpu: '128' } },
  };
}

/** The node's engine state from the Node (registration as the control plane reads it) and booked usage by device index. */
export function neuronState(nodeObject: NodeLike, usage: Record<number, Partial<DeviceUsage>> = {}): NodeState {
  const registration = parseNodeRegistration(nodeObject, config());
  const byId: Record<string, DeviceUsage> = {};
  for (const [index, use] of Object.entries(usage)) byId[`${nodeObject.metadata.name}-AWSNeuron-${index}`] = { used: 0, usedmem: 0, usedcores: 0, ...use };
  return { name: nodeObject.metadata.name, registration, usage: byId };
}

/** A Neuron device as HAMi's test tables build it (makeAWSDeviceUsage): id, index, 2 tenants, 2 cores (mask 3), trn. */
export function neuronDevice(id: string, index: number, overrides: Partial<DeviceInfo> = {}): DeviceInfo {
  return { id, index, count: 2, devmem: 0, devcore: 3, type: AWS_NEURON, numa: 0, mode: '', health: true, vendor: AWS_NEURON, nodeType: 'trn', ...overrides };
}
