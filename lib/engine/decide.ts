/**
 * The filter decision (docs/hami-parity.md §4 and §5, docs/api.md §2 and §9): for every candidate node, fit the pod's
 * containers in HAMi's order, each by its device kind (./devices), score the fitting nodes, choose one, and keep the
 * evidence of every check that failed with the numbers it compared.
 *
 * The pieces, by concern: ./plan (what is fixed for the pod), ./prepared (what is fixed for a registration, and the
 * node-level steps), ./fit (HAMi's card-by-card Fit), ./order (card scores and order), ./topology (topology-aware
 * choice), ./evidence (the evidence, packed while deciding). Speed: a decision visits every card of every candidate
 * (8,000 cards for 1,000 nodes), so the per-card work runs on the typed arrays of a `DecisionArena` reused from node
 * to node, and the evidence of each tried card is one row of numbers; what stays alive per node is a handful of
 * small objects. A caller that decides again and again on mostly unchanged nodes passes a memo (./reuse): nodes
 * unchanged since a decision on the same plan get that decision's rows copied instead of running Fit.
 */
import { DecisionArena } from './arena';
import { coresAreMasks, deviceKind, deviceKindOf, DEVICE_KINDS } from './devices';
import { DecisionTrace } from './evidence';
import { FitRun, realtimeView } from './fit';
import { fitMessage, lastListedPosition, listingPositions, noAvailableNodeMessage, reasonEvents } from './messages';
import type { PodContainer } from './plan';
import { planPod } from './planPod';
import type { DeviceScoringWeights } from './podAnnotations';
import { DeviceScoringWeightsError, deviceScoringWeightsOf } from './podAnnotations';
import { bookCard, EMPTY_NODE, loadBookedUsage, nodeScore, touchPrepared, touchUsage, type PreparedNode } from './prepared';
import { prepareNode } from './prepareNode';
import { describeQuantityProblems, podRequestProblems } from './requests';
import { MemoUse, type NodeOutcome } from './reuse';
import { NodeFailure, PercentageUnset, ReasonCode } from './types';
import type { ContainerRequest, NodeEvidence, NodeState, PodDevices, RealtimeNote } from './types';
import type { DecideInput, Decision } from './decision';

export { cardScore } from './order';

/**
 * Candidates are looked up a block at a time, ahead of fitting them (ours; no decision changes). At thousands of nodes
 * a node's objects (its state, registration, prepared node, cards and usage) are no longer in the processor's caches
 * when the next decision comes to them, and fitting one node after another waits for each miss in turn; the block's
 * look-ups, in a tight loop with nothing depending on them, let the processor wait for many misses at once, and the
 * block's objects are still cached when Fit runs on them (docs/performance.md, "Decisions at 5,000 nodes").
 */
const NODE_BLOCK = 32;

const NO_REQUEST: ContainerRequest = { nums: 0, type: '', memreq: 0, mempercentagereq: PercentageUnset, coresreq: 0 };

export function decide(input: DecideInput): Decision {
  const arena = input.arena ?? new DecisionArena();
  const problems = podRequestProblems(input.pod, input.config);
  if (problems.length > 0) return { kind: 'error', message: describeQuantityProblems(problems) };
  let weights: DeviceScoringWeights;
  try {
    weights = deviceScoringWeightsOf(input.pod.metadata.annotations ?? {});
  } catch (error) {
    if (error instanceof DeviceScoringWeightsError) return { kind: 'error', message: error.message };
    throw error;
  }
  const plan = planPod(input, weights);
  const notes: RealtimeNote[] = [];
  const trace = new DecisionTrace(plan.containers, input.candidates.length, input.memo?.rowStore);
  // Side by side, not an object per node: a decision's per-node objects outlive young collections at thousands of nodes.
  // Sized for every candidate and cut to the fitting ones after: grown a push at a time they were copied again and again.
  const fit = { names: new Array<string>(input.candidates.length), scores: new Array<number>(input.candidates.length), rows: new Array<number>(input.candidates.length) };
  const failedNodes: Record<string, string> = {};
  const run = new FitRun({ arena, plan, notes, trace, node: EMPTY_NODE, nodeRow: 0, request: NO_REQUEST, realtime: undefined, kindState: undefined });
  // Nodes unchanged since a decision on the same plan get that decision's rows (./reuse.ts).
  const reuse = MemoUse.of(input.memo, plan, input.config, input.candidates);
  cutTo(fit, fitCandidates(input, run, reuse, fit, failedNodes));
  reuse?.finish();

  // The evidence objects are built when first read (see ./evidence): deciding itself keeps only
  // numbers per card. An own enumerable accessor, so JSON.stringify and spreads include it; the
  // first read replaces it with the built array on the decision itself (not in this function's
  // closure, which lives from the start of the decision and would keep the objects of decisions
  // already dropped alive across young-generation collections).
  const evidenceOnFirstRead = (decision: object): readonly NodeEvidence[] => keepOnDecision(decision, 'evidence', trace.evidence());

  // Not enumerable: JSON, spreads and key lists of a decision show its evidence and fitting nodes, not the packing
  // function or the count of the fitting nodes.
  const withHiddenFields = <D extends Extract<Decision, { packEvidence: unknown }>>(decision: Omit<D, 'packEvidence' | 'fitNodeCount' | 'release'>, fitNodeCount?: number): D => {
    Object.defineProperty(decision, 'packEvidence', { value: () => trace.pack(), enumerable: false });
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      trace.drop();
    };
    Object.defineProperty(decision, 'release', { value: release, enumerable: false });
    if (fitNodeCount !== undefined) Object.defineProperty(decision, 'fitNodeCount', { value: fitNodeCount, enumerable: false });
    return decision as D;
  };

  if (fit.names.length === 0) {
    const requestType = plan.containers.find((container) => container.request !== undefined)?.request?.type;
    return withHiddenFields<Extract<Decision, { kind: 'noFit' }>>({
      kind: 'noFit',
      failedNodes,
      ...(requestType !== undefined ? { requestType } : {}),
      message: noAvailableNodeMessage(input.candidates.length),
      reasonEvents: reasonEvents(failedNodes),
      get evidence() {
        return evidenceOnFirstRead(this);
      },
      realtime: notes,
    });
  }
  // The whole listing (a sort) only for the message and the fitting nodes, built when first read (after the booking
  // has left), or where the node listed last is passed over.
  let sorted: number[] | undefined;
  const listing = (): number[] => (sorted ??= listingPositions(plan.nodePolicy, fit));
  // HAMi takes the last node listed; asked to, pass over nodes that are busy with another allocation while any other fits.
  const passedOver: { name: string; holder: string }[] = [];
  const last = lastListedPosition(plan.nodePolicy, fit);
  let chosen = last ?? listing()[fit.names.length - 1]!;
  let busy: { allocations: number } | undefined;
  if (input.avoid && input.avoid(fit.names[chosen]!) !== undefined) ({ position: chosen, busy } = lessBusy(listing(), fit.names, input.avoid, passedOver));
  const chosenName = fit.names[chosen]!;
  const devices = trace.podDevices(fit.rows[chosen]!);
  const chosenState = input.nodes.get(chosenName)!;
  // Built when first read, as the evidence is (the filter reads them once the booking is on its way).
  const listedOnFirstRead = (decision: object): readonly { name: string; score: number }[] =>
    keepOnDecision(decision, 'fitNodes', listing().map((i) => ({ name: fit.names[i]!, score: fit.scores[i]! })));
  const messageOnFirstRead = (decision: object): string => keepOnDecision(decision, 'message', fitMessage(chosenName, input.candidates.length, fit, listing()));
  return withHiddenFields<Extract<Decision, { kind: 'fit' }>>({
    kind: 'fit',
    node: chosenName,
    score: fit.scores[chosen]!,
    devices,
    claims: trace.claims(fit.rows[chosen]!, plan.initCount, coresAreMasks),
    bookWholeNode: takesByPosition(devices, chosenState),
    ...annotationsFor(devices, chosenState, input, plan.initCount, plan.containers.map((container) => container.request)),
    get fitNodes() {
      return listedOnFirstRead(this);
    },
    nodePolicy: plan.nodePolicy,
    passedOver,
    ...(busy !== undefined ? { leastBusy: busy } : {}),
    failedNodes,
    get message() {
      return messageOnFirstRead(this);
    },
    get evidence() {
      return evidenceOnFirstRead(this);
    },
    realtime: notes,
  }, fit.names.length);
}

/**
 * Fits every candidate (or copies its rows from the memo) into the trace: the fitting ones into `fit` from position 0,
 * the others' reasons into `failedNodes`. Returns how many fit. A function of its own: the optimizing compiler enters
 * this loop while it runs (thousands of nodes), and code after a loop it entered that way had no type feedback yet,
 * which sent the decision back to the interpreter at every call.
 */
function fitCandidates(input: DecideInput, run: FitRun, reuse: MemoUse | undefined, fit: { names: string[]; scores: number[]; rows: number[] }, failedNodes: Record<string, string>): number {
  const { arena, trace } = run.input;
  const { candidates, candidateStates } = input;
  const outcome: NodeOutcome = { row: 0, score: 0, reason: undefined };
  let fitCount = 0;
  // The block's states and prepared nodes (see NODE_BLOCK): two short arrays per decision, kept out of the arena so
  // that the arena knows nothing of prepared nodes.
  const blockStates: (NodeState | undefined)[] = new Array<NodeState | undefined>(NODE_BLOCK);
  const blockNodes: (PreparedNode | undefined)[] = new Array<PreparedNode | undefined>(NODE_BLOCK);
  for (let start = 0; start < candidates.length; start += NODE_BLOCK) {
    const end = Math.min(start + NODE_BLOCK, candidates.length);
    // Looked up first, in tight loops (see NODE_BLOCK), one level of objects each; with a memo most nodes are copied
    // without reading them.
    for (let position = start; position < end; position++) {
      blockStates[position - start] = candidateStates !== undefined ? candidateStates[position] : input.nodes.get(candidates[position]!);
    }
    if (reuse === undefined) {
      // The states, then their registrations, each level in a loop of its own: the prepared node's look-up below reads
      // both, one after the other, and in one loop the processor waited for each node's two misses in turn.
      let touched = 0;
      for (let i = 0; i < end - start; i++) touched += blockStates[i]?.unschedulable === undefined ? 1 : 0;
      for (let i = 0; i < end - start; i++) touched += blockStates[i]?.registration.registered === true ? 1 : 0;
      arena.touched = touched;
      for (let i = 0; i < end - start; i++) {
        const state = blockStates[i];
        blockNodes[i] = state !== undefined && state.registration.registered && state.unschedulable === undefined ? prepareNode(state.registration) : undefined;
      }
      for (let i = 0; i < end - start; i++) {
        const node = blockNodes[i];
        if (node !== undefined) touchPrepared(arena, node);
      }
      for (let i = 0; i < end - start; i++) {
        const node = blockNodes[i];
        if (node !== undefined) touchUsage(arena, blockStates[i]!, node);
      }
    }
    for (let position = start; position < end; position++) {
      const name = candidates[position]!;
      const state = blockStates[position - start];
      // Rows kept for this very state were noted after it passed the check below: copied without reading the state.
      if (state === undefined || reuse === undefined || !reuse.copy(state, position, trace, outcome)) {
        if (state === undefined || !state.registration.registered || state.unschedulable !== undefined) {
          const reason = state?.unschedulable ?? NodeFailure.Unregistered;
          trace.failedNode(name, reason);
          failedNodes[name] = reason;
          continue;
        }
        evaluateNode(run, state, blockNodes[position - start] ?? prepareNode(state.registration), outcome);
        reuse?.note(state, position, trace, outcome);
      }
      if (outcome.reason === undefined) {
        fit.names[fitCount] = name;
        fit.scores[fitCount] = outcome.score;
        fit.rows[fitCount] = outcome.row;
        fitCount++;
      } else failedNodes[name] = outcome.reason;
    }
  }
  return fitCount;
}

/**
 * Lock-aware placement (see `DecideInput.avoid`): from the node HAMi lists last, the first nobody allocates on; when
 * every one is busy, the one with the fewest allocations under way (the latest listed among equals), `busy` saying how
 * many. Returns its position in `names`; `passedOver` gets the nodes listed after it, with who allocates there.
 */
function lessBusy(
  listed: readonly number[],
  names: readonly string[],
  avoid: NonNullable<DecideInput['avoid']>,
  passedOver: { name: string; holder: string }[],
): { position: number; busy?: { allocations: number } } {
  let fewest = -1;
  let fewestCount = Infinity;
  for (let i = listed.length - 1; i >= 0; i--) {
    const name = names[listed[i]!]!;
    const allocations = avoid(name);
    if (allocations === undefined) return { position: listed[i]! };
    passedOver.push({ name, holder: allocations.holder });
    if (allocations.count < fewestCount) {
      fewest = i;
      fewestCount = allocations.count;
    }
  }
  // Every one busy: those listed after the least busy one were passed over for having more under way.
  passedOver.length = listed.length - 1 - fewest;
  return { position: listed[fewest]!, busy: { allocations: fewestCount } };
}

/** The fitting nodes' lists, sized for every candidate, cut to the `count` that fit. */
function cutTo(fit: { names: unknown[]; scores: unknown[]; rows: unknown[] }, count: number): void {
  fit.names.length = count;
  fit.scores.length = count;
  fit.rows.length = count;
}

/**
 * Keeps a value built on first read on the decision itself, in place of its accessor. Reflect: on a decision someone
 * froze, every read builds the value again instead of throwing.
 */
function keepOnDecision<T>(decision: object, key: string, value: T): T {
  Reflect.defineProperty(decision, key, { value, enumerable: true, configurable: true });
  return value;
}

/** Whether some chosen card is taken by position (see `DeviceKind.positional`). */
function takesByPosition(devices: PodDevices, state: NodeState): boolean {
  if (!state.registration.registered) return false;
  const registered = state.registration.devices;
  return devices.some((container) =>
    container.some((chosen) => {
      const device = registered.find((d) => d.id === chosen.uuid);
      return device !== undefined && (deviceKindOf(device)?.positional(device) ?? false);
    }),
  );
}

/**
 * The pod annotations of the pod's device kind (one kind per pod: see `podRequestProblems`), and the parts of cards
 * they record, which the booking keeps.
 */
function annotationsFor(
  devices: PodDevices,
  state: NodeState,
  input: DecideInput,
  initCount: number,
  requests: readonly (ContainerRequest | undefined)[],
): { podAnnotations: Record<string, string>; parts?: string } {
  const type = devices.flat()[0]?.type;
  const kind = type === undefined ? undefined : deviceKind(type);
  if (kind === undefined) return { podAnnotations: {} };
  const podAnnotations = kind.podAnnotations(devices, state, { nowMs: input.nowMs, nodeName: state.name, initCount, requests, config: input.config });
  const parts = kind.partsAnnotation === undefined ? undefined : podAnnotations[kind.partsAnnotation];
  return parts === undefined ? { podAnnotations } : { podAnnotations, parts };
}

// ---------------------------------------------------------------------------------------------
// One node (docs/hami-parity.md §4.4)

function evaluateNode(run: FitRun, state: NodeState, node: PreparedNode, outcome: NodeOutcome): void {
  const { arena, plan, trace } = run.input;
  const cards = node.cardCount;
  arena.ensure(cards);
  loadBookedUsage(arena, state, node);
  const score = nodeScore(arena, node);
  run.input.node = node;
  run.input.realtime = plan.realtime === undefined ? undefined : realtimeView(plan.realtime, state);
  if (run.input.realtime !== undefined) arena.noteAt.fill(-1, 0, cards);
  const nodeRow = trace.beginNode(state.name, node.devices, node.cardFacts, state.registrationVersion);
  run.input.nodeRow = nodeRow;

  let failure: string | undefined;
  let appCopyReady = false;
  for (let c = 0; c < plan.containers.length; c++) {
    const container = plan.containers[c]!;
    const { init, request } = container;
    if (failure !== undefined) {
      trace.addContainer(c, 'skipped');
      continue;
    }
    if (request === undefined) {
      trace.addContainer(c, 'noRequest');
      continue;
    }
    // Init containers run one after another, each on a fresh copy; app containers share one copy.
    if (init) arena.resetWorkingUsage(cards);
    else if (!appCopyReady) {
      arena.resetWorkingUsage(cards);
      appCopyReady = true;
    }
    run.input.request = request;
    const firstCard = trace.cardCount;
    failure = fitKind(run, node, container);
    if (failure !== undefined) {
      trace.addContainer(c, 'failed', failure, firstCard);
      continue;
    }
    const kind = DEVICE_KINDS[container.kindIndex]!;
    if (kind.addResourceUsage !== undefined) for (let i = 0; i < run.pickedCount && failure === undefined; i++) failure = kind.addResourceUsage(run, i);
    if (failure !== undefined) {
      trace.addContainer(c, 'failed', failure, firstCard);
      continue;
    }
    trace.addContainer(c, 'passed', undefined, firstCard);
    for (let i = 0; i < run.pickedCount; i++) {
      const p = arena.picked[i]!;
      trace.addPick(p, arena.pickedMem[i]!, arena.pickedCores[i]!, arena.pickedMaxSlots[i]!, arena.pickedMaxMem[i]!, arena.pickedMaxCores[i]!, arena.pickedExclusive[i] === 1);
      bookCard(arena, node, p, arena.pickedMem[i]!, arena.pickedCores[i]!);
    }
  }
  if (failure !== undefined) trace.nodeFailed(failure);
  else trace.nodePassed(score);
  outcome.row = nodeRow;
  outcome.score = failure === undefined ? score : 0;
  outcome.reason = failure;
}

/**
 * One container by its device kind (docs/hami-parity.md §4.4). A node without devices of the kind fails with the
 * bare `NodeInsufficientDevice`, as HAMi's `fitInDevices` answers when a request asks more devices than the node has
 * of its type (none); HAMi's `Device type not found` is for a type no device kind handles, which a planned container
 * never has. Else the kind's Fit, which checks the device count itself.
 */
function fitKind(run: FitRun, node: PreparedNode, container: PodContainer): string | undefined {
  const kind = DEVICE_KINDS[container.kindIndex];
  if (kind === undefined) return NodeFailure.DeviceTypeNotFound;
  const cards = node.cardsByKind[container.kindIndex];
  if (cards === undefined) return ReasonCode.NodeInsufficientDevice;
  run.input.kindState = node.kindState[container.kindIndex];
  return kind.fit(run, cards);
}
