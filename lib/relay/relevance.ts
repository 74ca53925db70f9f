/**
 * Which watched objects the control plane needs, and in what form (docs/api.md §4 and §9). Pure
 * functions over Kubernetes JSON, so the rules are tested with tables of cases.
 */
import { toKubeTime } from './eventCorrelator';
import { isJsonObject, type JsonObject } from '../json';

export type ForwardedKind = 'Node' | 'Pod' | 'ResourceQuota';

/**
 * A plain JSON copy as the API server writes it: Date values (list results from client-node are
 * deserialized, watch events are not) become RFC 3339 strings, undefined keys vanish.
 */
export function toPlainJson(value: unknown): unknown {
  if (value instanceof Date) return toKubeTime(value);
  if (Array.isArray(value)) return value.map(toPlainJson);
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = toPlainJson(v);
    return out;
  }
  return value;
}

/** The object as forwarded: kind/apiVersion set, managedFields (and node image lists) removed. */
export function toForwardedObject(kind: ForwardedKind, obj: unknown): JsonObject {
  const plain = toPlainJson(obj);
  const copy: JsonObject = isJsonObject(plain) ? plain : {};
  const metadata = isJsonObject(copy.metadata) ? { ...copy.metadata } : {};
  delete metadata.managedFields;
  const out: JsonObject = { ...copy, apiVersion: 'v1', kind, metadata };
  if (kind === 'Node' && isJsonObject(out.status)) {
    const status = { ...out.status };
    // Image lists are large, change often and say nothing about GPUs.
    delete status.images;
    out.status = status;
  }
  return out;
}

function record(obj: unknown, ...path: string[]): JsonObject {
  let cur: unknown = obj;
  for (const p of path) cur = isJsonObject(cur) ? cur[p] : undefined;
  return isJsonObject(cur) ? cur : {};
}

function hamiAnnotations(obj: unknown): JsonObject {
  const annotations = record(obj, 'metadata', 'annotations');
  const out: JsonObject = {};
  for (const k of Object.keys(annotations).sort()) if (k.startsWith('hami.io/')) out[k] = annotations[k];
  return out;
}

function sorted(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of Object.keys(o).sort()) out[k] = o[k];
  return out;
}

/** True when any container or init container requests or limits one of the managed resources. */
export function podRequestsManaged(pod: unknown, managedResources: readonly string[]): boolean {
  const spec = record(pod, 'spec');
  const containers = [...(Array.isArray(spec.containers) ? spec.containers : []), ...(Array.isArray(spec.initContainers) ? spec.initContainers : [])];
  return containers.some((c) => {
    const resources = record(c, 'resources');
    return managedResources.some((r) => r in record(resources, 'limits') || r in record(resources, 'requests'));
  });
}

/** A pod matters for GPU accounting when HAMi placed it or it asks for managed resources. */
export function podMatters(pod: unknown, managedResources: readonly string[]): boolean {
  return 'hami.io/vgpu-node' in record(pod, 'metadata', 'annotations') || podRequestsManaged(pod, managedResources);
}

/**
 * The part of an object whose change is worth forwarding. Nodes: hami.io annotations, labels (the instance type
 * among them), allocatable and capacity (AWS Neuron devices are registered from it), not heartbeats. Pods: hami.io
 * annotations, phase, node, deletion. Quotas: spec.hard.
 */
export function fingerprint(kind: ForwardedKind, obj: unknown): string {
  switch (kind) {
    case 'Node':
      return JSON.stringify([
        hamiAnnotations(obj),
        sorted(record(obj, 'metadata', 'labels')),
        sorted(record(obj, 'status', 'allocatable')),
        record(obj, 'spec').unschedulable ?? false,
        sorted(record(obj, 'status', 'capacity')),
      ]);
    case 'Pod':
      return JSON.stringify([
        hamiAnnotations(obj),
        record(obj, 'status').phase ?? null,
        record(obj, 'spec').nodeName ?? null,
        toPlainJson(record(obj, 'metadata').deletionTimestamp) ?? null,
      ]);
    case 'ResourceQuota':
      return JSON.stringify(sorted(record(obj, 'spec', 'hard')));
  }
}

export function objectKey(obj: unknown): string {
  const metadata = record(obj, 'metadata');
  return `${typeof metadata.namespace === 'string' ? metadata.namespace : ''}/${typeof metadata.name === 'string' ? metadata.name : ''}`;
}

export type ChangeDecision = 'forward' | 'skip';

/**
 * Remembers what was last forwarded per object, so only meaningful changes travel. Pods that do not
 * matter are never tracked; a tracked pod keeps being forwarded until it is deleted.
 */
export class ChangeTracker {
  private readonly last = new Map<string, string>();

  constructor(
    private readonly kind: ForwardedKind,
    private readonly managedResources: readonly string[],
  ) {}

  decide(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: unknown, force = false): ChangeDecision {
    const key = objectKey(obj);
    if (type === 'DELETED') {
      const tracked = this.last.delete(key);
      return tracked || (this.kind === 'Pod' ? podMatters(obj, this.managedResources) : true) ? 'forward' : 'skip';
    }
    if (this.kind === 'Pod' && !this.last.has(key) && !podMatters(obj, this.managedResources)) return 'skip';
    const fp = fingerprint(this.kind, obj);
    if (!force && this.last.get(key) === fp) return 'skip';
    this.last.set(key, fp);
    return 'forward';
  }

  /** Keys forwarded and not deleted since. */
  trackedKeys(): string[] {
    return [...this.last.keys()];
  }

  tracks(key: string): boolean {
    return this.last.has(key);
  }
}

/**
 * The keys of a complete list (docs/state.md, "Re-lists converge") for the objects an informer holds: Pods by
 * uid, only those the relay forwards (they matter, or were forwarded before); Nodes by name; ResourceQuotas as
 * `namespace/name`. Objects without the identifying field are left out.
 */
export function completeKeys(kind: ForwardedKind, objects: readonly unknown[], tracker: ChangeTracker, managedResources: readonly string[]): string[] {
  const keys: string[] = [];
  for (const obj of objects) {
    const metadata = record(obj, 'metadata');
    const name = typeof metadata.name === 'string' ? metadata.name : '';
    if (name === '') continue;
    switch (kind) {
      case 'Pod':
        if (typeof metadata.uid === 'string' && metadata.uid !== '' && (podMatters(obj, managedResources) || tracker.tracks(objectKey(obj)))) keys.push(metadata.uid);
        break;
      case 'Node':
        keys.push(name);
        break;
      case 'ResourceQuota':
        if (typeof metadata.namespace === 'string') keys.push(`${metadata.namespace}/${name}`);
        break;
    }
  }
  return keys;
}
