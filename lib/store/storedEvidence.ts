/**
 * Packed evidence as records hold it, in every version this code ever wrote (docs/state.md, "Layout"), read back into
 * the expanded form the engine rebuilds a trace from (`ExpandedEvidence`, lib/engine/evidence.ts). The engine packs
 * only the current version (`PackedEvidence`, 5); the older ones are the store's to read:
 *   2: no runs, card ids in the rows;  3: runs, card ids card by card;  4: a check of the ids per node instead of the
 *   ids;  5: the registration version per node, ids found again from the registration now (`RegisteredCards`).
 */
import { DecisionTrace, type ExpandedEvidence, type PackedEvidence, type Runs } from '../engine/evidence';
import type { RegisteredCards } from '../control/ports';

/** The packed form records written before runs were used still have (read, never written). */
type PackedEvidenceV2 = ExpandedEvidence & { readonly v: 2 };

/** Any packed evidence a stored record may hold. */
export type StoredEvidence = PackedEvidence | PackedEvidenceV4 | PackedEvidenceV3 | PackedEvidenceV2;

/**
 * The trace a stored evidence was made from, able to build the same evidence objects; card ids of versions 4 and 5
 * come from `registered` where the nodes still have the cards recorded (empty otherwise, and without it).
 */
export function unpackStoredEvidence(stored: StoredEvidence, registered?: RegisteredCards): DecisionTrace {
  if (stored.v !== 2 && stored.v !== 3 && stored.v !== 4 && stored.v !== 5) throw new Error(`packed evidence of unknown version ${String((stored as { v?: unknown }).v)}`);
  return DecisionTrace.unpack(stored.v === 5 || stored.v === 4 ? expanded(withCardIds(stored, registered)) : stored.v === 3 ? expanded(stored) : stored);
}

type PackedNodesV4 = Omit<PackedEvidence['nodes'], 'registrationVersion'>;

/** The packed form of records written before card ids were left out: the ids, card by card (read, never written). */
type PackedEvidenceV3 = Omit<PackedEvidence, 'v' | 'nodes'> & {
  readonly v: 3;
  readonly nodes: PackedNodesV4;
  readonly devices: PackedEvidence['devices'] & { readonly id: readonly string[] };
};

/** Records written while ids were checked by hash: per node, `cardIdsCheck` of the ids it refers to (read, never written). */
type PackedEvidenceV4 = Omit<PackedEvidence, 'v' | 'nodes'> & {
  readonly v: 4;
  readonly nodes: PackedNodesV4;
  readonly devices: PackedEvidence['devices'] & { readonly idsCheck: readonly number[] };
};

/** FNV-1a (32 bits) of the ids, in order: how version 4 told whether a node's cards at those positions were still the ones recorded. */
export function cardIdsCheck(ids: readonly string[]): number {
  let hash = 0x811c9dc5;
  for (const id of ids) {
    for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
    // A separator no id ends with, so that ["ab", "c"] and ["a", "bc"] differ.
    hash = Math.imul(hash ^ 0x1f, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * Versions 4 and 5 with the ids found again where the node's registration is still the one recorded (see
 * `PackedEvidence`): version 5 compares registration versions, version 4 a check of the ids.
 */
function withCardIds(packed: PackedEvidence | PackedEvidenceV4, registered: RegisteredCards | undefined): PackedEvidenceV3 {
  const nodeCount = packed.nodes.name.length;
  const perNode = expandRuns(packed.devices.perNode, nodeCount, 'devices.perNode').map((v) => v ?? 0);
  const positions = expandRuns(packed.devices.position, sum(perNode), 'devices.position').map((v) => v ?? 0);
  const stillRecorded = packed.v === 5 ? sameRegistration(packed.nodes.registrationVersion, nodeCount) : sameIds(packed.devices.idsCheck, nodeCount);
  const ids: string[] = [];
  let next = 0;
  perNode.forEach((count, node) => {
    const now = count > 0 ? registered?.(packed.nodes.name[node]!) : undefined;
    const found = positions.slice(next, next + count).map((position) => now?.cards[position]?.id);
    next += count;
    const known = now !== undefined && found.every((id): id is string => id !== undefined) && stillRecorded(node, now.registrationVersion, found);
    for (const id of found) ids.push(known ? id! : '');
  });
  const { nodes, devices } = packed;
  return {
    v: 3,
    containers: packed.containers,
    texts: packed.texts,
    nodes: { name: nodes.name, failed: nodes.failed, score: nodes.score, reason: nodes.reason, containers: nodes.containers },
    containerRows: packed.containerRows,
    cards: packed.cards,
    picks: packed.picks,
    devices: { perNode: devices.perNode, position: devices.position, index: devices.index, devmem: devices.devmem, devcore: devices.devcore, count: devices.count, id: ids },
  };
}

type StillRecorded = (node: number, registrationVersion: number, ids: readonly string[]) => boolean;

function sameRegistration(recorded: Runs, nodeCount: number): StillRecorded {
  const versions = expandRuns(recorded, nodeCount, 'nodes.registrationVersion');
  return (node, registrationVersion) => versions[node] === registrationVersion;
}

function sameIds(checks: readonly number[], nodeCount: number): StillRecorded {
  if (checks.length !== nodeCount) throw new Error(`packed evidence column devices.idsCheck does not hold ${nodeCount} values`);
  return (node, _version, ids) => cardIdsCheck(ids) === checks[node];
}

/** The values of a column given as runs; a column whose runs do not add up to its row count is corrupt. */
function expandRuns(runs: Runs, length: number, column: string): (number | null)[] {
  const values: (number | null)[] = [];
  for (let i = 0; i < runs.length; i += 2) {
    const count = runs[i + 1];
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || values.length + count > length) break;
    const value = runs[i] ?? null;
    for (let k = 0; k < count; k++) values.push(value);
  }
  if (values.length !== length || runs.length % 2 !== 0) throw new Error(`packed evidence column ${column} does not hold ${length} values`);
  return values;
}

const sum = (values: readonly (number | null)[]) => values.reduce<number>((total, v) => total + (v ?? 0), 0);

/** Version 3 expanded (the shape version 2 had), for the one unpacking routine. */
function expanded(packed: PackedEvidenceV3): ExpandedEvidence {
  const numbers = (runs: Runs, length: number, column: string) => expandRuns(runs, length, column).map((v) => v ?? 0);
  const nodeCount = packed.nodes.name.length;
  const containersPerNode = numbers(packed.nodes.containers, nodeCount, 'nodes.containers');
  const containerCount = sum(containersPerNode);
  const cardsPerContainer = numbers(packed.containerRows.cards, containerCount, 'containerRows.cards');
  const picksPerContainer = numbers(packed.containerRows.picks, containerCount, 'containerRows.picks');
  const cardCount = sum(cardsPerContainer);
  const pickCount = sum(picksPerContainer);
  const d = packed.devices;
  const devicesPerNode = numbers(d.perNode, nodeCount, 'devices.perNode');
  const deviceCount = d.id.length;
  if (sum(devicesPerNode) !== deviceCount) throw new Error('packed evidence devices do not add up');
  const position = numbers(d.position, deviceCount, 'devices.position');
  const index = numbers(d.index, deviceCount, 'devices.index');
  const devmem = numbers(d.devmem, deviceCount, 'devices.devmem');
  const devcore = numbers(d.devcore, deviceCount, 'devices.devcore');
  const count = numbers(d.count, deviceCount, 'devices.count');
  let next = 0;
  const devices = devicesPerNode.map((n) =>
    Array.from({ length: n }, () => {
      const k = next++;
      return [position[k]!, d.id[k]!, index[k]!, devmem[k]!, devcore[k]!, count[k]!] as [number, string, number, number, number, number];
    }),
  );
  return {
    containers: packed.containers,
    texts: packed.texts,
    nodes: {
      name: packed.nodes.name,
      failed: numbers(packed.nodes.failed, nodeCount, 'nodes.failed'),
      score: numbers(packed.nodes.score, nodeCount, 'nodes.score'),
      reason: numbers(packed.nodes.reason, nodeCount, 'nodes.reason'),
      containers: containersPerNode,
    },
    containerRows: {
      container: numbers(packed.containerRows.container, containerCount, 'containerRows.container'),
      status: numbers(packed.containerRows.status, containerCount, 'containerRows.status'),
      reason: numbers(packed.containerRows.reason, containerCount, 'containerRows.reason'),
      cards: cardsPerContainer,
      picks: picksPerContainer,
    },
    cards: packed.cards.map((runs, c) => expandRuns(runs, cardCount, `cards.${c}`)),
    picks: {
      position: numbers(packed.picks.position, pickCount, 'picks.position'),
      usedMem: numbers(packed.picks.usedMem, pickCount, 'picks.usedMem'),
      usedCores: numbers(packed.picks.usedCores, pickCount, 'picks.usedCores'),
    },
    devices,
  };
}
