/**
 * Extender requests are checked against the cluster, whoever sends them (docs/relay.md, "Only the scheduler
 * decides"): /filter and /bind are answered only for a pod the cluster holds under the same uid, for our scheduler,
 * with no node yet and not being deleted; the filter then decides on the pod as the cluster has it (resources,
 * annotations), not as the request describes it. The pod comes from the Pod informer's cache, or, when the cache
 * does not hold it under that uid (a pod newer than the cache), from the API server: a new pod is never refused
 * for being new. The checks themselves are pure.
 */
import { toPlainJson } from './relevance';
import { isJsonObject, objectField, type JsonObject } from '../json';
import { errorMessage } from '../errors';

export interface PodIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** Where the relay reads pods: its informer's cache, and the API server (undefined: 404). */
export interface PodSource {
  readonly schedulerName: string;
  cached(namespace: string, name: string): unknown;
  read(namespace: string, name: string): Promise<unknown>;
}

export type PodCheck = { readonly ok: true; readonly pod: JsonObject } | { readonly ok: false; readonly reason: string };

const refused = (reason: string): PodCheck => ({ ok: false, reason: `relay refused the request: ${reason}` });

/** The checks on the cluster's pod (undefined: not in the cluster), pure. */
export function checkClusterPod(pod: unknown, want: PodIdentity, schedulerName: string): PodCheck {
  const id = `${want.namespace}/${want.name}`;
  if (want.namespace === '' || want.name === '' || want.uid === '') return refused('it must name the pod\'s namespace, name and uid');
  if (pod === undefined || pod === null) return refused(`pod ${id} does not exist in the cluster`);
  const metadata = objectField(pod, 'metadata');
  const spec = objectField(pod, 'spec');
  if (metadata.uid !== want.uid) return refused(`pod ${id} in the cluster has uid ${String(metadata.uid)}, not ${want.uid} (deleted and created again?)`);
  if (spec.schedulerName !== schedulerName) return refused(`pod ${id} is for scheduler ${JSON.stringify(spec.schedulerName ?? 'default-scheduler')}, not ${JSON.stringify(schedulerName)}`);
  if (typeof spec.nodeName === 'string' && spec.nodeName !== '') return refused(`pod ${id} is already bound to node ${JSON.stringify(spec.nodeName)}`);
  if (metadata.deletionTimestamp !== undefined && metadata.deletionTimestamp !== null) return refused(`pod ${id} is being deleted`);
  return { ok: true, pod: clusterView(pod) };
}

/** The pod as the control plane gets it: plain JSON as the API server writes it, no managedFields, no kind/apiVersion (as kube-scheduler sends it). */
function clusterView(pod: unknown): JsonObject {
  const plain = toPlainJson(pod);
  const copy: JsonObject = isJsonObject(plain) ? { ...plain } : {};
  delete copy.kind;
  delete copy.apiVersion;
  const metadata = { ...objectField(copy, 'metadata') };
  delete metadata.managedFields;
  return { ...copy, metadata };
}

/** Looks the pod up (cache first, then the API server) and checks it. */
export async function clusterPod(source: PodSource, want: PodIdentity): Promise<PodCheck> {
  if (want.namespace === '' || want.name === '' || want.uid === '') return checkClusterPod(undefined, want, source.schedulerName);
  const cached = source.cached(want.namespace, want.name);
  if (cached !== undefined && objectField(cached, 'metadata').uid === want.uid) return checkClusterPod(cached, want, source.schedulerName);
  let live: unknown;
  try {
    live = await source.read(want.namespace, want.name);
  } catch (err) {
    return refused(`could not read pod ${want.namespace}/${want.name} from the API server: ${errorMessage(err)}`);
  }
  return checkClusterPod(live, want, source.schedulerName);
}

/** Which parts of the request's pod differ from the cluster's (for the operator's log; the cluster's is used). */
export function requestDiffers(requestPod: unknown, clusterPodJson: JsonObject): string[] {
  const differs: string[] = [];
  const resources = (pod: unknown) => {
    const spec = objectField(pod, 'spec');
    const containers = [...(Array.isArray(spec.initContainers) ? spec.initContainers : []), ...(Array.isArray(spec.containers) ? spec.containers : [])];
    return JSON.stringify(containers.map((c) => [objectField(c, 'resources').limits ?? {}, objectField(c, 'resources').requests ?? {}]));
  };
  const annotations = (pod: unknown) => JSON.stringify(Object.entries(objectField(objectField(pod, 'metadata'), 'annotations')).sort(([a], [b]) => a.localeCompare(b)));
  if (resources(requestPod) !== resources(clusterPodJson)) differs.push('resources');
  if (annotations(requestPod) !== annotations(clusterPodJson)) differs.push('annotations');
  return differs;
}
