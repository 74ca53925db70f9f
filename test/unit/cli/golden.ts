/** Golden files: compare with test/fixtures/schedulerlog/<name>; `UPDATE_GOLDEN=1` rewrites them (review the diff). */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { clusterNodeSchema, clusterPodSchema, type ClusterReader } from '../../../lib/diagnostics/decisionTree';

export const fixtureDir = join(__dirname, '..', '..', 'fixtures', 'schedulerlog');

export function readFixture<T>(file: string): T {
  return JSON.parse(readFileSync(join(fixtureDir, file), 'utf8')) as T;
}

export function record(name: 'success' | 'nofit' | 'bindfail'): AttemptRecord {
  return readFixture<AttemptRecord>(`${name}.record.json`);
}

export function expectGolden(file: string, actual: string): void {
  const path = join(fixtureDir, file);
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(path, actual);
  if (!existsSync(path)) throw new Error(`golden file ${file} is missing; run with UPDATE_GOLDEN=1 and review it`);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}

interface Cluster {
  readonly pods: Record<string, unknown>;
  readonly nodes: Record<string, unknown>;
}

/** The captured cluster of cluster.json as a ClusterReader, its objects parsed as lib/kube/clusterReader.ts parses them. */
export function fixtureCluster(): ClusterReader {
  const cluster = readFixture<Cluster>('cluster.json');
  return {
    getPod: async (namespace, name) => {
      const pod = cluster.pods[`${namespace}/${name}`];
      return pod === undefined ? undefined : clusterPodSchema.parse(pod);
    },
    getNode: async (name) => {
      const node = cluster.nodes[name];
      return node === undefined ? undefined : clusterNodeSchema.parse(node);
    },
  };
}
