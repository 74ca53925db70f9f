/**
 * Pure parsers for `nvidia-smi` query output and the builder of the `hami.io/node-nvidia-realtime`
 * annotation value (docs/api.md §4). No I/O here: the node agent runs the commands and feeds the text in.
 *
 * Queries (fields in this exact order; `nounits` prints MiB and percent as bare integers):
 * - cards:     nvidia-smi --query-gpu=uuid,index,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits
 * - processes: nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits
 *
 * nvidia-smi prints a bracketed marker instead of a value it cannot read (`[N/A]`, `[Not Supported]`,
 * `[Unknown Error]`, `[GPU requires reset]`, ...). A card whose identity or memory figures carry such a
 * marker is left out of the report with a per-card error: the control plane then falls back to its
 * ledger for that card, which is safer than comparing against a wrong number. Utilization is only
 * informational, so a card that cannot report it (MIG mode answers `[N/A]`) keeps its memory figures
 * and simply has no `utilization` field.
 */

export const GPU_QUERY_FIELDS = ['uuid', 'index', 'memory.used', 'memory.total', 'utilization.gpu'] as const;
export const COMPUTE_APPS_QUERY_FIELDS = ['gpu_uuid', 'pid', 'used_memory'] as const;

const CSV_FORMAT = '--format=csv,noheader,nounits';
export const GPU_QUERY_ARGS: readonly string[] = [`--query-gpu=${GPU_QUERY_FIELDS.join(',')}`, CSV_FORMAT];
export const COMPUTE_APPS_QUERY_ARGS: readonly string[] = [
  `--query-compute-apps=${COMPUTE_APPS_QUERY_FIELDS.join(',')}`,
  CSV_FORMAT,
];

/** One device entry of the annotation, exactly docs/api.md §4's shape. */
export interface RealtimeAnnotationDevice {
  readonly id: string;
  readonly usedMemMB: number;
  readonly totalMemMB: number;
  /** Absent when the card cannot report it (e.g. MIG mode). */
  readonly utilization?: number;
  /** Absent when the compute-process query failed or is turned off. */
  readonly processCount?: number;
}

/** The annotation value: `{"time":"<RFC 3339>","devices":[...]}`. */
export interface RealtimeAnnotation {
  readonly time: string;
  readonly devices: readonly RealtimeAnnotationDevice[];
}

/** A card read cleanly from `--query-gpu`. */
export interface GpuReading {
  readonly uuid: string;
  readonly index: number;
  readonly usedMemMB: number;
  readonly totalMemMB: number;
  readonly utilization?: number;
}

/** Why one card was left out of the report. */
export interface CardReadError {
  /** 1-based line of the nvidia-smi output. */
  readonly line: number;
  readonly uuid: string;
  /** The card's index when it could be read. */
  readonly index?: number;
  /** The query field at fault. */
  readonly field: string;
  /** What nvidia-smi printed there. */
  readonly value: string;
  readonly message: string;
}

export interface GpuQueryResult {
  readonly cards: readonly GpuReading[];
  readonly errors: readonly CardReadError[];
}

/** One row of `--query-compute-apps`. */
export interface ComputeApp {
  readonly gpuUuid: string;
  /** Absent when nvidia-smi cannot tell (the process still counts). */
  readonly pid?: number;
  readonly usedMemMB?: number;
}

/**
 * The output does not have the shape of the query we ran (wrong column count, a first column that is not
 * a GPU UUID, a repeated card): the column mapping cannot be trusted, so the whole reading is refused.
 */
export class NvidiaSmiOutputError extends Error {
  override readonly name = 'NvidiaSmiOutputError';
  constructor(
    message: string,
    /** 1-based line of the output at fault. */
    readonly line: number,
  ) {
    super(message);
  }
}

// `GPU-<uuid>` for whole cards, `MIG-...` for MIG instances; both are what the device plugin registers.
const DEVICE_UUID = /^(GPU|MIG)-[0-9A-Za-z/-]+$/;
const UNSIGNED_INTEGER = /^\d+$/;
// Markers that mean "this card cannot report this field" rather than "something is wrong".
const NOT_AVAILABLE_MARKERS = new Set(['[N/A]', '[Not Supported]']);

/** Splits output into trimmed CSV cells per non-blank line, keeping 1-based line numbers. */
function rows(stdout: string): { line: number; cells: string[] }[] {
  const out: { line: number; cells: string[] }[] = [];
  stdout.split(/\r?\n|\r/).forEach((text, i) => {
    if (text.trim() === '') return;
    out.push({ line: i + 1, cells: text.split(',').map((c) => c.trim()) });
  });
  return out;
}

type CellValue = { ok: true; value: number } | { ok: false; message: string };

function readCount(raw: string): CellValue {
  if (UNSIGNED_INTEGER.test(raw)) return { ok: true, value: Number(raw) };
  if (raw.startsWith('[') && raw.endsWith(']')) return { ok: false, message: `nvidia-smi reported ${raw}` };
  return { ok: false, message: 'not a non-negative integer' };
}

/** Parses `--query-gpu=uuid,index,memory.used,memory.total,utilization.gpu` (csv, noheader, nounits). */
export function parseGpuQuery(stdout: string): GpuQueryResult {
  const cards: GpuReading[] = [];
  const errors: CardReadError[] = [];
  const seen = new Set<string>();
  for (const { line, cells } of rows(stdout)) {
    if (cells.length !== GPU_QUERY_FIELDS.length) {
      throw new NvidiaSmiOutputError(
        `expected ${GPU_QUERY_FIELDS.length} columns (${GPU_QUERY_FIELDS.join(',')}), got ${cells.length}`,
        line,
      );
    }
    const [uuid, indexRaw, usedRaw, totalRaw, utilRaw] = cells as [string, string, string, string, string];
    if (!DEVICE_UUID.test(uuid)) throw new NvidiaSmiOutputError(`first column is not a GPU UUID: "${uuid}"`, line);
    if (seen.has(uuid)) throw new NvidiaSmiOutputError(`GPU ${uuid} listed twice`, line);
    seen.add(uuid);

    const index = readCount(indexRaw);
    const cardIndex = index.ok ? { index: index.value } : {};
    const fail = (field: string, value: string, message: string): void => {
      errors.push({ line, uuid, ...cardIndex, field, value, message });
    };
    if (!index.ok) {
      fail('index', indexRaw, index.message);
      continue;
    }
    const used = readCount(usedRaw);
    if (!used.ok) {
      fail('memory.used', usedRaw, used.message);
      continue;
    }
    const total = readCount(totalRaw);
    if (!total.ok) {
      fail('memory.total', totalRaw, total.message);
      continue;
    }
    if (total.value === 0) {
      fail('memory.total', totalRaw, 'total memory is zero');
      continue;
    }
    if (used.value > total.value) {
      fail('memory.used', usedRaw, `used memory exceeds total memory (${totalRaw} MiB)`);
      continue;
    }
    let utilization: number | undefined;
    if (!NOT_AVAILABLE_MARKERS.has(utilRaw)) {
      const util = readCount(utilRaw);
      if (!util.ok || util.value > 100) {
        fail('utilization.gpu', utilRaw, util.ok ? 'utilization above 100 percent' : util.message);
        continue;
      }
      utilization = util.value;
    }
    cards.push({
      uuid,
      index: index.value,
      usedMemMB: used.value,
      totalMemMB: total.value,
      ...(utilization === undefined ? {} : { utilization }),
    });
  }
  return { cards, errors };
}

/** Parses `--query-compute-apps=gpu_uuid,pid,used_memory` (csv, noheader, nounits). Empty output: no processes. */
export function parseComputeApps(stdout: string): ComputeApp[] {
  const apps: ComputeApp[] = [];
  for (const { line, cells } of rows(stdout)) {
    if (cells.length !== COMPUTE_APPS_QUERY_FIELDS.length) {
      throw new NvidiaSmiOutputError(
        `expected ${COMPUTE_APPS_QUERY_FIELDS.length} columns (${COMPUTE_APPS_QUERY_FIELDS.join(',')}), got ${cells.length}`,
        line,
      );
    }
    const [gpuUuid, pidRaw, memRaw] = cells as [string, string, string];
    if (!DEVICE_UUID.test(gpuUuid)) throw new NvidiaSmiOutputError(`first column is not a GPU UUID: "${gpuUuid}"`, line);
    const pid = readCount(pidRaw);
    const mem = readCount(memRaw);
    // A row is a process on the card even when its pid or memory is unreadable (containers often hide them).
    apps.push({ gpuUuid, ...(pid.ok ? { pid: pid.value } : {}), ...(mem.ok ? { usedMemMB: mem.value } : {}) });
  }
  return apps;
}

/**
 * Builds the annotation value from a card reading and, when available, the compute processes.
 * Cards keep nvidia-smi's order; `processCount` is set on every card when `apps` is given (0 for idle cards).
 */
export function buildRealtimeAnnotation(
  cards: readonly GpuReading[],
  apps: readonly ComputeApp[] | undefined,
  nowMs: number,
): RealtimeAnnotation {
  const processCounts = new Map<string, number>();
  for (const app of apps ?? []) processCounts.set(app.gpuUuid, (processCounts.get(app.gpuUuid) ?? 0) + 1);
  return {
    time: new Date(nowMs).toISOString(),
    devices: cards.map((card) => ({
      id: card.uuid,
      usedMemMB: card.usedMemMB,
      totalMemMB: card.totalMemMB,
      ...(card.utilization === undefined ? {} : { utilization: card.utilization }),
      ...(apps === undefined ? {} : { processCount: processCounts.get(card.uuid) ?? 0 }),
    })),
  };
}

/** The annotation's string value (key order as in docs/api.md §4). */
export function serializeRealtimeAnnotation(annotation: RealtimeAnnotation): string {
  return JSON.stringify({ time: annotation.time, devices: annotation.devices });
}
