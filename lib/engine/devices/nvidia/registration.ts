/**
 * NVIDIA cards as HAMi's scheduler reads them from the Node (docs/hami-parity.md §2): `hami.io/node-nvidia-register`
 * (JSON, or the legacy text of device plugins up to v2.7), pair scores and cordoned cards. Never throws: a node whose
 * annotations do not parse has no NVIDIA cards, with the reason in plain words.
 */
import { quantityAsInt64, INT32_MAX } from '../../quantity';
import { parseGoBool } from '../../messages';
import type { DeviceInfo, EngineConfig, MigProfile, NodeLike, PairScores } from '../../types';
import type { KindRegistration } from '../kind';
import { errorMessage } from '../../../errors';

/** A registration annotation that cannot be decoded; the message names the field at fault. */
export class RegistrationFormatError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RegistrationFormatError';
  }
}

export const RegisterAnnotation = 'hami.io/node-nvidia-register';
export const PairScoreAnnotation = 'hami.io/node-nvidia-score';
export const CordonAnnotation = 'hami.io/device-cordon';
/** The node's NVIDIA cards from HAMi's register annotation, or why it has none. */
export function registerNvidia(node: NodeLike, config: EngineConfig): KindRegistration {
  const annotations = node.metadata.annotations ?? {};
  const registerText = annotations[RegisterAnnotation];
  if (registerText === undefined) return unregistered(`annos not found ${RegisterAnnotation}`);
  let devices: DeviceInfo[];
  let pairScores: PairScores;
  try {
    devices = decodeNodeDevices(registerText);
    pairScores = decodePairScores(annotations[PairScoreAnnotation]);
  } catch (error) {
    return unregistered(errorMessage(error));
  }
  if (devices.length === 0) return unregistered('no gpu found on node');
  const inconsistency = registrationInconsistency(devices);
  if (inconsistency !== undefined) return unregistered(inconsistency);
  const allocatable = node.status?.allocatable?.[config.resourceCountName];
  if (allocatable !== undefined) {
    const count = quantityAsInt64(allocatable);
    if (count !== undefined && count <= 0) return unregistered(`allocatable ${config.resourceCountName} is ${count}`);
  }
  return { devices, cordoned: parseCordon(annotations[CordonAnnotation]), pairScores };
}

/**
 * A registration the ledger cannot book against safely: every card must have its own non-empty UUID (bookings
 * and the store's per-card counters are keyed by it; two cards with one UUID would be booked as one).
 */
function registrationInconsistency(devices: readonly DeviceInfo[]): string | undefined {
  const seen = new Set<string>();
  for (const [position, device] of devices.entries()) {
    if (device.id.trim() === '') return `${RegisterAnnotation} device ${position} has no id`;
    if (seen.has(device.id)) return `${RegisterAnnotation} lists device ${JSON.stringify(device.id)} more than once`;
    seen.add(device.id);
    // A MIG instance books its profile's memory and cores: a profile larger than its card would over-book it.
    const oversized = device.migProfiles?.find((p) => p.memoryMB > device.devmem || p.core > device.devcore);
    if (oversized !== undefined) {
      return `${RegisterAnnotation} device ${JSON.stringify(device.id)} offers MIG profile ${JSON.stringify(oversized.name)} (${oversized.memoryMB} MiB, ${oversized.core} cores) larger than the card (${device.devmem} MiB, ${device.devcore} cores)`;
    }
  }
  return undefined;
}

function unregistered(reason: string): KindRegistration {
  return { reason };
}

/** JSON (v2.8+) or the legacy text format (<= v2.7), sniffed on the first character (docs/hami-parity.md §2.3). */
export function decodeNodeDevices(text: string): DeviceInfo[] {
  return text.trimStart().startsWith('[') ? decodeJsonDevices(text) : decodeLegacyDevices(text);
}

/** `hami.io/device-cordon`: comma-separated UUIDs, trimmed, empty items skipped. */
export function parseCordon(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function decodeJsonDevices(text: string): DeviceInfo[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RegistrationFormatError(`${RegisterAnnotation} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (!Array.isArray(parsed)) throw new RegistrationFormatError(`${RegisterAnnotation} must be a JSON array of devices`);
  return parsed.map((item: unknown, position) => decodeJsonDevice(item, position));
}

function decodeJsonDevice(item: unknown, position: number): DeviceInfo {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    throw new RegistrationFormatError(`${RegisterAnnotation} device ${position} is not an object`);
  }
  // Go's encoding/json matches keys case-insensitively; so do we.
  const fields = new Map<string, unknown>();
  for (const [key, value] of Object.entries(item)) fields.set(key.toLowerCase(), value);
  const where = `${RegisterAnnotation} device ${position}`;
  return {
    id: jsonString(fields.get('id'), `${where} "id"`),
    index: jsonInteger(fields.get('index'), `${where} "index"`, 0, INT32_MAX),
    count: jsonInteger(fields.get('count'), `${where} "count"`, 0, INT32_MAX),
    devmem: jsonInteger(fields.get('devmem'), `${where} "devmem"`, 0, INT32_MAX),
    devcore: jsonInteger(fields.get('devcore'), `${where} "devcore"`, 0, INT32_MAX),
    type: jsonString(fields.get('type'), `${where} "type"`),
    numa: jsonInteger(fields.get('numa'), `${where} "numa"`, -INT32_MAX - 1, INT32_MAX),
    mode: jsonString(fields.get('mode'), `${where} "mode"`),
    health: jsonBoolean(fields.get('health'), `${where} "health"`),
    ...migProfilesOf(fields.get('migprofiles'), where),
  };
}

/** `migProfiles` of a MIG card (docs/devices.md, "NVIDIA MIG"); absent or empty: none. */
function migProfilesOf(value: unknown, where: string): { migProfiles?: MigProfile[] } {
  if (value === undefined || value === null) return {};
  if (!Array.isArray(value)) throw new RegistrationFormatError(`${where} "migProfiles" must be an array`);
  const profiles = value.map((item: unknown, i): MigProfile => {
    const at = `${where} "migProfiles" ${i}`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new RegistrationFormatError(`${at} is not an object`);
    const fields = new Map<string, unknown>(Object.entries(item).map(([k, v]) => [k.toLowerCase(), v]));
    const placements = fields.get('placements') ?? [];
    if (!Array.isArray(placements)) throw new RegistrationFormatError(`${at} "placements" must be an array`);
    return {
      name: jsonString(fields.get('name'), `${at} "name"`),
      memoryMB: jsonInteger(fields.get('memorymb'), `${at} "memoryMB"`, 0, INT32_MAX),
      core: jsonInteger(fields.get('core'), `${at} "core"`, 0, INT32_MAX),
      sliceCount: jsonInteger(fields.get('slicecount'), `${at} "sliceCount"`, 0, INT32_MAX),
      placements: placements.map((placement: unknown, k) => {
        if (placement === null || typeof placement !== 'object' || Array.isArray(placement)) throw new RegistrationFormatError(`${at} placement ${k} is not an object`);
        const p = new Map<string, unknown>(Object.entries(placement).map(([key, v]) => [key.toLowerCase(), v]));
        // A placement of no slices overlaps nothing (endless instances), and HAMi refuses such an allocation read back.
        if (p.get('size') === undefined || p.get('size') === null) throw new RegistrationFormatError(`${at} placement ${k} "size" is missing`);
        return { start: jsonInteger(p.get('start'), `${at} placement ${k} "start"`, 0, INT32_MAX), size: jsonInteger(p.get('size'), `${at} placement ${k} "size"`, 1, INT32_MAX) };
      }),
    };
  });
  return profiles.length > 0 ? { migProfiles: profiles } : {};
}

/** Absent and null decode to Go's zero value, as `omitempty` output requires. */
function jsonString(value: unknown, what: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new RegistrationFormatError(`${what} must be a string`);
  return value;
}

function jsonInteger(value: unknown, what: string, min: number, max: number): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new RegistrationFormatError(`${what} must be an integer`);
  if (value < min || value > max) throw new RegistrationFormatError(`${what} ${value} is out of range [${min}, ${max}]`);
  return value;
}

function jsonBoolean(value: unknown, what: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new RegistrationFormatError(`${what} must be true or false`);
  return value;
}

/** `id,count,devmem,devcore,type,numa,health[,index,mode]:` repeated (docs/hami-parity.md §2.3). */
function decodeLegacyDevices(text: string): DeviceInfo[] {
  if (!text.includes(':')) throw new RegistrationFormatError(`${RegisterAnnotation} is neither JSON nor the legacy "id,count,…:" format`);
  const devices: DeviceInfo[] = [];
  for (const segment of text.split(':')) {
    if (segment === '') continue;
    const fields = segment.split(',');
    if (fields.length !== 7 && fields.length !== 9) {
      throw new RegistrationFormatError(`${RegisterAnnotation} legacy device "${segment}" has ${fields.length} fields, expected 7 or 9`);
    }
    const [id = '', count = '', devmem = '', devcore = '', type = '', numa = '', health = '', index = '0', mode = 'hami-core'] = fields;
    const where = `${RegisterAnnotation} legacy device ${devices.length}`;
    devices.push({
      id,
      count: legacyInteger(count, `${where} count`, 0),
      devmem: legacyInteger(devmem, `${where} devmem`, 0),
      devcore: legacyInteger(devcore, `${where} devcore`, 0),
      type,
      numa: legacyInteger(numa, `${where} numa`, -INT32_MAX - 1),
      health: legacyBoolean(health, `${where} health`),
      index: legacyInteger(index, `${where} index`, 0),
      mode,
    });
  }
  return devices;
}

function legacyInteger(text: string, what: string, min: number): number {
  if (!/^[+-]?\d+$/.test(text)) throw new RegistrationFormatError(`${what} "${text}" is not an integer`);
  const value = Number(text);
  if (value < min || value > INT32_MAX) throw new RegistrationFormatError(`${what} ${text} is out of range [${min}, ${INT32_MAX}]`);
  return value;
}

function legacyBoolean(text: string, what: string): boolean {
  const value = parseGoBool(text);
  if (value === undefined) throw new RegistrationFormatError(`${what} "${text}" is not a boolean`);
  return value;
}

/** `[{"uuid":"GPU-0","score":{"GPU-1":50}}, …]` (docs/hami-parity.md §2.4); absent means no scores. */
export function decodePairScores(text: string | undefined): PairScores {
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RegistrationFormatError(`${PairScoreAnnotation} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (!Array.isArray(parsed)) throw new RegistrationFormatError(`${PairScoreAnnotation} must be a JSON array`);
  const scores: Record<string, Record<string, number>> = {};
  parsed.forEach((entry: unknown, position) => {
    if (entry === null || typeof entry !== 'object') throw new RegistrationFormatError(`${PairScoreAnnotation} entry ${position} is not an object`);
    const fields = new Map<string, unknown>(Object.entries(entry).map(([k, v]) => [k.toLowerCase(), v]));
    const uuid = jsonString(fields.get('uuid'), `${PairScoreAnnotation} entry ${position} "uuid"`);
    const pairs = fields.get('score');
    const row: Record<string, number> = {};
    if (pairs !== undefined && pairs !== null) {
      if (typeof pairs !== 'object' || Array.isArray(pairs)) throw new RegistrationFormatError(`${PairScoreAnnotation} entry ${position} "score" must be an object`);
      for (const [other, value] of Object.entries(pairs)) {
        row[other] = jsonInteger(value, `${PairScoreAnnotation} entry ${position} score for ${other}`, -INT32_MAX - 1, INT32_MAX);
      }
    }
    scores[uuid] = row;
  });
  return scores;
}
