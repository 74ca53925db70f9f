/**
 * Applying Effects (docs/api.md §3; their shapes are ../wire/effects.ts): the writes the control plane decides and
 * the relay performs, in order. Patches and bindings are required (the first failure stops the list); events are
 * best effort.
 */
import type { AppLogger } from '../powertools';
import { forEachAtMost } from '../concurrency';
import { errorMessage } from '../errors';
import type { EvictionRefused, PreemptionMode } from '../wire/preemption';
import type { BindPodEffect, Effect, EvictPodEffect, PatchNodeAnnotationsEffect, PatchPodAnnotationsEffect, RecordEventEffect, RecordNodeEventEffect } from '../wire/effects';

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
  /** Evicts the pod through the Eviction API (policy/v1), which honours PodDisruptionBudgets; never throws. */
  evictPod(effect: EvictPodEffect): Promise<EvictionOutcome>;
}

/** An eviction's outcome: done, the pod already gone (404), or refused (a PodDisruptionBudget's 429, or any other failure). */
export type EvictionOutcome =
  | { readonly kind: 'evicted' }
  | { readonly kind: 'gone' }
  | { readonly kind: 'refused'; readonly message: string; readonly disruptionBudget: boolean };

export interface ApplyOptions {
  /** The effects are unrelated (answers to /cluster/events): applied side by side. */
  readonly independent?: boolean;
  /**
   * Evictions (GPU-aware preemption, docs/preemption.md): `on` applies them; `log` and `off` (the cluster's
   * HAMI_PREEMPTION) evict nothing and report them refused. Absent: `on`.
   */
  readonly preemption?: PreemptionMode;
  /** Told of a refused eviction, so the control plane can drop the plan and try the next (`/preemption/refused`). */
  readonly evictionRefused?: (report: EvictionRefused) => Promise<void>;
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
export async function applyEffects(effects: readonly Effect[], writer: ClusterWriter, logger: AppLogger, opts: ApplyOptions = {}): Promise<ApplyOutcome> {
  const evictions = new Evictions(writer, logger, opts);
  if (opts.independent) {
    let firstFailure: ApplyOutcome | undefined;
    await forEachAtMost(effects, PARALLEL_INDEPENDENT_EFFECTS, async (effect) => {
      const failure = await applyEffect(effect, writer, logger, evictions);
      if (failure) firstFailure ??= failure;
    });
    return firstFailure ?? { ok: true };
  }
  for (const effect of effects) {
    const failure = await applyEffect(effect, writer, logger, evictions);
    if (failure) return failure;
  }
  return { ok: true };
}

/**
 * The evictions of one list: once one of a preemptor's victims is refused, its plan is dropped (the control plane is
 * told), so its other victims are left alone.
 */
class Evictions {
  private readonly abandoned = new Set<string>();

  constructor(
    private readonly writer: ClusterWriter,
    private readonly logger: AppLogger,
    private readonly opts: ApplyOptions,
  ) {}

  async apply(effect: EvictPodEffect): Promise<void> {
    const ids = { namespace: effect.namespace, pod: effect.name, node: effect.node, preemptor: `${effect.preemptor.namespace}/${effect.preemptor.name}` };
    if (this.abandoned.has(effect.preemptor.uid)) {
      this.logger.info('EvictionSkipped', { ...ids, reason: 'an earlier eviction of the same plan was refused' });
      return;
    }
    const mode = this.opts.preemption ?? 'on';
    const outcome: EvictionOutcome =
      mode === 'on' ? await this.writer.evictPod(effect) : { kind: 'refused', message: `this cluster's relay has HAMI_PREEMPTION=${mode}: nothing is evicted`, disruptionBudget: false };
    if (outcome.kind !== 'refused') {
      this.logger.info('PodEvicted', { ...ids, outcome: outcome.kind });
      return;
    }
    this.abandoned.add(effect.preemptor.uid);
    this.logger.warn('EvictionRefused', { ...ids, disruptionBudget: outcome.disruptionBudget, error: outcome.message });
    try {
      await this.opts.evictionRefused?.({
        preemptor: effect.preemptor,
        victim: { namespace: effect.namespace, name: effect.name, uid: effect.uid },
        node: effect.node,
        message: outcome.message,
        disruptionBudget: outcome.disruptionBudget,
      });
    } catch (err) {
      // The hold ends on its own (HAMI_PREEMPTION_HOLD_SECONDS); only the next plan comes later.
      this.logger.warn('EvictionRefusalNotReported', { ...ids, error: errorMessage(err) });
    }
  }
}

/** One effect; a failed patch or binding is logged and returned, a failed event only logged; evictions never fail the list. */
async function applyEffect(effect: Effect, writer: ClusterWriter, logger: AppLogger, evictions: Evictions): Promise<ApplyOutcome | undefined> {
  switch (effect.kind) {
    case 'EvictPod':
      await evictions.apply(effect);
      return undefined;
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
