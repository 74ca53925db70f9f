/**
 * `npm run bench` with the relay's own filter path (docs/performance.md, "Deciding ahead"): kube-scheduler's stand-in
 * calls `relayFilter` (lib/relay/extender.ts) in this process, with decide-ahead (lib/relay/aheadDecisions.ts) on or
 * off, exactly as the relay runs them. The API server's pods stand in memory (lib/relay/inMemoryPods.ts): their
 * patches and claims (conditional on the resourceVersion), and the watch events the relay's code observes.
 */
import { createControlPlaneClient, unsignedRequests } from '../lib/relay/controlPlane';
import { relayFilter, type ExtenderDeps } from '../lib/relay/extender';
import { AheadDecisions, aheadOptionsFrom } from '../lib/relay/aheadDecisions';
import { inProcessRelayConfig } from '../lib/relay/config';
import { InMemoryPods } from '../lib/relay/inMemoryPods';
import { realDelay } from '../lib/relay/delay';
import type { AppLogger } from '../lib/powertools';
import type { BenchPod } from './workload';

export const BENCH_SCHEDULER = 'hami-scheduler';

/** A pending pod as the API server holds it, for our scheduler. */
export type ClusterPod = BenchPod & { readonly spec: BenchPod['spec'] & { readonly schedulerName: string } };

const quiet = (_message: unknown, ..._fields: unknown[]): void => undefined;
const silentLogger: AppLogger = { debug: quiet, info: quiet, warn: quiet, error: quiet };

export interface AheadSettings {
  /** The control plane serving `POST /filter/ahead` (its own function, so its own environment). */
  readonly aheadUrl: string;
  readonly reservationTtlMs: number;
}

/**
 * The relay under test: `replicas` relays over one API server, each with its own decide-ahead (when on) and its own
 * filter path; kube-scheduler's filters go to them in turn, as a Service spreads them. `filterUrls` holds one filter
 * control plane per kube-scheduler: their filters reach the function at the same time, so each is served by an
 * environment of its own, as Lambda's concurrency gives them.
 */
export class RelayUnderTest {
  private readonly api: InMemoryPods<ClusterPod>;
  /** Per replica: its decide-ahead, and its filter path to each kube-scheduler's control plane. */
  private readonly replicas: { readonly deps: readonly ExtenderDeps[]; readonly ahead: AheadDecisions | undefined }[] = [];
  private next = 0;

  constructor(filterUrls: readonly string[], settings: AheadSettings | undefined, forward: (event: { type: 'MODIFIED'; object: unknown }) => void, viewSeq: () => number, replicas = 1) {
    this.api = new InMemoryPods<ClusterPod>((pod) => forward({ type: 'MODIFIED', object: { kind: 'Pod', apiVersion: 'v1', ...pod } }));
    // The bench's workload never preempts: the writer refuses evictions, as a PodDisruptionBudget would.
    const writer = this.api.writer();
    // The relay's own defaults (window, batch size, batches in flight, waits, deadline), as a relay with no
    // RELAY_* settings runs; the control plane's reservation TTL as the bench's control planes have it.
    const config = inProcessRelayConfig(filterUrls[0] ?? '', undefined, {
      HAMI_SCHEDULER_NAME: BENCH_SCHEDULER,
      ...(settings ? { HAMI_RESERVATION_TTL_SECONDS: String(settings.reservationTtlMs / 1000) } : {}),
    });
    for (let r = 0; r < replicas; r++) {
      const ahead =
        settings === undefined
          ? undefined
          : new AheadDecisions(
              aheadOptionsFrom(config, {
                controlPlane: createControlPlaneClient(settings.aheadUrl, unsignedRequests),
                writer,
                claim: (target, annotations) => this.api.claim(target, annotations),
                logger: silentLogger,
                now: () => Date.now(),
                delay: realDelay,
                viewSeq,
              }),
            );
      if (ahead) this.api.informers.push(ahead);
      const deps = filterUrls.map(
        (filterUrl): ExtenderDeps => ({
          controlPlane: createControlPlaneClient(filterUrl, unsignedRequests),
          writer,
          logger: silentLogger,
          deadlineMs: config.extenderDeadlineMs,
          viewSeq,
          pods: this.api.source(BENCH_SCHEDULER),
          ...(ahead ? { ahead } : {}),
        }),
      );
      this.replicas.push({ deps, ahead });
    }
  }

  /** A pod created: every replica's informer sees it. */
  create(pod: BenchPod): void {
    this.api.create({ ...pod, spec: { ...pod.spec, schedulerName: BENCH_SCHEDULER } });
  }

  /** Kube-scheduler `scheduler`'s filter, answered by the relay's own code (the replicas in turn, whoever asks). */
  filter(pod: BenchPod, nodeNames: readonly string[], scheduler = 0): Promise<Record<string, unknown>> {
    const replica = this.replicas[this.next++ % this.replicas.length]!;
    const deps = replica.deps[scheduler];
    if (deps === undefined) throw new Error(`no filter control plane for scheduler ${scheduler}`);
    return relayFilter(JSON.stringify({ Pod: this.api.get(pod.metadata.namespace, pod.metadata.name), Nodes: null, NodeNames: nodeNames }), deps);
  }

  /** The pod's annotations as the API server holds them now (what a bind forwards with the pod). */
  annotations(pod: BenchPod): Record<string, string> {
    return { ...(this.api.get(pod.metadata.namespace, pod.metadata.name)?.metadata.annotations ?? {}) };
  }

  /** Bound: the pod leaves decide-ahead's sight, as a bound pod does. */
  bound(pod: BenchPod, node: string): void {
    this.api.bound(pod.metadata.namespace, pod.metadata.name, node);
  }

  /** Filters answered from a decision made ahead, over every replica. */
  answeredAhead(): number {
    return this.replicas.reduce((sum, r) => sum + (r.ahead?.stats().answeredAhead ?? 0), 0);
  }

  close(): void {
    for (const r of this.replicas) r.ahead?.close();
  }
}
