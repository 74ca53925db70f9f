/**
 * Watches Nodes, Pods and ResourceQuotas through client-node's ListWatch informers and forwards what
 * matters to the control plane. ListWatch relists by itself after 410 Gone; after any other error it
 * stops, so it is restarted here with exponential backoff. A periodic re-list replays the informers'
 * caches (no extra load on the API server) so the ledger converges even after events the control plane lost.
 */
import { ListWatch, Watch, type CoreV1Api, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { AppLogger } from '../powertools';
import { backoffMs, realDelay, type DelayFn } from './delay';
import type { ClusterEventForwarder, ClusterWatchEvent } from './forwarder';
import { ChangeTracker, objectKey, toForwardedObject, type ForwardedKind } from './relevance';

export interface WatcherOptions {
  readonly kubeConfig: KubeConfig;
  readonly core: CoreV1Api;
  readonly forwarder: Pick<ClusterEventForwarder, 'enqueue'>;
  readonly logger: AppLogger;
  readonly managedResources: readonly string[];
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  /** Server-side watch timeout: the API server closes the stream and the informer re-watches (guards half-open connections). */
  readonly watchTimeoutSeconds: number;
  readonly resyncIntervalMs: number;
  readonly delay?: DelayFn;
}

interface Resource {
  readonly kind: ForwardedKind;
  readonly path: string;
  readonly list: () => Promise<KubernetesListObject<KubernetesObject>>;
  readonly tracker: ChangeTracker;
  informer?: ListWatch<KubernetesObject>;
  listed: boolean;
  failures: number;
}

export interface WatcherStatus {
  readonly synced: boolean;
  readonly resources: readonly { readonly kind: ForwardedKind; readonly listed: boolean; readonly failures: number }[];
}

/** Requests bookmarks (ListWatch does not) so the resource version stays fresh and 410s stay rare. */
function bookmarkingWatch(kc: KubeConfig, timeoutSeconds: number): Watch {
  const inner = new Watch(kc);
  const wrapper = Object.create(inner) as Watch;
  wrapper.watch = (path, queryParams, callback, done) =>
    inner.watch(path, { ...queryParams, allowWatchBookmarks: true, timeoutSeconds }, callback, done);
  return wrapper;
}

export class ClusterWatcher {
  private readonly resources: Resource[];
  private readonly delay: DelayFn;
  private readonly stopping = new AbortController();
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: WatcherOptions) {
    this.delay = opts.delay ?? realDelay;
    const core = opts.core;
    const make = (kind: ForwardedKind, path: string, list: Resource['list']): Resource => ({
      kind,
      path,
      list,
      tracker: new ChangeTracker(kind, opts.managedResources),
      listed: false,
      failures: 0,
    });
    this.resources = [
      make('Node', '/api/v1/nodes', () => core.listNode()),
      make('Pod', '/api/v1/pods', () => core.listPodForAllNamespaces()),
      make('ResourceQuota', '/api/v1/resourcequotas', () => core.listResourceQuotaForAllNamespaces()),
    ];
  }

  /** Starts all informers (each lists, forwards everything relevant as ADDED, then watches). */
  start(): void {
    const watch = bookmarkingWatch(this.opts.kubeConfig, this.opts.watchTimeoutSeconds);
    for (const r of this.resources) {
      const listFn = async (): Promise<KubernetesListObject<KubernetesObject>> => {
        const list = await r.list();
        r.listed = true;
        r.failures = 0;
        return list;
      };
      const informer = new ListWatch<KubernetesObject>(r.path, watch, listFn, false);
      informer.on('add', (obj) => this.observe(r, 'ADDED', obj));
      informer.on('update', (obj) => this.observe(r, 'MODIFIED', obj));
      informer.on('delete', (obj) => this.observe(r, 'DELETED', obj));
      informer.on('error', (err) => void this.restartAfterError(r, err));
      r.informer = informer;
      void informer.start();
    }
    if (this.opts.resyncIntervalMs > 0) {
      this.resyncTimer = setInterval(() => void this.relist(), this.opts.resyncIntervalMs);
      this.resyncTimer.unref();
    }
  }

  stop(): void {
    this.stopping.abort();
    if (this.resyncTimer !== undefined) clearInterval(this.resyncTimer);
    for (const r of this.resources) void r.informer?.stop();
  }

  /** What the informer of `kind` holds now, or undefined before it has listed (for the admission webhook's card view). */
  cached(kind: ForwardedKind): readonly KubernetesObject[] | undefined {
    const r = this.resources.find((x) => x.kind === kind);
    return r?.listed === true && r.informer !== undefined ? r.informer.list() : undefined;
  }

  status(): WatcherStatus {
    return {
      synced: this.resources.every((r) => r.listed),
      resources: this.resources.map((r) => ({ kind: r.kind, listed: r.listed, failures: r.failures })),
    };
  }

  /**
   * Replays every informer's cache (what the list and the watch since have shown; no request to the API
   * server): each relevant object is re-sent as MODIFIED, plus DELETED for objects forwarded earlier that
   * the cache no longer holds. A resource whose informer has not listed yet is skipped until next time.
   */
  async relist(): Promise<void> {
    for (const r of this.resources) {
      if (!r.listed || r.informer === undefined) {
        this.opts.logger.info('RelistSkipped', { kind: r.kind, reason: 'informer has not listed yet' });
        continue;
      }
      const items = r.informer.list();
      const present = new Set<string>();
      for (const obj of items) {
        present.add(objectKey(obj));
        this.observe(r, 'MODIFIED', obj, true);
      }
      for (const key of r.tracker.trackedKeys()) {
        if (present.has(key)) continue;
        const [namespace, name] = key.split('/') as [string, string];
        this.observe(r, 'DELETED', { metadata: { name, ...(namespace !== '' ? { namespace } : {}) } });
      }
      this.opts.logger.info('Relisted', { kind: r.kind, objects: items.length });
    }
  }

  private observe(r: Resource, type: ClusterWatchEvent['type'], obj: unknown, force = false): void {
    if (r.tracker.decide(type, obj, force) === 'skip') return;
    this.opts.forwarder.enqueue({ type, object: toForwardedObject(r.kind, obj) });
  }

  private async restartAfterError(r: Resource, err: unknown): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const wait = backoffMs(r.failures, this.opts.backoff.initialMs, this.opts.backoff.maxMs);
    r.failures++;
    this.opts.logger.warn('WatchFailed', { kind: r.kind, retryInMs: wait, error: err instanceof Error ? err.message : String(err) });
    await this.delay(wait, this.stopping.signal);
    if (!this.stopping.signal.aborted) void r.informer?.start();
  }
}
