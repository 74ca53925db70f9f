/**
 * The one Pod shape and the one Node shape the engine reads (its `PodLike` and `NodeLike`), as every boundary parses
 * them: the extender's arguments (../http/routes.ts), the cluster events (./clusterEvents.ts) and the admission
 * webhook (../admission/review.ts). Each boundary adds only its own identity rules (a uid required or not, a name
 * or a generateName) and the fields it reads beyond the engine's. Unknown fields are dropped: what is parsed is
 * what the engine reads, so no boundary casts.
 */
import { z } from 'zod';
import { kubeName, kubeNamespace, kubePodName, kubeUid } from './names';

/**
 * A field Go leaves out when unset (`omitempty`) but a hand-written client may send as null: both read as absent,
 * so the parsed value is assignable to the engine's optional fields.
 */
export function absentIfNull<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => value ?? undefined, schema.optional());
}

export const stringMap = z.record(z.string(), z.string());
/** Kubernetes quantities as they arrive in JSON: strings, or numbers from hand-written objects. */
export const quantityMap = z.record(z.string(), z.union([z.string(), z.number()]));

/** A container as the engine reads it (`ContainerLike`): its name and its resources' limits and requests. */
export const containerSchema = z.object({
  name: z.string(),
  resources: absentIfNull(z.object({ limits: absentIfNull(quantityMap), requests: absentIfNull(quantityMap) })),
});

export const podMetadataSchema = z.object({
  name: kubePodName,
  namespace: absentIfNull(kubeNamespace),
  uid: absentIfNull(kubeUid),
  annotations: absentIfNull(stringMap),
  labels: absentIfNull(stringMap),
});

/** Init containers first, then app containers (docs/hami-parity.md §1.3). */
export const podSpecSchema = z.object({
  initContainers: absentIfNull(z.array(containerSchema)),
  containers: absentIfNull(z.array(containerSchema)),
  // GPU-aware preemption reads these (docs/preemption.md).
  priority: absentIfNull(z.number().int()),
  preemptionPolicy: absentIfNull(z.string()),
});

/** The Pod the engine reads (`PodLike`). */
export const podSchema = z.object({ metadata: podMetadataSchema, spec: absentIfNull(podSpecSchema) });
export type WirePod = z.output<typeof podSchema>;

export const nodeMetadataSchema = z.object({ name: kubeName, annotations: absentIfNull(stringMap), labels: absentIfNull(stringMap) });

/** The Node the engine reads (`NodeLike`); capacity and labels: AWS Neuron devices are registered from them (docs/devices.md). */
export const nodeSchema = z.object({
  metadata: nodeMetadataSchema,
  status: absentIfNull(z.object({ allocatable: absentIfNull(quantityMap), capacity: absentIfNull(quantityMap) })),
});
export type WireNode = z.output<typeof nodeSchema>;
