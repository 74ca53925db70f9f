/**
 * Evidence as records hold it, in every packed version ever written (lib/store/storedEvidence.ts): read back, it is the
 * evidence the decision had, card ids found again only where the node registers as it did then.
 */
import { decide } from '../../../lib/engine/decide';
import type { RegisteredCards } from '../../../lib/control/ports';
import type { NodeEvidence, NodeState } from '../../../lib/engine/types';
import { cardIdsCheck, unpackStoredEvidence, type StoredEvidence } from '../../../lib/store/storedEvidence';
import { a, b, decided, mixedEvidence, mixedInput, registeredIn, x } from '../engine/mixedDecision';
import previousRelease from './packed-evidence-v2.json';
import withIds from './packed-evidence-v3.json';
import idsChecked from './packed-evidence-v4.json';

describe('stored evidence', () => {
  it('packed for storage and unpacked, gives back the same evidence (unregistered and failed nodes included)', () => {
    const given = mixedInput();
    const d = decide(given);
    if (d.kind === 'error') throw new Error(d.message);
    const stored = JSON.parse(JSON.stringify(d.packEvidence()));
    expect(JSON.stringify(unpackStoredEvidence(stored, registeredIn(given)).evidence())).toBe(JSON.stringify(d.evidence));
  });

  it('stores no card ids: read back, they come from the registrations where the node registers as it did then', () => {
    const given = mixedInput();
    const d = decided(decide(given));
    const stored = JSON.parse(JSON.stringify(d.packEvidence())) as StoredEvidence & { v: 5 };
    const text = JSON.stringify(stored);
    for (const id of [a.id, b.id, x.id]) expect(text).not.toContain(JSON.stringify(id));
    const uuids = (evidence: readonly NodeEvidence[]) => evidence.map((n) => n.containers.map((c) => (c.cards ?? []).map((card) => card.uuid)));
    const withoutIds = (evidence: readonly NodeEvidence[]) =>
      JSON.parse(JSON.stringify(evidence, (key, value: unknown) => (key === 'uuid' ? '' : value))) as unknown;
    // Without registrations, every id reads as empty and nothing else changes.
    const blind = unpackStoredEvidence(stored).evidence();
    expect(uuids(blind).flat(2).every((id) => id === '')).toBe(true);
    expect(withoutIds(blind)).toEqual(withoutIds(d.evidence));
    // n2 registered another card at the same position since (its version moved on): only n2's ids are unknown.
    const replaced = { ...x, id: 'GPU-replaced' };
    const later: RegisteredCards = (name) => (name === 'n2' ? { registrationVersion: 2, cards: [replaced] } : registeredIn(given)(name));
    const read = unpackStoredEvidence(stored, later).evidence();
    expect(uuids(read)[0]).toEqual(uuids(d.evidence)[0]);
    expect(uuids(read)[0]!.flat()).toContain(b.id);
    expect(uuids(read)[1]!.flat().every((id) => id === '')).toBe(true);
    expect(withoutIds(read)).toEqual(withoutIds(d.evidence));
    // Any registration since counts, even one listing the same cards (a health or capacity change, a node that left
    // and came back): the record cannot tell what moved, so it shows no id rather than a wrong one.
    const again: RegisteredCards = (name) => (name === 'n1' ? { registrationVersion: 2, cards: [a, b] } : registeredIn(given)(name));
    expect(uuids(unpackStoredEvidence(stored, again).evidence())[0]!.flat().every((id) => id === '')).toBe(true);
    // A decision made without versions (a caller that does not keep them) keeps no ids either.
    const withoutVersion = (state: NodeState | undefined): NodeState | undefined => {
      if (!state) return undefined;
      const { registrationVersion: _version, ...rest } = state;
      return rest;
    };
    const unversioned = decided(decide({ ...given, nodes: { get: (name) => withoutVersion(given.nodes.get(name)) } }));
    expect(uuids(unpackStoredEvidence(JSON.parse(JSON.stringify(unversioned.packEvidence())) as StoredEvidence, registeredIn(given)).evidence()).flat(2).every((id) => id === '')).toBe(true);
  });

  it('refuses a record whose registration versions do not cover its nodes (a corrupt record, not ids shown wrong)', () => {
    const given = mixedInput();
    const stored = JSON.parse(JSON.stringify(decided(decide(given)).packEvidence())) as StoredEvidence & { v: 5 };
    const short = { ...stored, nodes: { ...stored.nodes, registrationVersion: [1, 2] } };
    expect(() => unpackStoredEvidence(short, registeredIn(given))).toThrow('packed evidence column nodes.registrationVersion does not hold 3 values');
  });

  it('checks ids in order, and tells apart lists that join to the same text', () => {
    expect(cardIdsCheck(['ab', 'c'])).not.toBe(cardIdsCheck(['a', 'bc']));
    expect(cardIdsCheck(['a', 'b'])).not.toBe(cardIdsCheck(['b', 'a']));
    expect(cardIdsCheck([])).not.toBe(cardIdsCheck(['']));
    expect(cardIdsCheck(['GPU-1'])).toBe(cardIdsCheck(['GPU-1']));
  });

  it('records written in the previous packed form (version 2, no runs) still read as the same evidence', () => {
    // Written by the release before runs were introduced, for this very input.
    const { packed, evidence } = previousRelease as unknown as { packed: StoredEvidence; evidence: NodeEvidence[] };
    expect(packed.v).toBe(2);
    expect(JSON.stringify(unpackStoredEvidence(packed).evidence())).toBe(JSON.stringify(evidence));
    expect(unpackStoredEvidence(packed).evidence()).toEqual(mixedEvidence);
  });

  it('records written with a check of the ids (version 4) read with the ids where the check still agrees', () => {
    // Written by the release before registration versions replaced the checks, for this very input.
    const { packed, evidence } = idsChecked as unknown as { packed: StoredEvidence; evidence: NodeEvidence[] };
    expect(packed.v).toBe(4);
    const given = mixedInput();
    expect(JSON.stringify(unpackStoredEvidence(packed, registeredIn(given)).evidence())).toBe(JSON.stringify(evidence));
    expect(unpackStoredEvidence(packed, registeredIn(given)).evidence()).toEqual(mixedEvidence);
    // The check, not the version, decides for these: n2's replaced card loses its id, n1's cards (any version) keep theirs.
    const later: RegisteredCards = (name) => (name === 'n2' ? { registrationVersion: 1, cards: [{ ...x, id: 'GPU-replaced' }] } : { registrationVersion: 7, cards: [a, b] });
    const read = unpackStoredEvidence(packed, later).evidence();
    expect(read[0]).toEqual(mixedEvidence[0]);
    expect(read[1]!.containers.flatMap((c) => (c.cards ?? []).map((card) => card.uuid))).toEqual(['']);
    // Moved cards (same ids, other positions) do not pass the check.
    const moved = unpackStoredEvidence(packed, (name) => (name === 'n1' ? { registrationVersion: 1, cards: [b, a] } : registeredIn(given)(name))).evidence();
    expect(moved[0]!.containers.flatMap((c) => (c.cards ?? []).map((card) => card.uuid)).every((id) => id === '')).toBe(true);
    const short = { ...packed, devices: { ...(packed as { devices: object }).devices, idsCheck: [1] } } as unknown as StoredEvidence;
    expect(() => unpackStoredEvidence(short, registeredIn(given))).toThrow('packed evidence column devices.idsCheck does not hold 3 values');
  });

  it('records written with the card ids (version 3) read as they were, whatever the nodes register now', () => {
    // Written by the release before card ids were left out, for this very input.
    const { packed, evidence } = withIds as unknown as { packed: StoredEvidence; evidence: NodeEvidence[] };
    expect(packed.v).toBe(3);
    expect(JSON.stringify(unpackStoredEvidence(packed).evidence())).toBe(JSON.stringify(evidence));
    expect(unpackStoredEvidence(packed, () => undefined).evidence()).toEqual(mixedEvidence);
  });

  it('packs equal figures as runs, and refuses columns whose runs do not add up', () => {
    const d = decided(decide(mixedInput()));
    const packed = JSON.parse(JSON.stringify(d.packEvidence())) as StoredEvidence & { v: 5 };
    expect(packed.v).toBe(5);
    // Three nodes: n1 and n2 failed-flags differ from ghost's.
    expect(packed.nodes.failed).toEqual([0, 1, 1, 2]);
    const corrupt = { ...packed, nodes: { ...packed.nodes, failed: [0, 1, 1, 1] } };
    expect(() => unpackStoredEvidence(corrupt)).toThrow('packed evidence column nodes.failed does not hold 3 values');
    expect(() => unpackStoredEvidence({ ...packed, v: 9 } as unknown as StoredEvidence)).toThrow('unknown version 9');
  });

});
