/**
 * A pod adopted from annotations it was not given (issue 46's reproduction), black box over real HTTP against the
 * local server and a real store: a one-card node, a 16,000 MiB pod placed through /filter, then a Running pod of
 * another namespace forwarded with annotations claiming the same card whole. The adoption is counted as the card is
 * really used and raised (Warnings on the pod and the Node in the answer's Effects), the devices view marks the card
 * over-committed, and no pod is placed there until the adopted pod is gone.
 */
import { card, forwardedPod, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

const { api } = useControlPlane({ per: 'suite' });

const UUID = 'GPU-8f2c1d4e-0000-4000-8000-000000000001';

describe('adoption past capacity', () => {
  it('raises the adoption, marks the card, and places nothing there until the card is back within capacity', async () => {
    // Prepare: one card, 16,000 of its 16,384 MiB placed through /filter and confirmed.
    expect((await api.events([{ type: 'ADDED', object: gpuNode('solo', [card(UUID)]) }])).json.accepted).toBe(1);
    const tenantA = gpuPod('train', [{ name: 'main', gpu: 1, mem: 16000 }], { namespace: 'team-a' });
    const placed = await api.filter(tenantA, ['solo']);
    expect(placed.json.NodeNames).toEqual(['solo']);
    const confirmed = await api.events([{ type: 'MODIFIED', object: forwardedPod(tenantA, { ...patchedAnnotations(placed.json), 'hami.io/bind-phase': 'success' }, { phase: 'Running' }) }]);
    expect(confirmed.json.rejected).toEqual([]);

    // Act: a Running pod of another namespace claims the whole card through annotations nobody decided.
    const intruder = gpuPod('squatter', [{ name: 'main', gpu: 1 }], { namespace: 'team-b' });
    const claim = forwardedPod(
      intruder,
      { 'hami.io/vgpu-node': 'solo', 'hami.io/vgpu-devices-allocated': `${UUID},NVIDIA,16384,100:;`, 'hami.io/bind-phase': 'success' },
      { rv: '7', phase: 'Running' },
    );
    const adopted = await api.events([{ type: 'ADDED', object: claim }]);

    // Assess: accepted, counted, and raised on the pod and on the Node.
    expect(adopted.status).toBe(200);
    expect(adopted.json).toMatchObject({ accepted: 1, rejected: [] });
    expect(adopted.json.Effects).toEqual([
      expect.objectContaining({ kind: 'RecordEvent', namespace: 'team-b', name: 'squatter', uid: intruder.metadata.uid, type: 'Warning', reason: 'AdoptedPastCapacity', message: expect.stringContaining(`${UUID} (memory 32384/16384 MiB)`) }),
      expect.objectContaining({ kind: 'RecordNodeEvent', name: 'solo', type: 'Warning', reason: 'AdoptedPastCapacity', message: expect.stringContaining('team-b/squatter') }),
    ]);
    const view = await api.devices('solo');
    expect(view.status).toBe(200);
    expect(view.json.devices).toEqual([
      expect.objectContaining({ id: UUID, usedmem: 32384, devmem: 16384, usedcores: 100, used: 2, overcommitted: ['memory'], pods: ['team-a/train', 'team-b/squatter'] }),
    ]);
    // The same event again (a re-list) raises nothing more.
    expect((await api.events([{ type: 'MODIFIED', object: claim }])).json.Effects).toEqual([]);

    // No pod is placed on the card while it is past its capacity, however little it asks...
    const small = gpuPod('tiny', [{ name: 'main', gpu: 1, mem: 100 }], { namespace: 'team-c' });
    const refused = await api.filter(small, ['solo']);
    expect(refused.json.NodeNames).toBeNull();
    expect(refused.json.FailedNodes).toEqual({ solo: '1/1 CardOvercommitted' });
    const log = await api.schedulerLog('team-c', 'tiny');
    expect(log.json.hints.map((h: { code: string }) => h.code)).toEqual(['CardOvercommitted']);

    // ...and once the adopted pod is deleted, the card takes pods again.
    const gone = await api.events([{ type: 'DELETED', object: forwardedPod(intruder, { 'hami.io/vgpu-node': 'solo' }, { rv: '9' }) }]);
    expect(gone.json.rejected).toEqual([]);
    expect((await api.devices('solo')).json.devices[0]).not.toHaveProperty('overcommitted');
    const again = await api.call('POST', '/filter', { Pod: small, NodeNames: ['solo'] });
    expect(again.json.Error).toBe('');
    expect(again.json.NodeNames).toEqual(['solo']);
  });
});
