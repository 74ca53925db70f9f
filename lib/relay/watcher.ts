/**
 * Watches Nodes, Pods and ResourceQuotas through client-node's ListWatch informers and forwards what
 * matters to the control plane. ListWatch relists by itself after 410 Gone; after any other error it
 * stops, so it is restarted here with exponential backoff. A periodic re-list replays the informers'
 * caches (no extra load on the API server) so the ledger converges even after events the control plane lost.
 * After every list that completed, and every re-list, a complete list follows the events: the control plane
 * drops what it holds of that kind and the list lacks (objects deleted while no relay watched; docs/state.md,
 * "Re-lists converge"). A list that failed sends none.
 */
import { ListWatch, Watch, type CoreV1Api, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { AppLogger } from '../powertools';
import { backoffMs, realDelay, type DelayFn } from './delay';
import type { ClusterEventForwarder, ClusterWatchEvent } from './forwarder';
import { MAX_COMPLETE_KEYS, type CompleteList } from '../wire/clusterEvents';
import { ChangeTracker, completeKeys, objectKey, toForwardedObject, type ForwardedKind } from './relevance';
import { errorMessage } from '../errors';

export interface WatcherOptions {
  readonly kubeConfig: KubeConfig;
  readonly core: CoreV1Api;
  readonly forwarder: Pick<ClusterEventForwarder, 'enqueue' | 'enqueueComplete' | 'refusals'>;
  readonly logger: AppLogger;
  readonly managedResources: readonly string[];
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  /** Server-side watch timeout: the API server closes the stream and the informer re-watches (guards half-open connections). */
  readonly watchTimeoutSeconds: number;
  readonly resyncIntervalMs: number;
  readonly delay?: DelayFn;
  /** Called after each list of `kind` completed and its events were queued (the nudger waits for the Pods'). */
  readonly onListed?: (kind: ForwardedKind) => void;
  /** Every Pod event of the informer, relevant to the control plane or not (decide-ahead watches pending pods). */
  readonly onPod?: (type: ClusterWatchEvent['type'], obj: unknown) => void;
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
        const mark = this.opts.forwarder.refusals();
        const list = await r.list();
        r.listed = true;
        r.failures = 0;
        const complete = this.completeList(r, list.items, list.metadata?.resourceVersion);
        // ListWatch turns the items into add/update/delete callbacks synchronously once this promise resolves, in
        // the microtask that resumes it; an immediate runs after that, so the list queues behind all its events.
        setImmediate(() => {
          if (this.stopping.signal.aborted) return;
          if (complete !== undefined) this.opts.forwarder.enqueueComplete(complete, mark);
          this.opts.onListed?.(r.kind);
        });
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

  /** One object from the informer of `kind`, or undefined (not listed yet, or not there). */
  cachedObject(kind: ForwardedKind, namespace: string | undefined, name: string): KubernetesObject | undefined {
    const r = this.resources.find((x) => x.kind === kind);
    return r?.listed === true ? r.informer?.get(name, namespace) : undefined;
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
      const mark = this.opts.forwarder.refusals();
      // The cache is exactly what the list and the watch events since have shown, as of this resourceVersion
      // (empty while the informer lists afresh after 410: then no complete list goes).
      const resourceVersion = r.informer.latestResourceVersion();
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
      const complete = this.completeList(r, items, resourceVersion);
      if (complete !== undefined) this.opts.forwarder.enqueueComplete(complete, mark);
      this.opts.logger.info('Relisted', { kind: r.kind, objects: items.length });
    }
  }

  /** The complete list of `items` as of `resourceVersion`, or undefined when it cannot be said (no usable version, too many keys). */
  private completeList(r: Resource, items: readonly unknown[], resourceVersion: string | undefined): CompleteList | undefined {
    if (resourceVersion === undefined || !/^\d+$/.test(resourceVersion)) {
      this.opts.logger.warn('CompleteListSkipped', { kind: r.kind, reason: 'the list carries no resourceVersion' });
      return undefined;
    }
    const keys = completeKeys(r.kind, items, r.tracker, this.opts.managedResources);
    if (keys.length > MAX_COMPLETE_KEYS) {
      this.opts.logger.warn('CompleteListSkipped', { kind: r.kind, reason: `more than ${MAX_COMPLETE_KEYS} objects`, objects: keys.length });
      return undefined;
    }
    return { kind: r.kind, resourceVersion, keys };
  }

  private observe(r: Resource, type: ClusterWatchEvent['type'], obj: unknown, force = false): void {
    if (r.kind === 'Pod' && !force) this.opts.onPod?.(type, obj);
    if (r.tracker.decide(type, obj, force) === 'skip') return;
    this.opts.forwarder.enqueue({ type, object: toForwardedObject(r.kind, obj) });
  }

  private async restartAfterError(r: Resource, err: unknown): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const wait = backoffMs(r.failures, this.opts.backoff.initialMs, this.opts.backoff.maxMs);
    r.failures++;
    this.opts.logger.warn('WatchFailed', { kind: r.kind, retryInMs: wait, error: errorMessage(err) });
    await this.delay(wait, this.stopping.signal);
    if (!this.stopping.signal.aborted) void r.informer?.start();
  }
}
