/**
 * AWS Neuron in the diagnostics (docs/devices.md, "AWS Neuron"): the scheduler log shows a Neuron device's cores as
 * counts and indexes and hints in Neuron's terms; the node devices view and `hami-diag node` show the cores in use by
 * index. Records are made by the engine itself, from a decision on registered trn1 and inf2 nodes.
 */
import { emptyLedger, nextLedger, type Booking } from '../../../lib/control/ledger';
import { renderNodeDevices } from '../../../lib/control/views';
import { renderNodeDevicesText, renderSchedulerLogText } from '../../../lib/cli/render';
import { hintFor } from '../../../lib/diagnostics/hints';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { renderSchedulerLog, schedulerLogSchema } from '../../../lib/diagnostics/schedulerLog';
import { nodeDevicesSchema } from '../../../lib/diagnostics/nodeDevices';
import { decide } from '../../../lib/engine/decide';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { type NodeLike, type NodeState } from '../../../lib/engine/types';
import { defaultEngineConfig } from '../../../lib/config';
import { type Decision } from '../../../lib/engine/decision';
import { cardUsesOf } from '../../../lib/control/ledger';
import { decodePodDevices } from '../../../lib/engine/podAnnotations';
import { expectGolden } from '../cli/golden';

const NOW = Date.parse('2026-09-01T12:00:00Z');

function neuronNode(name: string, devices: number, cores: number, instanceType: string): NodeLike {
  return { metadata: { name, labels: { 'node.kubernetes.io/instance-type': instanceType } }, status: { capacity: { 'aws.amazon.com/neuron': String(devices), 'aws.amazon.com/neuroncore': String(cores) } } };
}

function state(node: NodeLike, usage: Record<number, { used: number; usedcores: number }>): NodeState {
  const byId = Object.fromEntries(Object.entries(usage).map(([i, u]) => [`${node.metadata.name}-AWSNeuron-${i}`, { used: u.used, usedmem: 0, usedcores: u.usedcores }]));
  return { name: node.metadata.name, registration: parseNodeRegistration(node, defaultEngineConfig), usage: byId };
}

function recordOf(decision: Decision): AttemptRecord {
  if (decision.kind === 'error') throw new Error(decision.message);
  return {
    pod: { namespace: 'ml', name: 'train', uid: 'uid-train' },
    attemptId: 'attempt-1',
    attempt: 1,
    time: new Date(NOW).toISOString(),
    filter:
      decision.kind === 'fit'
        ? { status: 'passed', summary: decision.message, node: decision.node, score: decision.score, nodes: decision.evidence, devices: decision.devices }
        : { status: 'failed', summary: decision.message, reasonEvents: decision.reasonEvents, nodes: decision.evidence },
    bind: { status: 'pending', summary: '' },
  };
}

const pod = (limits: Record<string, string>) => ({ metadata: { name: 'train', namespace: 'ml', uid: 'uid-train' }, spec: { containers: [{ name: 'main', resources: { limits } }] } });
const trn1 = state(neuronNode('trn-a', 16, 32, 'trn1.32xlarge'), { 7: { used: 2, usedcores: 3 }, 13: { used: 1, usedcores: 1 } });
const inf2 = state(neuronNode('inf-a', 2, 4, 'inf2.xlarge'), { 1: { used: 1, usedcores: 2 } });

describe('the scheduler log of a Neuron pod', () => {
  const decision = decide({ pod: pod({ 'aws.amazon.com/neuron': '8' }), candidates: ['trn-a', 'inf-a'], nodes: new Map([['trn-a', trn1], ['inf-a', inf2]]), config: defaultEngineConfig, nowMs: NOW });
  const log = renderSchedulerLog(recordOf(decision), { detail: 'devices' });

  it('explains every failure by code, with the hints in Neuron\'s terms', () => {
    expect(log.filter.nodes.map((n) => [n.name, n.containers[0]?.reason ?? n.reason])).toEqual([
      // HAMi's one NumaNotFit for a run not found; each device's own outcome is in the devices table.
      ['trn-a', '1/16 NumaNotFit'],
      ['inf-a', 'NodeInsufficientDevice'],
    ]);
    expect(log.hints.map((h) => h.code)).toEqual(['NumaNotFit', 'NodeInsufficientDevice']);
    expect(log.hints.find((h) => h.code === 'NumaNotFit')).toEqual(hintFor('NumaNotFit', 'AWSNeuron'));
    expect(log.hints.find((h) => h.code === 'NumaNotFit')?.cause).toContain('on Trainium (trn*) only 1, 4, 8 or 16 devices');
    expect(hintFor('NumaNotFit')?.cause).toContain('nvidia.com/numa-bind');
    expect(schedulerLogSchema.parse(log)).toEqual(log);
  });

  it("gives the answer's fix in Neuron's terms too, from the evidence or from what the filter wrote", () => {
    const code = log.answer?.code ?? '';
    expect(log.answer?.fix).toBe(hintFor(code, 'AWSNeuron')?.fix);
    expect(log.answer?.fix).not.toBe(hintFor(code)?.fix);
    // As the filter writes a failed attempt: counts and the request type, the evidence packed away.
    const written = recordOf(decision);
    const counted = { ...written, filter: { ...written.filter, nodes: [], reasons: [{ code, nodes: 1 }], evaluated: 2, requestType: 'AWSNeuron' } };
    expect(renderSchedulerLog(counted, {}).answer?.fix).toBe(hintFor(code, 'AWSNeuron')?.fix);
  });

  it('shows each device\'s cores as counts, and which cores are used and free', () => {
    const cards = log.filter.nodes[0]?.containers[0]?.devices ?? [];
    expect(cards[13]).toMatchObject({ uuid: 'trn-a-AWSNeuron-13', outcome: 'CardInsufficientCore', totalCores: 2, usedCores: 1, requestedCores: 2, usedSlots: 1, slots: 2, coreIndexes: { used: [0], free: [1] } });
    expect(cards[0]).toMatchObject({ outcome: 'NumaNotFit', totalCores: 2, usedCores: 0, coreIndexes: { used: [], free: [0, 1] } });
    expectGolden('neuron-nofit-detail.txt', renderSchedulerLogText(log));
  });

  it('shows the cores given to a core request by index', () => {
    const fit = decide({ pod: pod({ 'aws.amazon.com/neuroncore': '1' }), candidates: ['inf-a'], nodes: new Map([['inf-a', inf2]]), config: defaultEngineConfig, nowMs: NOW });
    const placed = renderSchedulerLog(recordOf(fit), { detail: 'devices' });
    expect(placed.filter.nodes[0]?.containers[0]?.chosen).toEqual([{ idx: 1, uuid: 'inf-a-AWSNeuron-1', type: 'AWSNeuron', usedmem: 0, usedcores: 1, coreIndexes: [0] }]);
    expect(renderSchedulerLogText(placed)).toContain('  chosen: device 1 inf-a-AWSNeuron-1, cores 0');
    expect(renderSchedulerLogText(placed)).toContain('inf-a / main: asks 1 NeuronCore(s)');
  });

  it('keeps NVIDIA\'s words for an NVIDIA pod', () => {
    expect(hintFor('CardInsufficientCore')?.cause).toContain('nvidia.com/gpucores');
    expect(hintFor('CardInsufficientCore', 'AWSNeuron')?.cause).toContain('contiguous range of cores');
    // Codes Neuron has no words of its own for read as for every kind.
    expect(hintFor('node unregistered', 'AWSNeuron')).toEqual(hintFor('node unregistered'));
  });
});

describe('the devices of a Neuron node', () => {
  const registration = parseNodeRegistration(neuronNode('inf-b', 2, 4, 'inf2.xlarge'), defaultEngineConfig);
  const booking = (name: string, devices: string): Booking => ({
    namespace: 'ml',
    name,
    state: 'confirmed',
    devices,
    initCount: 0,
    initDone: false,
    uses: cardUsesOf(decodePodDevices(devices), 0, false),
    holdsAppCards: false,
    origin: 'decided',
  });
  const ledger = nextLedger(
    { ...emptyLedger('inf-b'), registration, registrationVersion: 1, bookings: { a: booking('a', 'inf-b-AWSNeuron-1,AWSNeuron,0,1:;'), b: booking('b', 'inf-b-AWSNeuron-1,AWSNeuron,0,2:;'), c: booking('c', 'inf-b-AWSNeuron-0,AWSNeuron,0,2:;') } },
    NOW,
  );
  const view = renderNodeDevices(ledger, NOW, defaultEngineConfig.resourceCountName);

  it('lists the cores in use and free by index, per device', () => {
    expect(view.devices.map((d) => [d.id, d.vendor, d.used, d.usedcores, d.coreIndexes, d.pods])).toEqual([
      ['inf-b-AWSNeuron-0', 'AWSNeuron', 1, 2, { used: [1], free: [0] }, ['ml/c']],
      ['inf-b-AWSNeuron-1', 'AWSNeuron', 2, 3, { used: [0, 1], free: [] }, ['ml/a', 'ml/b']],
    ]);
    expect(nodeDevicesSchema.parse(view)).toMatchObject({ devices: [{ coreIndexes: { used: [1] } }, { coreIndexes: { free: [] } }] });
  });

  it('hami-diag node shows them', () => {
    expectGolden('neuron.devices.txt', renderNodeDevicesText(view, { nowMs: NOW }));
  });
});
