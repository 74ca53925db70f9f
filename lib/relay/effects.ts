/**
 * Applying Effects (docs/api.md §3; their shapes are ../wire/effects.ts): the writes the control plane decides and
 * the relay performs, in order. Patches and bindings are required (the first failure stops the list); events are
 * best effort.
 */
import type { AppLogger } from '../powertools';
import { forEachAtMost } from '../concurrency';
import { errorMessage } from '../errors';
import type { BindPodEffect, Effect, PatchNodeAnnotationsEffect, PatchPodAnnotationsEffect, RecordEventEffect, RecordNodeEventEffect } from '../wire/effects';

/** The cluster writes Effects need; implemented over client-node in kubeWriter.ts, doubled in tests. */
export interface ClusterWriter {
  /** JSON merge patch of the pod's metadata; null deletes a key. Throws KubeWriteError. */
  patchPodMetadata(effect: PatchPodAnnotationsEffect): Promise<void>;
  /** Creates the Binding; a 409 because the pod is already on `node` counts as success. Throws KubeWriteError. */
  bindPod(effect: BindPodEffect): Promise<void>;
  /** Records a core/v1 Event on a pod or a Node (aggregated like client-go's recorder). May throw; callers treat it as best effort. */
  recordEvent(effect: RecordEventEffect | RecordNodeEventEffect): Promise<void>;
  /** JSON merge patch of the Node's annotations (HAMi's node lock mirror); null deletes. Throws KubeWriteError. */
  patchNodeMetadata(effect: PatchNodeAnnotationsEffect): Promise<void>;
}

export type ApplyOutcome = { readonly ok: true } | { readonly ok: false; readonly error: string };

/** Independent Effects (answers to /cluster/events) applied at once, at most: a burst's nudges do not queue one by one. */
const PARALLEL_INDEPENDENT_EFFECTS = 8;

/**
 * Applies effects in order. Stops at the first failed patch or binding and returns its text; a failed
 * event is logged and skipped. `independent`: the effects are unrelated (the answers to /cluster/events carry
 * Warning events and nudges), so they are applied side by side, each tried whatever failed, and the first failure
 * is returned.
 */
export async function applyEffects(effects: readonly Effect[], writer: ClusterWriter, logger: AppLogger, opts: { readonly independent?: boolean } = {}): Promise<ApplyOutcome> {
  if (opts.independent) {
    let firstFailure: ApplyOutcome | undefined;
    await forEachAtMost(effects, PARALLEL_INDEPENDENT_EFFECTS, async (effect) => {
      const failure = await applyEffect(effect, writer, logger);
      if (failure) firstFailure ??= failure;
    });
    return firstFailure ?? { ok: true };
  }
  for (const effect of effects) {
    const failure = await applyEffect(effect, writer, logger);
    if (failure) return failure;
  }
  return { ok: true };
}

/** One effect; a failed patch or binding is logged and returned, a failed event only logged. */
async function applyEffect(effect: Effect, writer: ClusterWriter, logger: AppLogger): Promise<ApplyOutcome | undefined> {
  switch (effect.kind) {
    case 'PatchPodAnnotations':
    case 'BindPod':
    case 'PatchNodeAnnotations':
      try {
        if (effect.kind === 'BindPod') await writer.bindPod(effect);
        else if (effect.kind === 'PatchNodeAnnotations') await writer.patchNodeMetadata(effect);
        else await writer.patchPodMetadata(effect);
        return undefined;
      } catch (err) {
        const error = errorMessage(err);
        const target = effect.kind === 'PatchNodeAnnotations' ? { node: effect.name } : { namespace: effect.namespace, pod: effect.name };
        logger.warn('EffectFailed', { effect: effect.kind, ...target, error });
        return { ok: false, error };
      }
    case 'RecordEvent':
    case 'RecordNodeEvent':
      try {
        await writer.recordEvent(effect);
      } catch (err) {
        const target = effect.kind === 'RecordNodeEvent' ? { node: effect.name } : { namespace: effect.namespace, pod: effect.name };
        logger.warn('EventNotRecorded', { ...target, reason: effect.reason, error: errorMessage(err) });
      }
      return undefined;
  }
}
