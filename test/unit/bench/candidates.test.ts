/**
 * The bench's kube-scheduler sends the extender the node names kube-scheduler would: with its
 * percentageOfNodesToScore, only the first feasible nodes it finds, from where its last search stopped.
 */
import { candidateRotation } from '../../../bench/workload';

const cluster = (n: number) => Array.from({ length: n }, (_, i) => `node-${i}`);

describe('bench: the node names kube-scheduler sends', () => {
  it('sends every node at 100 percent, and in clusters under 100 nodes whatever the percentage', () => {
    expect(candidateRotation(cluster(1000), 100)()).toHaveLength(1000);
    expect(candidateRotation(cluster(99), 0)()).toHaveLength(99);
    expect(candidateRotation(cluster(99), 10)()).toHaveLength(99);
  });

  it('by default (0) sends 50 - nodes/125 percent, at least 5 percent and at least 100 nodes', () => {
    expect(candidateRotation(cluster(100), 0)()).toHaveLength(100);
    expect(candidateRotation(cluster(500), 0)()).toHaveLength(230);
    expect(candidateRotation(cluster(1000), 0)()).toHaveLength(420);
    expect(candidateRotation(cluster(5000), 0)()).toHaveLength(500);
    expect(candidateRotation(cluster(10000), 0)()).toHaveLength(500);
    expect(candidateRotation(cluster(1000), 5)()).toHaveLength(100);
  });

  it('starts each search where the last one stopped, wrapping around the node list', () => {
    const next = candidateRotation(cluster(1000), 0);
    const first = next();
    const second = next();
    const third = next();
    expect([first[0], first[419]]).toEqual(['node-0', 'node-419']);
    expect([second[0], second[419]]).toEqual(['node-420', 'node-839']);
    expect([third[0], third[159], third[160], third[419]]).toEqual(['node-840', 'node-999', 'node-0', 'node-259']);
  });
});
