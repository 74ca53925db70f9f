/**
 * client-go's event correlation (tools/record/events_cache.go), without I/O: identical events within
 * the cache become a PATCH of the first one's count/lastTimestamp; 10 or more distinct messages for the
 * same object/reason within 10 minutes collapse into one "(combined from similar events)" event.
 */

export interface EventInput {
  /** The involved object's kind (default `Pod`). A Node is cluster-scoped: `namespace` is then ignored. */
  readonly kind?: 'Pod' | 'Node';
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

export interface CoreV1EventBody {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  involvedObject: { apiVersion: 'v1'; kind: 'Pod' | 'Node'; namespace?: string; name: string; uid: string };
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  source: { component: string };
  reportingComponent: string;
  reportingInstance: string;
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
}

export type Correlation =
  | { readonly action: 'create'; readonly event: CoreV1EventBody; readonly cacheKey: string }
  | {
      readonly action: 'patch';
      readonly namespace: string;
      readonly name: string;
      readonly patch: { count: number; lastTimestamp: string; message: string };
      readonly cacheKey: string;
    };

export const AGGREGATE_MAX_EVENTS = 10;
export const AGGREGATE_INTERVAL_MS = 600_000;
export const MAX_CACHE_ENTRIES = 4096;
const COMBINED_PREFIX = '(combined from similar events): ';

/** metav1.Time: RFC 3339 with whole seconds, as the API server writes it. */
export function toKubeTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

interface Observed {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
}

interface AggregateRecord {
  messages: Set<string>;
  lastMs: number;
}

/** A small LRU on Map insertion order. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, v: V): void {
    this.map.delete(key);
    this.map.set(key, v);
    if (this.map.size > this.max) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }
  delete(key: string): void {
    this.map.delete(key);
  }
}

export class EventCorrelator {
  private readonly observed = new Lru<Observed>(MAX_CACHE_ENTRIES);
  private readonly aggregates = new Lru<AggregateRecord>(MAX_CACHE_ENTRIES);
  private sequence = 0;

  constructor(
    private readonly component: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Decides whether `input` is a new Event or a count bump of an earlier one. */
  correlate(input: EventInput): Correlation {
    const now = this.now();
    const kind = input.kind ?? 'Pod';
    // client-go records a cluster-scoped object's events in `default`, with no namespace on the object itself.
    const objectNamespace = kind === 'Node' ? '' : input.namespace;
    const objectKey = [this.component, '', kind, objectNamespace, input.name, input.uid, 'v1', input.type, input.reason].join('\u0000');
    let message = input.message;
    let cacheKey = `${objectKey}\u0000${input.message}`;

    const agg = this.aggregates.get(objectKey);
    const fresh = agg !== undefined && now.getTime() - agg.lastMs <= AGGREGATE_INTERVAL_MS;
    const record: AggregateRecord = fresh ? agg : { messages: new Set(), lastMs: now.getTime() };
    record.messages.add(input.message);
    record.lastMs = now.getTime();
    this.aggregates.set(objectKey, record);
    if (record.messages.size >= AGGREGATE_MAX_EVENTS) {
      message = COMBINED_PREFIX + input.message;
      cacheKey = objectKey;
    }

    const timestamp = toKubeTime(now);
    const seen = this.observed.get(cacheKey);
    if (seen !== undefined) {
      seen.count += 1;
      return {
        action: 'patch',
        namespace: seen.namespace,
        name: seen.name,
        patch: { count: seen.count, lastTimestamp: timestamp, message },
        cacheKey,
      };
    }
    const namespace = objectNamespace || 'default';
    const name = `${input.name}.${this.uniqueSuffix(now)}`;
    this.observed.set(cacheKey, { name, namespace, count: 1, firstTimestamp: timestamp });
    return {
      action: 'create',
      cacheKey,
      event: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: kind === 'Node' ? { apiVersion: 'v1', kind, name: input.name, uid: input.uid } : { apiVersion: 'v1', kind, namespace, name: input.name, uid: input.uid },
        reason: input.reason,
        message,
        type: input.type,
        source: { component: this.component },
        reportingComponent: this.component,
        reportingInstance: '',
        firstTimestamp: timestamp,
        lastTimestamp: timestamp,
        count: 1,
      },
    };
  }

  /** The event named in the cache is gone (PATCH answered 404): the next occurrence creates a fresh one. */
  forget(cacheKey: string): void {
    this.observed.delete(cacheKey);
  }

  /** client-go names events `<object>.<hex unix nanoseconds>`; a sequence keeps names unique within a millisecond. */
  private uniqueSuffix(now: Date): string {
    this.sequence = (this.sequence + 1) % 1_000_000;
    return (BigInt(now.getTime()) * 1_000_000n + BigInt(this.sequence)).toString(16);
  }
}
