/**
 * ClusterWriter over @kubernetes/client-node: merge-patches pods, creates Bindings, records Events.
 * Every pod write names the pod's uid as a precondition. Kubernetes errors are translated to KubeWriteError
 * here, never further up.
 */
import { ApiException, PatchStrategy, setHeaderOptions, type CoreV1Api } from '@kubernetes/client-node';
import type { ClusterWriter, EvictionOutcome } from './effects';
import type { BindPodEffect, EvictPodEffect, PatchNodeAnnotationsEffect, PatchPodAnnotationsEffect, RecordEventEffect, RecordNodeEventEffect } from '../wire/effects';
import { KubeWriteError } from './errors';
import { EventCorrelator, type EventInput } from './eventCorrelator';
import type { NudgeResult, NudgeTarget } from './nudger';
import { errorMessage } from '../errors';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** A guarded Node patch that keeps meeting newer versions gives up after this many reads (then it is reported). */
const GUARDED_PATCH_ROUNDS = 3;

/** The message of a Kubernetes Status body, which client-node hands over as a raw string. */
export function statusMessage(err: unknown): string {
  if (err instanceof ApiException) {
    const body: unknown = err.body;
    if (typeof body === 'string') {
      try {
        const parsed = JSON.parse(body) as { message?: unknown };
        if (typeof parsed.message === 'string') return parsed.message;
      } catch {
        // not JSON: fall through to the raw text
      }
      if (body !== '') return body;
    } else if (body !== null && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
      return (body as { message: string }).message;
    }
    return `HTTP ${err.code}`;
  }
  return errorMessage(err);
}

function statusCode(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/**
 * What the correlator records: a pod's event as given; a Node's with the node's name as its uid, as the kubelet
 * records its own (`kubectl describe node` finds events by the node's uid or its name).
 */
function eventInput(effect: RecordEventEffect | RecordNodeEventEffect): EventInput {
  if (effect.kind === 'RecordEvent') return { kind: 'Pod', namespace: effect.namespace, name: effect.name, uid: effect.uid, type: effect.type, reason: effect.reason, message: effect.message };
  return { kind: 'Node', namespace: '', name: effect.name, uid: effect.name, type: effect.type, reason: effect.reason, message: effect.message };
}

export function createKubeWriter(core: CoreV1Api, correlator: EventCorrelator): ClusterWriter {
  const patchPodMetadata = async (e: PatchPodAnnotationsEffect): Promise<void> => {
    // The uid is a precondition: a pod deleted and recreated under the same name is never patched with a
    // decision made for its predecessor (the API server answers 409 Conflict).
    const body = { metadata: { ...(e.uid !== '' ? { uid: e.uid } : {}), annotations: e.annotations, ...(e.labels !== undefined ? { labels: e.labels } : {}) } };
    try {
      await core.patchNamespacedPod({ name: e.name, namespace: e.namespace, body }, mergePatch);
    } catch (err) {
      throw new KubeWriteError(`patch pod ${e.namespace}/${e.name}: ${statusMessage(err)}`, statusCode(err), { cause: err });
    }
  };

  const bindPod = async (e: BindPodEffect): Promise<void> => {
    // metadata.uid is the Binding's precondition, as for the patches above.
    const body = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: e.name, namespace: e.namespace, ...(e.uid !== '' ? { uid: e.uid } : {}) },
      target: { apiVersion: 'v1', kind: 'Node', name: e.node },
    };
    try {
      await core.createNamespacedPodBinding({ name: e.name, namespace: e.namespace, body });
    } catch (err) {
      // A retried bind after a timed-out but successful one: the pod is already where we wanted it.
      if (statusCode(err) === 409 && (await boundNode(e)) === e.node) return;
      throw new KubeWriteError(`bind pod ${e.namespace}/${e.name} to ${e.node}: ${statusMessage(err)}`, statusCode(err), { cause: err });
    }
  };

  const boundNode = async (e: BindPodEffect): Promise<string | undefined> => {
    try {
      const pod = await core.readNamespacedPod({ name: e.name, namespace: e.namespace });
      return pod.spec?.nodeName;
    } catch {
      return undefined;
    }
  };

  const recordEvent = async (effect: RecordEventEffect | RecordNodeEventEffect): Promise<void> => {
    const e = eventInput(effect);
    const decision = correlator.correlate(e);
    if (decision.action === 'create') {
      await core.createNamespacedEvent({ namespace: decision.event.metadata.namespace, body: decision.event as never });
      return;
    }
    try {
      await core.patchNamespacedEvent({ name: decision.name, namespace: decision.namespace, body: decision.patch }, mergePatch);
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
      // The earlier event expired on the server (events have a TTL): start a new one, as client-go does.
      correlator.forget(decision.cacheKey);
      const again = correlator.correlate(e);
      if (again.action === 'create') await core.createNamespacedEvent({ namespace: again.event.metadata.namespace, body: again.event as never });
    }
  };

  const patchNodeMetadata = async (e: PatchNodeAnnotationsEffect): Promise<void> => {
    const guard = e.ifAnnotations;
    for (let round = 0; ; round++) {
      let resourceVersion: string | undefined;
      try {
        if (guard !== undefined) {
          // Guarded (the lock's mirror, docs/locks.md): applied only while the Node still holds these values, and
          // only to the version read, so a write in between (the next holder's lock) is never undone.
          const node = await core.readNode({ name: e.name });
          const annotations = node.metadata?.annotations ?? {};
          if (Object.entries(guard).some(([key, value]) => annotations[key] !== value)) return;
          resourceVersion = node.metadata?.resourceVersion;
        }
        await core.patchNode({ name: e.name, body: { metadata: { ...(resourceVersion !== undefined ? { resourceVersion } : {}), annotations: e.annotations } } }, mergePatch);
        return;
      } catch (err) {
        // Gone, or changed since the read: a guarded patch looks again (a deleted Node has no mirror left to clear).
        if (guard !== undefined && statusCode(err) === 404) return;
        if (guard !== undefined && statusCode(err) === 409 && round < GUARDED_PATCH_ROUNDS) continue;
        throw new KubeWriteError(`patch node ${e.name}: ${statusMessage(err)}`, statusCode(err), { cause: err });
      }
    }
  };

  const evictPod = async (e: EvictPodEffect): Promise<EvictionOutcome> => {
    // policy/v1 Eviction: the API server checks the pod's PodDisruptionBudgets; the uid is a precondition, so a pod
    // deleted and created again under the same name is never evicted for a plan made on its predecessor.
    const body = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: e.name, namespace: e.namespace },
      ...(e.uid !== '' ? { deleteOptions: { preconditions: { uid: e.uid } } } : {}),
    };
    try {
      await core.createNamespacedPodEviction({ name: e.name, namespace: e.namespace, body });
      return { kind: 'evicted' };
    } catch (err) {
      if (statusCode(err) === 404) return { kind: 'gone' };
      return { kind: 'refused', message: `evict pod ${e.namespace}/${e.name}: ${statusMessage(err)}`, disruptionBudget: statusCode(err) === 429 && namesDisruptionBudget(err) };
    }
  };

  return { patchPodMetadata, bindPod, recordEvent, patchNodeMetadata, evictPod };
}

/** Whether a refused eviction's Status names a PodDisruptionBudget (`details.causes[].reason: DisruptionBudget`). */
function namesDisruptionBudget(err: unknown): boolean {
  if (!(err instanceof ApiException)) return false;
  const raw: unknown = err.body;
  let body: unknown = raw;
  if (typeof raw === 'string') {
    try {
      body = JSON.parse(raw);
    } catch {
      return /disruption budget/i.test(raw);
    }
  }
  const causes = (body as { details?: { causes?: unknown } } | null)?.details?.causes;
  return Array.isArray(causes) && causes.some((c) => (c as { reason?: unknown } | null)?.reason === 'DisruptionBudget');
}

/**
 * The nudger's write: a merge patch of pod annotations whose uid and resourceVersion are preconditions. A 409
 * means the pod changed since the informer saw it (or was replaced); 404 that it is gone.
 */
export function createNudgePatcher(core: Pick<CoreV1Api, 'patchNamespacedPod'>): (target: NudgeTarget, annotations: Readonly<Record<string, string>>) => Promise<NudgeResult> {
  return async (t, annotations) => {
    const body = { metadata: { uid: t.uid, resourceVersion: t.resourceVersion, annotations } };
    try {
      await core.patchNamespacedPod({ name: t.name, namespace: t.namespace, body }, mergePatch);
      return 'nudged';
    } catch (err) {
      if (statusCode(err) === 409) return 'changed';
      if (statusCode(err) === 404) return 'gone';
      throw new KubeWriteError(`patch pod ${t.namespace}/${t.name}: ${statusMessage(err)}`, statusCode(err), { cause: err });
    }
  };
}
