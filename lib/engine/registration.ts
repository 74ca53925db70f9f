/**
 * Node registration (docs/hami-parity.md §2): the devices of every kind (./devices) the node has, merged, plus our
 * real-time report (docs/api.md §4 and §8). Never throws: a node with no device of any kind is unregistered, with the
 * reason in plain words.
 */
import { DEVICE_KINDS } from './devices';
import type { DeviceInfo, EngineConfig, NodeLike, NodeRegistration, PairScores, RealtimeDeviceUsage, RealtimeReport } from './types';

export { parseGoBool } from './messages';
export const HandshakeAnnotation = 'hami.io/node-handshake';

export function parseNodeRegistration(node: NodeLike, config: EngineConfig): NodeRegistration {
  const devices: DeviceInfo[] = [];
  const cordoned: string[] = [];
  let pairScores: PairScores = {};
  // Every kind's reason, joined: a kind that refuses what the node advertises (Neuron figures it cannot place) must
  // not be hidden behind one that found nothing (NVIDIA's missing annotation, docs/devices.md).
  const reasons: string[] = [];
  for (const kind of DEVICE_KINDS) {
    const found = kind.register(node, config);
    if (found === undefined) continue;
    if ('reason' in found) {
      reasons.push(found.reason);
      continue;
    }
    // Cards are booked by id: one id on two kinds would have the two share one booking.
    const taken = found.devices.find((device) => devices.some((other) => other.id === device.id));
    if (taken !== undefined) return { registered: false, reason: `device ${JSON.stringify(taken.id)} is registered by two device kinds` };
    devices.push(...found.devices);
    cordoned.push(...(found.cordoned ?? []));
    pairScores = { ...pairScores, ...found.pairScores };
  }
  if (devices.length === 0) return { registered: false, reason: reasons.length > 0 ? reasons.join('; ') : 'no device found on node' };
  return { registered: true, devices, cordoned, pairScores };
}

/**
 * `hami.io/node-nvidia-realtime` (docs/api.md §4): `{"time":"<RFC 3339>","devices":[{"id","usedMemMB",
 * "totalMemMB","utilization","processCount"}]}`. Anything invalid gives undefined: the engine then
 * falls back to the ledger, never rejects for lack of data.
 */
export function parseRealtimeReport(text: string | undefined): RealtimeReport | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const { time, devices } = parsed as { time?: unknown; devices?: unknown };
  if (typeof time !== 'string' || !RFC3339.test(time)) return undefined;
  const timeMs = Date.parse(time);
  if (!Number.isFinite(timeMs) || !Array.isArray(devices)) return undefined;
  const byId: Record<string, RealtimeDeviceUsage> = {};
  for (const device of devices) {
    if (device === null || typeof device !== 'object') return undefined;
    const { id, usedMemMB, totalMemMB, utilization, processCount } = device as Record<string, unknown>;
    if (typeof id !== 'string' || id === '' || !isMiB(usedMemMB) || !isMiB(totalMemMB)) return undefined;
    byId[id] = {
      usedMemMB,
      totalMemMB,
      ...(isMiB(utilization) ? { utilization } : {}),
      ...(isMiB(processCount) ? { processCount } : {}),
    };
  }
  return { timeMs, devices: byId };
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function isMiB(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
