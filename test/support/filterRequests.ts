/**
 * Filter requests as kube-scheduler sends them, and what a test reads from the answers: shared by the control
 * plane's unit tables (test/unit/control) and the integration tests that drive the same domain functions.
 */
import type { FilterAnswer, FilterRequest } from '../../lib/control/filter';

/** What kube-scheduler sends to filter `pod` over these candidates by name (nodeCacheCapable). */
export function filterOf(pod: FilterRequest['pod'] & { metadata: { namespace: string; name: string; uid: string } }, nodeNames: string[], minViewSeq?: number): FilterRequest {
  return {
    pod,
    podRef: { namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid },
    nodeNames,
    nodes: null,
    ...(minViewSeq !== undefined ? { minViewSeq } : {}),
  };
}

/** The annotations a filter answer patches onto the pod; undefined when it placed nothing. */
export function patchOf(answer: FilterAnswer): Record<string, string> | undefined {
  const patch = answer.effects.find((e) => e.kind === 'PatchPodAnnotations');
  return patch?.kind === 'PatchPodAnnotations' ? (patch.annotations as Record<string, string>) : undefined;
}

/** As `patchOf`, for a pod the test needs placed: anything else is a failure saying what the filter answered. */
export function placedPatch(answer: FilterAnswer): Record<string, string> {
  const annotations = patchOf(answer);
  if (annotations === undefined) throw new Error(`not placed: ${JSON.stringify(answer.result)}`);
  return annotations;
}
