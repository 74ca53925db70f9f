/**
 * Warning events on Nodes (docs/api.md §3, `RecordNodeEvent`): read from a control-plane answer, applied best effort,
 * and recorded as the kubelet records a Node's own events (in `default`, the node's name as its uid), so that
 * `kubectl describe node` lists them.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { AppLogger } from '../../../lib/powertools';
import { applyEffects, type ClusterWriter } from '../../../lib/relay/effects';
import { splitEffects, type RecordEventEffect, type RecordNodeEventEffect } from '../../../lib/wire/effects';
import { EventCorrelator } from '../../../lib/relay/eventCorrelator';
import { createKubeWriter } from '../../../lib/relay/kubeWriter';

const nodeWarning = { kind: 'RecordNodeEvent', name: 'gpu-node-1', type: 'Warning', reason: 'AdoptedPastCapacity', message: 'Pod team-b/x claims cards past their capacity' } as const;

function recordingLogger(): AppLogger & { warnings: { message: string; fields: unknown }[] } {
  const warnings: { message: string; fields: unknown }[] = [];
  return { debug: () => undefined, info: () => undefined, warn: (message: unknown, fields?: unknown) => void warnings.push({ message: String(message), fields }), error: () => undefined, warnings } as never;
}

describe('Node events', () => {
  it('are read from an answer next to the pod’s', () => {
    const podWarning = { kind: 'RecordEvent', namespace: 'team-b', name: 'x', uid: 'u-x', type: 'Warning', reason: 'AdoptedPastCapacity', message: 'm' };
    const split = splitEffects({ accepted: 1, Effects: [podWarning, nodeWarning] });
    expect(split.invalid).toBeUndefined();
    expect(split.effects).toEqual([podWarning, nodeWarning]);
    expect(splitEffects({ Effects: [{ ...nodeWarning, name: '' }] }).invalid).toMatch(/^Effects\.0\./);
  });

  it('are applied through the writer, and a failed one is logged with the node, never failing the rest', async () => {
    const recorded: (RecordEventEffect | RecordNodeEventEffect)[] = [];
    const writer: ClusterWriter = {
      patchPodMetadata: () => Promise.resolve(),
      bindPod: () => Promise.resolve(),
      recordEvent: (effect) => {
        recorded.push(effect);
        return effect.kind === 'RecordNodeEvent' ? Promise.reject(new Error('events are forbidden')) : Promise.resolve();
      },
      patchNodeMetadata: () => Promise.resolve(),
      evictPod: () => Promise.resolve({ kind: 'evicted' as const }),
    };
    const logger = recordingLogger();
    expect(await applyEffects([nodeWarning], writer, logger, { independent: true })).toEqual({ ok: true });
    expect(recorded).toEqual([nodeWarning]);
    expect(logger.warnings).toEqual([{ message: 'EventNotRecorded', fields: { node: 'gpu-node-1', reason: 'AdoptedPastCapacity', error: 'events are forbidden' } }]);
  });

  it('are recorded in default, on the Node, with its name as uid; repeats count up the same event', async () => {
    const created: { namespace: string; body: { metadata: { namespace: string }; involvedObject: unknown; count: number } }[] = [];
    const patched: { name: string; namespace: string; body: { count: number } }[] = [];
    const core = {
      createNamespacedEvent: (req: (typeof created)[number]) => {
        created.push(req);
        return Promise.resolve({});
      },
      patchNamespacedEvent: (req: (typeof patched)[number]) => {
        patched.push(req);
        return Promise.resolve({});
      },
    } as unknown as CoreV1Api;
    const writer = createKubeWriter(core, new EventCorrelator('hami-scheduler', () => new Date('2026-01-01T00:00:00Z')));
    await writer.recordEvent(nodeWarning);
    expect(created).toHaveLength(1);
    expect(created[0]!.namespace).toBe('default');
    expect(created[0]!.body.metadata.namespace).toBe('default');
    expect(created[0]!.body.involvedObject).toEqual({ apiVersion: 'v1', kind: 'Node', name: 'gpu-node-1', uid: 'gpu-node-1' });
    await writer.recordEvent(nodeWarning);
    expect(patched).toEqual([expect.objectContaining({ namespace: 'default', body: expect.objectContaining({ count: 2 }) })]);
  });

  it('stay apart from a pod of the same name in default', () => {
    const correlator = new EventCorrelator('hami-scheduler', () => new Date('2026-01-01T00:00:00Z'));
    const base = { name: 'gpu-node-1', uid: 'gpu-node-1', type: 'Warning' as const, reason: 'AdoptedPastCapacity', message: 'm' };
    expect(correlator.correlate({ ...base, kind: 'Node', namespace: '' }).action).toBe('create');
    expect(correlator.correlate({ ...base, namespace: 'default' })).toMatchObject({
      action: 'create',
      event: { involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'gpu-node-1', uid: 'gpu-node-1' } },
    });
  });
});
