/** Loads the captured scheduling attempts in test/fixtures/schedulerlog (fresh copies per call). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AttemptRecord } from '../../../lib/diagnostics/record';

export const fixtureDir = join(__dirname, '..', '..', 'fixtures', 'schedulerlog');

export function readFixture<T = unknown>(file: string): T {
  return JSON.parse(readFileSync(join(fixtureDir, file), 'utf8')) as T;
}

export function record(name: 'success' | 'nofit' | 'bindfail'): AttemptRecord {
  return readFixture<AttemptRecord>(`${name}.record.json`);
}

export function bindfailHistory(): AttemptRecord[] {
  return readFixture<AttemptRecord[]>('bindfail.history.json');
}
