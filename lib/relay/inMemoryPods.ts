/**
 * The API server's pods held in memory, for running the relay's own filter path and decide-ahead in one process
 * (`npm run demo` and `npm run bench`; docs/relay.md, "Deciding ahead"): a patch bumps the resourceVersion and reaches
 * every informer, a claim is conditional on the resourceVersion as the relay's is, and a pod the scheduler annotated
 * is passed on as the relay's watch forwards it to the control plane. The relay's tests use the fake API server over
 * HTTP instead (test/support).
 */
import type { AheadDecisions } from './aheadDecisions';
import type { ClusterWriter } from './effects';
import type { NudgeResult, NudgeTarget } from './nudger';
import type { PodSource } from './podCheck';

/** What this store needs of a pod; the rest of the object is kept as given. */
export interface HeldPod {
  readonly metadata: { readonly name: string; readonly namespace: string; readonly uid: string; readonly resourceVersion: string; readonly annotations: Readonly<Record<string, string>> };
  readonly spec: object;
}

/** The annotation whose presence says the scheduler decided the pod: what the control plane's ledger follows. */
const SCHEDULED_NODE_ANNOTATION = 'hami.io/vgpu-node';

export class InMemoryPods<P extends HeldPod = HeldPod> {
  private readonly pods = new Map<string, P>();
  /** Pod informers (each relay replica's decide-ahead): they see every change, as a watch delivers it. */
  readonly informers: Pick<AheadDecisions, 'observe'>[] = [];

  /** `forward`: a pod the scheduler annotated, as the relay's watch forwards it to the control plane (awaited). */
  constructor(private readonly forward: (pod: P) => Promise<void> | void) {}

  get(namespace: string, name: string): P | undefined {
    return this.pods.get(key(namespace, name));
  }

  create(pod: P): void {
    this.pods.set(key(pod.metadata.namespace, pod.metadata.name), pod);
    for (const informer of this.informers) informer.observe('ADDED', pod);
  }

  /** Bound to `node`: the informers see it leave the pending pods. */
  bound(namespace: string, name: string, node: string): void {
    const pod = this.get(namespace, name);
    if (pod) for (const informer of this.informers) informer.observe('MODIFIED', { ...pod, spec: { ...pod.spec, nodeName: node } });
  }

  /** A merge patch of the pod's annotations (null deletes a key). */
  async patch(namespace: string, name: string, annotations: Readonly<Record<string, string | null>>): Promise<void> {
    const pod = this.get(namespace, name);
    if (!pod) return;
    const merged: Record<string, string> = { ...pod.metadata.annotations };
    for (const [k, value] of Object.entries(annotations)) {
      if (value === null) delete merged[k];
      else merged[k] = value;
    }
    const next = { ...pod, metadata: { ...pod.metadata, annotations: merged, resourceVersion: String(Number(pod.metadata.resourceVersion) + 1) } } as P;
    this.pods.set(key(namespace, name), next);
    for (const informer of this.informers) informer.observe('MODIFIED', next);
    // A claim alone changes nothing the ledger reads; the scheduler's annotations do.
    if (merged[SCHEDULED_NODE_ANNOTATION] !== undefined) await this.forward(next);
  }

  /** A merge patch conditional on the resourceVersion, as the relay's claim is. */
  async claim(target: NudgeTarget, annotations: Readonly<Record<string, string>>): Promise<NudgeResult> {
    const pod = this.get(target.namespace, target.name);
    if (!pod || pod.metadata.uid !== target.uid) return 'gone';
    if (pod.metadata.resourceVersion !== target.resourceVersion) return 'changed';
    await this.patch(target.namespace, target.name, annotations);
    return 'nudged';
  }

  /** The relay's pod look-ups (podCheck.ts) over these pods. */
  source(schedulerName: string): PodSource {
    return { schedulerName, cached: (namespace, name) => this.get(namespace, name), read: async (namespace, name) => this.get(namespace, name) };
  }

  /**
   * A cluster writer over these pods: annotation patches land here; Events go to `events` (the demo shows them);
   * Bindings and node patches are the caller's to model; evictions are refused, as a PodDisruptionBudget would.
   */
  writer(events: ClusterWriter['recordEvent'] = async () => undefined): ClusterWriter {
    return {
      patchPodMetadata: (e) => this.patch(e.namespace, e.name, e.annotations),
      bindPod: async () => undefined,
      recordEvent: events,
      patchNodeMetadata: async () => undefined,
      evictPod: async () => ({ kind: 'refused', message: 'nothing is evicted here', disruptionBudget: false }),
    };
  }
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
