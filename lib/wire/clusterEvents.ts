/**
 * The cluster-event route's wire (docs/api.md, "Cluster events"): the watch events and complete lists the relay
 * forwards to `POST /cluster/events`, and the answer it reads back. The control plane parses bodies with these
 * schemas (../control/clusterEvents.ts), the relay builds bodies and reads answers with them (../relay/forwarder.ts).
 */
import { z } from 'zod';
import { effectsSchema } from './effects';
import { kubeName, kubeNamespace } from './names';
import { nodeSchema, podSchema, quantityMap } from './objects';

/** The most watch events one batch may carry. */
export const MAX_EVENTS_PER_BATCH = 5000;
/** The most keys one complete list may carry. */
export const MAX_COMPLETE_KEYS = 200_000;
/** The most complete lists one batch may carry (one per kind). */
export const MAX_COMPLETE_LISTS = 3;

/** What a watch event's metadata carries beyond the engine's shape: ordering, identity, deletion. */
const eventMetadata = {
  uid: z.string().min(1).max(128).optional(),
  resourceVersion: z.string().max(64).optional(),
  deletionTimestamp: z.string().nullish(),
};

/** The engine's Node (./objects.ts) as a watch event carries it. */
export const nodeObjectSchema = nodeSchema.extend({
  kind: z.literal('Node'),
  apiVersion: z.literal('v1'),
  metadata: nodeSchema.shape.metadata.extend(eventMetadata),
});

/** The engine's Pod (./objects.ts) as a watch event carries it, with the status that ends or confirms bookings. */
export const podObjectSchema = podSchema.extend({
  kind: z.literal('Pod'),
  apiVersion: z.literal('v1'),
  // A relist may report a pod that vanished unseen with its name only: DELETED may omit the uid.
  metadata: podSchema.shape.metadata.extend({ namespace: kubeNamespace, ...eventMetadata }),
  status: z
    .object({
      phase: z.string().optional(),
      initContainerStatuses: z.array(z.object({ state: z.object({ terminated: z.object({ exitCode: z.number() }).nullish() }).nullish() })).nullish(),
    })
    .optional(),
});

export const quotaObjectSchema = z.object({
  kind: z.literal('ResourceQuota'),
  apiVersion: z.literal('v1'),
  metadata: z.object({ name: kubeName, namespace: kubeNamespace, ...eventMetadata }),
  spec: z.object({ hard: quantityMap.optional() }).optional(),
});

export const watchEventSchema = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED']),
  object: z.discriminatedUnion('kind', [nodeObjectSchema, podObjectSchema, quotaObjectSchema]),
});
export type WatchEvent = z.infer<typeof watchEventSchema>;
export type PodObject = z.infer<typeof podObjectSchema>;
export type NodeObject = z.infer<typeof nodeObjectSchema>;
export type QuotaObject = z.infer<typeof quotaObjectSchema>;

/**
 * A complete re-list of one kind (docs/api.md, "Cluster events"): every live object the relay's informer holds,
 * as of `resourceVersion`. What the ledger holds of that kind and is not in it was deleted while nobody watched.
 * Pods are named by uid, Nodes by name, ResourceQuotas as `namespace/name`.
 */
export const completeListSchema = z.object({
  kind: z.enum(['Pod', 'Node', 'ResourceQuota']),
  resourceVersion: z.string().regex(/^\d+$/, 'must be the list\'s resourceVersion (an integer)'),
  keys: z.array(z.string().min(1).max(300)).max(MAX_COMPLETE_KEYS),
});
export type CompleteList = z.infer<typeof completeListSchema>;

export const clusterEventsBodySchema = z.object({
  /** Each event is parsed on its own (watchEventSchema): one bad object is rejected, the rest are applied. */
  events: z.array(z.unknown()).max(MAX_EVENTS_PER_BATCH),
  complete: z.array(completeListSchema).max(MAX_COMPLETE_LISTS).optional(),
  /** The relay sends this batch again after an answer it could not use (a 503, a timeout): see `IngestOptions`. */
  resend: z.boolean().optional(),
});

export type ClusterEventsBody = z.infer<typeof clusterEventsBodySchema>;

/** The answer: how many events were applied, which were rejected and why, the journal entry, and Effects. */
export const clusterEventsAnswerSchema = z.object({
  accepted: z.number().int().nonnegative(),
  rejected: z.array(z.object({ index: z.number().int(), error: z.string() })),
  /** The journal entry this batch produced: a filter's view must include it (sent back as `X-Hami-Min-View-Seq`). */
  viewSeq: z.number().int().nonnegative().optional(),
  /** Kubernetes writes the relay applies (Warning events, nudges). */
  Effects: effectsSchema.optional(),
});
export type ClusterEventsAnswerBody = z.infer<typeof clusterEventsAnswerSchema>;
