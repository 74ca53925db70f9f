/**
 * Pod annotations HAMi writes and reads (docs/hami-parity.md §3): the device encoding and the user steering
 * annotations, with HAMi's error texts.
 */
import { goQuote, parseGoBool } from './messages';
import type { ContainerDevice, NodePolicy, PodDevices } from './types';

export const PodAnnotation = {
  VgpuNode: 'hami.io/vgpu-node',
  VgpuTime: 'hami.io/vgpu-time',
  DevicesToAllocate: 'hami.io/vgpu-devices-to-allocate',
  DevicesAllocated: 'hami.io/vgpu-devices-allocated',
  BindPhase: 'hami.io/bind-phase',
  BindTime: 'hami.io/bind-time',
  NodeSchedulerPolicy: 'hami.io/node-scheduler-policy',
  GpuSchedulerPolicy: 'hami.io/gpu-scheduler-policy',
  DeviceScoringWeights: 'hami.io/device-scoring-weights',
  /** Our addition (docs/api.md §8): "true"/"false" overrides the global real-time switch. */
  EnableRealtimeCheck: 'hami.io/enable-realtime-check',
} as const;

/**
 * Pod annotations only the scheduler writes (filter and bind) and the device plugin trusts, whatever the device kind;
 * with each kind's own, `SchedulerOwnedPodAnnotations` (./devices/index.ts).
 */
export const SchedulerOwnedCommonPodAnnotations: readonly string[] = [
  PodAnnotation.VgpuNode,
  PodAnnotation.VgpuTime,
  PodAnnotation.DevicesToAllocate,
  PodAnnotation.DevicesAllocated,
  PodAnnotation.BindPhase,
  PodAnnotation.BindTime,
];

export const BindPhase = { Allocating: 'allocating', Success: 'success', Failed: 'failed' } as const;

/** A device annotation that cannot be decoded; the message is HAMi's where HAMi has one. */
export class PodAnnotationFormatError extends Error {
  constructor(
    message: string,
    readonly text: string,
  ) {
    super(message);
    this.name = 'PodAnnotationFormatError';
  }
}

/**
 * `UUID,NVIDIA,<mem>,<cores>:` per device, `;` after each container, init containers first; a
 * container without cards is an empty entry (aligned placeholders, docs/hami-parity.md §3.3).
 */
export function encodePodDevices(devices: PodDevices): string {
  let text = '';
  for (const container of devices) {
    for (const device of container) text += `${device.uuid},${device.type},${device.usedmem},${device.usedcores}:`;
    text += ';';
  }
  return text;
}

/**
 * Inverse of `encodePodDevices`. HAMi's decoder keeps the empty piece after the final `;`; it
 * carries nothing, so we drop it and `decode(encode(x))` gives `x` back. Card indexes are not
 * encoded and decode as 0.
 */
export function decodePodDevices(text: string): ContainerDevice[][] {
  const pieces = text.split(';');
  if (pieces.length > 1 && pieces[pieces.length - 1] === '') pieces.pop();
  return pieces.map((piece) => decodeContainerDevices(piece, text));
}

function decodeContainerDevices(piece: string, whole: string): ContainerDevice[] {
  const devices: ContainerDevice[] = [];
  for (const item of piece.split(':')) {
    if (item === '') continue;
    const fields = item.split(',');
    if (fields.length < 4) {
      throw new PodAnnotationFormatError('pod annotation format error, missing fields, do not use nodeName in task spec', whole);
    }
    const [uuid = '', type = '', mem = '', cores = ''] = fields;
    devices.push({ idx: 0, uuid, type, usedmem: parseGoInt32(mem, whole), usedcores: parseGoInt32(cores, whole) });
  }
  return devices;
}

/**
 * `strconv.ParseInt(s, 10, 32)` with Go's error texts. Negative values parse in Go; we refuse them
 * because a negative booking would let later pods over-allocate the card.
 */
function parseGoInt32(text: string, whole: string): number {
  if (!/^[+-]?\d+$/.test(text)) throw new PodAnnotationFormatError(`strconv.ParseInt: parsing ${goQuote(text)}: invalid syntax`, whole);
  const value = Number(text);
  if (value > 2147483647 || value < -2147483648) {
    throw new PodAnnotationFormatError(`strconv.ParseInt: parsing ${goQuote(text)}: value out of range`, whole);
  }
  if (value < 0) throw new PodAnnotationFormatError(`pod annotation format error, negative value ${value}`, whole);
  return value;
}

// ---------------------------------------------------------------------------------------------
// User steering annotations (docs/hami-parity.md §3.4)

/** Comma list, items trimmed, empty items dropped; an empty or blank value is no constraint. */
export function parseAnnotationList(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** The steering constraints of one pod, parsed once per decision. */
export interface DeviceSelectors {
  readonly useTypes: readonly string[];
  readonly noUseTypes: readonly string[];
  readonly useUuids: ReadonlySet<string>;
  readonly noUseUuids: ReadonlySet<string>;
  /** The vgpu-mode annotation's value when present. */
  readonly vgpuMode?: string;
  readonly numaBind: boolean;
}

/** Where a device kind's steering annotations are (`DeviceKind.selectorAnnotations`). */
export interface SelectorAnnotations {
  readonly useTypes: string;
  readonly noUseTypes: string;
  readonly useUuids: string;
  readonly noUseUuids: string;
  readonly vgpuMode: string;
  readonly numaBind: string;
}

/** The steering constraints the pod sets in the annotations `names` gives (docs/hami-parity.md §3.4). */
export function parseDeviceSelectors(annotations: Readonly<Record<string, string>>, names: SelectorAnnotations): DeviceSelectors {
  const vgpuMode = annotations[names.vgpuMode];
  const numaBind = annotations[names.numaBind];
  return {
    useTypes: parseAnnotationList(annotations[names.useTypes]).map((t) => t.toUpperCase()),
    noUseTypes: parseAnnotationList(annotations[names.noUseTypes]).map((t) => t.toUpperCase()),
    useUuids: new Set(parseAnnotationList(annotations[names.useUuids])),
    noUseUuids: new Set(parseAnnotationList(annotations[names.noUseUuids])),
    ...(vgpuMode !== undefined ? { vgpuMode } : {}),
    numaBind: numaBind !== undefined && parseGoBool(numaBind) === true,
  };
}

/** A pod that steers nothing. */
export const NO_SELECTORS: DeviceSelectors = { useTypes: [], noUseTypes: [], useUuids: new Set(), noUseUuids: new Set(), numaBind: false };

/** use/nouse gputype (case-insensitive substring of the card type) and vgpu-mode (value contains the card mode). */
export function typeAllowed(selectors: DeviceSelectors, deviceType: string, deviceMode: string): boolean {
  const upperType = deviceType.toUpperCase();
  if (selectors.useTypes.length > 0 && !selectors.useTypes.some((t) => upperType.includes(t))) return false;
  if (selectors.noUseTypes.some((t) => upperType.includes(t))) return false;
  if (selectors.vgpuMode !== undefined && !selectors.vgpuMode.includes(deviceMode)) return false;
  return true;
}

/** use/nouse gpuuuid: exact UUID match. */
export function uuidAllowed(selectors: DeviceSelectors, uuid: string): boolean {
  return idAllowed(selectors.useUuids, selectors.noUseUuids, uuid);
}

/** A use/nouse pair of id lists, for any device kind: an empty use list allows every id the nouse list does not name. */
export function idAllowed(use: ReadonlySet<string>, noUse: ReadonlySet<string>, id: string): boolean {
  if (use.size > 0 && !use.has(id)) return false;
  return !noUse.has(id);
}


/** Exactly `spread` spreads; anything else packs (docs/hami-parity.md §3.4, 5.4). */
export function nodePolicyOf(annotations: Readonly<Record<string, string>>, configured: string): NodePolicy {
  return (annotations[PodAnnotation.NodeSchedulerPolicy] ?? configured) === 'spread' ? 'spread' : 'binpack';
}

export type SortKey = 'binpack' | 'spread' | 'numa';

/** How cards are ordered and picked for one pod (docs/hami-parity.md §4.1, 5.3). */
export type GpuPolicy =
  | { readonly kind: 'chain'; readonly keys: readonly SortKey[]; readonly needTopology: boolean; readonly isMutex: boolean }
  | {
      readonly kind: 'mutex' | 'binpack' | 'spread';
      readonly needTopology: boolean;
      readonly isMutex: boolean;
      /** numa-bind: cards grouped by NUMA node (binpack: numa descending; spread: ascending). */
      readonly numaBind: boolean;
    };

/**
 * The pod's card policy, one of `GPU_POLICIES`: the same object for every pod with the same policy. Fit and the card
 * order read it for every card; made anew for each decision, it had a new hidden class in each of a fresh process's
 * first decisions (V8 keeps an object shape only while something uses it), and the code reading it stayed generic and
 * slow for good (docs/performance.md, "Decisions at 5,000 nodes").
 */
export function gpuPolicyOf(annotations: Readonly<Record<string, string>>, configured: string, numaBind: boolean): GpuPolicy {
  const value = annotations[PodAnnotation.GpuSchedulerPolicy] ?? configured;
  const items = value.split(',').map((item) => item.trim());
  const needTopology = items.includes('topology-aware');
  const isMutex = items.includes('mutex');
  if (value.includes(',') || value === 'numa') {
    const keys: SortKey[] = [];
    for (const item of items) {
      if ((item === 'binpack' || item === 'spread' || item === 'numa') && !keys.includes(item)) keys.push(item);
    }
    if (keys.length === 0) keys.push('spread');
    if (numaBind && keys[0] !== 'numa') {
      const at = keys.indexOf('numa');
      if (at >= 0) keys.splice(at, 1);
      keys.unshift('numa');
    }
    return GPU_POLICIES.get(policyKey('chain', keys, needTopology, isMutex, false))!;
  }
  const kind = value === 'mutex' ? 'mutex' : value === 'binpack' ? 'binpack' : 'spread';
  return GPU_POLICIES.get(policyKey(kind, [], needTopology, isMutex, numaBind))!;
}

function policyKey(kind: GpuPolicy['kind'], keys: readonly SortKey[], needTopology: boolean, isMutex: boolean, numaBind: boolean): string {
  return `${kind}|${keys.join(',')}|${needTopology}|${isMutex}|${numaBind}`;
}

/**
 * Every card policy there is, frozen: each kind with each flag, and each chain of distinct sort keys (numa-bind is in a
 * chain's keys). 84 in all.
 */
const GPU_POLICIES: ReadonlyMap<string, GpuPolicy> = (() => {
  const policies = new Map<string, GpuPolicy>();
  const chains: SortKey[][] = [];
  const extend = (chain: SortKey[]): void => {
    if (chain.length > 0) chains.push(chain);
    for (const key of ['binpack', 'spread', 'numa'] as const) if (!chain.includes(key)) extend([...chain, key]);
  };
  extend([]);
  for (const needTopology of [false, true]) {
    for (const isMutex of [false, true]) {
      for (const keys of chains) policies.set(policyKey('chain', keys, needTopology, isMutex, false), Object.freeze({ kind: 'chain', keys: Object.freeze(keys), needTopology, isMutex }));
      for (const kind of ['mutex', 'binpack', 'spread'] as const) {
        for (const numaBind of [false, true]) policies.set(policyKey(kind, [], needTopology, isMutex, numaBind), Object.freeze({ kind, needTopology, isMutex, numaBind }));
      }
    }
  }
  return policies;
})();

export interface DeviceScoringWeights {
  readonly slot: number;
  readonly core: number;
  readonly memory: number;
}

export const defaultDeviceScoringWeights: DeviceScoringWeights = { slot: 1, core: 1, memory: 1 };

/** An invalid `hami.io/device-scoring-weights`; the message is HAMi's. */
export class DeviceScoringWeightsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceScoringWeightsError';
  }
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/** `slot=<int>,core=<int>,memory=<int>`, each once, non-negative, not all zero (docs/hami-parity.md §5.2). */
export function parseDeviceScoringWeights(value: string): DeviceScoringWeights {
  const fail = (detail: string): never => {
    throw new DeviceScoringWeightsError(`invalid ${PodAnnotation.DeviceScoringWeights} annotation ${goQuote(value)}: ${detail}`);
  };
  const parts = value.split(',');
  if (parts.length !== 3) fail('expected slot, core, and memory weights');
  const weights = { slot: 0, core: 0, memory: 0 };
  const seen = new Set<string>();
  for (const part of parts) {
    const trimmed = part.trim();
    const equals = trimmed.indexOf('=');
    if (equals < 0) fail('expected key=value entries');
    const key = trimmed.slice(0, equals).trim();
    if (seen.has(key)) fail(`duplicate ${goQuote(key)} weight`);
    const text = trimmed.slice(equals + 1).trim();
    if (!/^[+-]?\d+$/.test(text)) fail(`${goQuote(key)} weight must be an integer`);
    const big = BigInt(text);
    if (big > INT64_MAX || big < INT64_MIN) fail(`${goQuote(key)} weight must be an integer`);
    if (big < 0n) fail(`${goQuote(key)} weight must not be negative`);
    const weight = Number(big);
    if (key === 'slot' || key === 'core' || key === 'memory') weights[key] = weight;
    else fail(`unknown weight ${goQuote(key)}`);
    seen.add(key);
  }
  if (weights.slot === 0 && weights.core === 0 && weights.memory === 0) fail('at least one weight must be positive');
  return weights;
}

/** Default weights unless the pod carries the annotation; throws `DeviceScoringWeightsError`. */
export function deviceScoringWeightsOf(annotations: Readonly<Record<string, string>>): DeviceScoringWeights {
  const value = annotations[PodAnnotation.DeviceScoringWeights];
  return value === undefined ? defaultDeviceScoringWeights : parseDeviceScoringWeights(value);
}

/** Per-pod override of the global real-time switch: "true"/"false", anything else defers to config. */
export function realtimeOverrideOf(annotations: Readonly<Record<string, string>>): boolean | undefined {
  const value = annotations[PodAnnotation.EnableRealtimeCheck];
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}
