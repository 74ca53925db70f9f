/**
 * `GET /api/v1/nodes/{name}/devices` (docs/api.md §9 "Node devices"): what the scheduler holds about one
 * node. The schema is shared by the control plane (which builds the body) and hami-diag (which checks it).
 */
import { z } from 'zod';

export const nodeDeviceSchema = z.object({
  id: z.string(),
  index: z.number(),
  type: z.string(),
  count: z.number(),
  devmem: z.number(),
  devcore: z.number(),
  numa: z.number(),
  health: z.boolean(),
  used: z.number(),
  usedmem: z.number(),
  usedcores: z.number(),
  /** `namespace/name` of the pods booked on the card. */
  pods: z.array(z.string()),
  /** Those of `pods` whose bind failed (hami.io/bind-phase: failed): still booked until released, not running. Absent when none. */
  bindFailed: z.array(z.string()).optional(),
  /** `mig` for a card split into MIG instances (absent: HAMi-core sharing). */
  mode: z.string().optional(),
  /** Why a card is not healthy to the scheduler although its device plugin reports it healthy. */
  unhealthyReason: z.string().optional(),
  /**
   * What the card is booked past (lib/engine/capacity.ts): a pod adopted from its annotations claimed more than the
   * card has left. No new pod is placed on it until it is back within its capacity. Absent when within it.
   */
  overcommitted: z.array(z.enum(['slots', 'memory', 'cores'])).optional(),
  /** A MIG card: its profiles with how many placements are free now, and the instances in use, by pod. */
  mig: z
    .object({
      profiles: z.array(z.object({ name: z.string(), memoryMB: z.number(), core: z.number(), placements: z.number(), free: z.number() })),
      inUse: z.array(z.object({ start: z.number(), size: z.number(), pod: z.string() })),
    })
    .optional(),
  /** The device kind's vendor when not NVIDIA (`AWSNeuron`). */
  vendor: z.string().optional(),
  /** Devices whose cores are taken by index (AWS Neuron): cores booked and free, by index on the device. */
  coreIndexes: z.object({ used: z.array(z.number()), free: z.array(z.number()) }).optional(),
});

export const nodeDevicesSchema = z.object({
  name: z.string(),
  registered: z.boolean(),
  reason: z.string().optional(),
  allocatable: z.record(z.string(), z.union([z.string(), z.number()])),
  devices: z.array(nodeDeviceSchema),
  lock: z.object({ holder: z.string(), since: z.string() }).nullable(),
});

export type NodeDevices = z.infer<typeof nodeDevicesSchema>;
