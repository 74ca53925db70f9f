/**
 * How an attempt's record body is stored: Brotli-compressed JSON marked `enc: br`; attempts written before that
 * (gzip'd, no `enc`) stay readable for their retention; a body that is neither is corrupt, not guessed at.
 */
import { gzipSync } from 'node:zlib';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { CorruptItemError } from '../../../lib/errors';
import { decodeRecord, encodeRecord, RECORD_ENCODING } from '../../../lib/store/recordStore';

const record: AttemptRecord = {
  pod: { namespace: 'team-a', name: 'train-0', uid: 'uid-train-0' },
  attemptId: 'a1',
  attempt: 0,
  time: '2026-11-24T00:00:00.000Z',
  filter: { status: 'failed', summary: 'no available node, 2 nodes do not meet', evaluated: 2, reasons: [{ code: 'CardInsufficientMemory', nodes: 2 }], nodes: [] },
  bind: { status: 'pending', summary: 'not attempted: no node passed the filter' },
};

describe('attempt record bodies', () => {
  it('reads back what it writes', () => {
    expect(RECORD_ENCODING).toBe('br');
    expect(decodeRecord(encodeRecord(record), RECORD_ENCODING)).toEqual(record);
  });

  it('reads an attempt written gzip-compressed before Brotli (no encoding stored)', () => {
    expect(decodeRecord(gzipSync(JSON.stringify(record)), undefined)).toEqual(record);
  });

  it('calls a body with an unknown encoding, or one that does not decompress, corrupt', () => {
    expect(() => decodeRecord(encodeRecord(record), 'zstd')).toThrow(CorruptItemError);
    expect(() => decodeRecord(encodeRecord(record), undefined)).toThrow(CorruptItemError);
    expect(() => decodeRecord(gzipSync(JSON.stringify(record)), RECORD_ENCODING)).toThrow(CorruptItemError);
  });
});
