import { renderSchedulerLog } from '../../../lib/diagnostics/schedulerLog';
import type { NodeDevices } from '../../../lib/diagnostics/nodeDevices';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { walkDecisionTree } from '../../../lib/diagnostics/decisionTree';
import { defaultEngineConfig } from '../../../lib/config';
import { formatAge, renderNodeDevicesText, renderNotFoundText, renderSchedulerLogText } from '../../../lib/cli/render';
import { ansi } from '../../../lib/cli/style';
import { expectGolden, fixtureCluster, readFixture, record } from './golden';

const stripAnsi = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '');

describe('renderSchedulerLogText (golden)', () => {
  it('success: the docs/api.md example', () => {
    expectGolden('success.txt', renderSchedulerLogText(renderSchedulerLog(record('success'))));
  });

  it('no fit: one "x/y Reason" piece per line, skipped containers, node-level reasons', () => {
    const text = renderSchedulerLogText(renderSchedulerLog(record('nofit')));
    expectGolden('nofit.txt', text);
    expect(text).toContain('3/8 AllocatedCardsInsufficientRequest');
    expect(text).toMatch(/trainer\s+skipped/);
  });

  it('no fit with per-card detail', () => {
    expectGolden('nofit-detail.txt', renderSchedulerLogText(renderSchedulerLog(record('nofit'), { detail: 'devices' })));
  });

  it('bind failure with lock contention, and earlier attempts', () => {
    const history = readFixture<AttemptRecord[]>('bindfail.history.json');
    const text = renderSchedulerLogText(renderSchedulerLog(record('bindfail'), { history }));
    expectGolden('bindfail-history.txt', text);
    expect(text).toContain('node node3 has been locked within 5m0s: node lock contention');
  });

  it('says when the attempt was decided ahead, and why a decision made ahead was not used', () => {
    const ahead = renderSchedulerLogText(renderSchedulerLog({ ...record('success'), ahead: { kind: 'decided' } })).split('\n');
    expect(ahead[ahead.findIndex((line) => line.startsWith('Attempt')) + 1]).toBe("Ahead     decided ahead, before kube-scheduler's filter asked");
    const reason = 'the decision made ahead at 2026-01-01T00:00:00.000Z (node node2) was not used: node node2 is not among the 1 nodes kube-scheduler sent';
    const live = renderSchedulerLogText(renderSchedulerLog({ ...record('success'), ahead: { kind: 'notUsed', reason } }));
    expect(live).toContain(`Ahead     decided live: ${reason}`);
    expect(renderSchedulerLogText(renderSchedulerLog(record('success')))).not.toContain('Ahead');
    // Bound after the relay answered kube-scheduler's filter from the decision: when it did.
    const base = record('success');
    const used = renderSchedulerLogText(renderSchedulerLog({ ...base, ahead: { kind: 'decided' }, bind: { ...base.bind, filterUsedAhead: '2026-01-01T00:00:02.000Z' } }));
    expect(used).toContain("Ahead     decided ahead, before kube-scheduler's filter asked; its filter was answered from this decision at 2026-01-01T00:00:02.000Z");
    // On which view it was decided, as the console says it.
    const viewed = renderSchedulerLogText(renderSchedulerLog({ ...base, ahead: { kind: 'decided' }, view: { seq: 12, ageMs: 2500 } }));
    expect(viewed).toMatch(/^Attempt {3}#\d+ at \S+ {2}\(id [^)]+\); decided on the cluster state as of 2\.5 s before$/m);
    // A fresh one (under a second) goes unsaid.
    expect(renderSchedulerLogText(renderSchedulerLog({ ...base, view: { seq: 12, ageMs: 400 } }))).not.toContain('decided on the cluster state');
  });

  it('says which nodes lock-aware placement passed over, and when every node that fit was busy', () => {
    const base = record('success');
    const busy: AttemptRecord = { ...base, filter: { ...base.filter, passedOver: [{ name: 'node3', holder: 'team-a/train-0' }], leastBusy: { allocations: 1 } } };
    const lines = renderSchedulerLogText(renderSchedulerLog(busy)).split('\n');
    const at = lines.findIndex((line) => line.startsWith('Filter'));
    expect(lines.slice(at + 1, at + 3)).toEqual([
      '          passed over node3: team-a/train-0 is allocating there',
      "          every node that fits had an allocation under way: this one had the fewest (1), and the pod's bind waits for it",
    ]);
    expect(renderSchedulerLogText(renderSchedulerLog(base))).not.toContain('allocation under way');
  });

  it('prints why the nodes are missing when the evidence cannot be read', () => {
    const unreadable = { ...record('success'), evidenceUnreadable: 'packed evidence of unknown version 9', filter: { ...record('success').filter, nodes: [] } };
    const lines = renderSchedulerLogText(renderSchedulerLog(unreadable)).split('\n');
    const filter = lines.findIndex((line) => line.startsWith('Filter'));
    expect(lines[filter + 1]).toBe("          the nodes' evidence cannot be read (packed evidence of unknown version 9): written by a later release, or damaged");
    expect(lines[filter + 2]).toBe('');
  });

  it('prints the preemption section under the filter, and a victim says who preempted it', () => {
    const nofit = record('nofit');
    const preempting: AttemptRecord = {
      ...nofit,
      filter: {
        ...nofit.filter,
        preemption: {
          outcome: 'evicting',
          summary: 'evicting 1 lower-priority pod: ml/batch (priority 0) on node node1 to free GPU-1',
          node: 'node1',
          cards: ['GPU-1'],
          victims: [{ pod: 'ml/batch', uid: 'u1', priority: 0, cards: [{ uuid: 'GPU-1', mem: 12288, cores: 30 }] }],
          spared: ['ml/db'],
          why: 'the only node where evicting lower-priority pods makes the pod fit',
        },
      },
    };
    const lines = renderSchedulerLogText(renderSchedulerLog(preempting)).split('\n');
    const at = lines.findIndex((line) => line.startsWith('Preemption'));
    expect(lines.slice(at, at + 4)).toEqual([
      'Preemption evicting 1 lower-priority pod: ml/batch (priority 0) on node node1 to free GPU-1',
      '          victim ml/batch (priority 0) held GPU-1 12288 MiB, 30% cores',
      '          kept for their PodDisruptionBudget (the pod fits without their cards): ml/db',
      '          why: the only node where evicting lower-priority pods makes the pod fit',
    ]);
    const victim = renderSchedulerLogText({ ...renderSchedulerLog(record('success')), preemptedBy: { pod: 'ml/urgent', node: 'node3', time: '2026-08-21T16:45:00.000Z' } });
    expect(victim).toContain('Victim    Preempted by ml/urgent on node node3 at 2026-08-21T16:45:00.000Z: evicted to free its GPU cards for a higher-priority pod');
  });

  it('colours only the words, leaving the layout of the plain text', () => {
    const log = renderSchedulerLog(record('nofit'));
    const coloured = renderSchedulerLogText(log, { style: ansi });
    expect(coloured).toContain('\u001b[31mfailed\u001b[39m');
    expect(stripAnsi(coloured)).toBe(renderSchedulerLogText(log));
  });
});

describe('renderNodeDevicesText (golden)', () => {
  const view = readFixture<NodeDevices>('node3.devices.json');
  it('shows registration, lock age and per-card usage', () => {
    expectGolden('node3.devices.txt', renderNodeDevicesText(view, { nowMs: Date.parse('2026-08-21T16:45:05Z') }));
  });
  it('says when the node has no cards and no lock', () => {
    const text = renderNodeDevicesText(
      { name: 'cpu-node-1', registered: false, reason: 'annos not found hami.io/node-nvidia-register', allocatable: { cpu: '8' }, devices: [], lock: null },
      { nowMs: 0 },
    );
    expect(text).toBe(
      [
        'Node         cpu-node-1',
        'Registered   no  (annos not found hami.io/node-nvidia-register)',
        'Allocatable  no extended resources',
        'Lock         free',
        '',
        '  no cards registered',
        '',
      ].join('\n'),
    );
  });
  it('marks a card booked past its capacity, and says what that means', () => {
    const [first, ...rest] = view.devices;
    const over = { ...view, devices: [{ ...first!, usedmem: first!.devmem + 16000, overcommitted: ['memory' as const] }, ...rest] };
    const text = renderNodeDevicesText(over, { nowMs: Date.parse('2026-08-21T16:45:05Z') });
    expect(text).toContain(`\n  ${first!.id}: over-committed (memory): a pod adopted from its annotations claims more than the card has; no new pod is placed on it until it is back within its capacity\n`);
    expect(renderNodeDevicesText(view, { nowMs: Date.parse('2026-08-21T16:45:05Z') })).not.toContain('over-committed');
  });
  it.each([
    [0, '0s'],
    [59_999, '59s'],
    [95_000, '1m35s'],
    [3_725_000, '1h2m'],
    [-5, '0s'],
  ])('formatAge(%i) = %s', (ms, expected) => {
    expect(formatAge(ms)).toBe(expected);
  });
});

describe('renderNotFoundText (golden): the debugging decision tree', () => {
  it.each(['cpu-only', 'wrong-scheduler', 'waiting', 'on-bare-node', 'old', 'pinned', 'orphan', 'ghost'])('default/%s', async (name) => {
    const cluster = fixtureCluster();
    const pod = await cluster.getPod('default', name);
    const node = pod?.spec?.nodeName ? await cluster.getNode(pod.spec.nodeName) : undefined;
    const tree = walkDecisionTree({ namespace: 'default', name }, pod, node, { schedulerName: 'hami-scheduler', engine: defaultEngineConfig });
    expectGolden(`unknown-${name}.txt`, renderNotFoundText('default', name, tree));
  });

  it('says why the tree cannot be walked', () => {
    expect(renderNotFoundText('default', 'x', { unavailable: 'no kubeconfig found' })).toBe(
      'No scheduling record for pod default/x.\nCannot walk the debugging decision tree: no kubeconfig found\n',
    );
  });
});
