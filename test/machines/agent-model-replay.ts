/**
 * Replays a path of the agent machine's model on a live actor: a real `createActor` of the agent inside the
 * supervisor stand-in, a manual clock for its timers, and scripted promise actors settled by the path.
 * After every step it checks the state against the model and the invariants the design states.
 */
import { expect } from 'vitest';
import { type Actor, type AnyActorRef, createActor } from 'xstate';
import type {
  AgentContext,
  AgentEmitted,
  AgentInput,
  AgentToSupervisorEvent,
  AnswerDegradedInput,
  CallEngineInput,
  CallOutcome,
  RunToolsInput,
} from '../../machines/agent.machine.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import type { FaultKind } from '../../src/faults/fault.ts';
import type { Turn, TurnOutcome } from '../../src/runtime/turn.ts';
import {
  AFTER_COOLING,
  AFTER_PROBE,
  ANSWER_TEXT,
  ActorScript,
  type AgentSnapshot,
  abstractState,
  agentOf,
  CALLING_INVOKE,
  CAPACITY_FAULTS,
  COOL_MS,
  contextOf,
  DEGRADED_INVOKE,
  FAKE_KEY,
  FALLBACK_INVOKE,
  FX_CALL,
  INPUT,
  type ModelEvent,
  outcomeName,
  PROBE_MS,
  stateName,
  supervisorHarness,
  T0,
  TOOLS_INVOKE,
  ioTurn,
  transitionKey,
} from './agent-model-harness.ts';

export interface PathStep {
  readonly event: ModelEvent;
  readonly state: AgentSnapshot;
}

/** The test's own bookkeeping, kept from the events it sent, never read back from the machine. */
interface Book {
  turnSeq: number;
  toolRounds: number;
  /** Faults of the current engine call (reset by a new turn and by each tool round trip). */
  stepFaults: FaultKind[];
  leaseSeq: number;
  granted: string[];
  released: string[];
  lastGrant?: { leaseId: string; endpointId: string };
  requestOpen: boolean;
  requests: Extract<AgentToSupervisorEvent, { type: 'TOKEN.REQUEST' }>[];
}

export interface Live {
  readonly clock: ManualClock;
  readonly script: ActorScript;
  readonly root: Actor<ReturnType<typeof supervisorHarness>>;
  readonly agent: AnyActorRef;
  readonly turns: Turn[];
  readonly book: Book;
  received(): readonly AgentToSupervisorEvent[];
}

/** Starts the harness with a fresh agent; records every transition the agent takes into `taken`. */
export function startLive(taken: Set<string>, input: AgentInput = INPUT): Live {
  const clock = createManualClock(T0);
  const script = new ActorScript();
  const root = createActor(supervisorHarness(script.provide(), input), {
    systemId: 'supervisor',
    clock,
    inspect: (e) => {
      if (e.type === '@xstate.microstep' && (e.actorRef as AnyActorRef).id === 'agent')
        for (const t of e._transitions) taken.add(transitionKey(t));
    },
  });
  root.start();
  const agent = agentOf(root);
  const turns: Turn[] = [];
  agent.on('turn.completed', (e: AgentEmitted) => turns.push(e.turn));
  const book: Book = {
    turnSeq: 0,
    toolRounds: 0,
    stepFaults: [],
    leaseSeq: 0,
    granted: [],
    released: [],
    requestOpen: false,
    requests: [],
  };
  return { clock, script, root, agent, turns, book, received: () => root.getSnapshot().context.received };
}

function retime(out: CallOutcome, input: CallEngineInput, at: number): CallOutcome {
  return out.ok
    ? { ...out, at, result: { ...out.result, endpoint: { ...out.result.endpoint, id: input.endpointId } } }
    : { ...out, at, fault: { ...out.fault, endpointId: input.endpointId } };
}

const isCallDone = (t: string) =>
  t === `xstate.done.actor.${CALLING_INVOKE}` || t === `xstate.done.actor.${FALLBACK_INVOKE}`;
const isCallError = (t: string) =>
  t === `xstate.error.actor.${CALLING_INVOKE}` || t === `xstate.error.actor.${FALLBACK_INVOKE}`;

/** Makes the live world do what the model event says: send the event, settle an actor, or let a timer fire. */
async function perform(live: Live, event: ModelEvent): Promise<void> {
  const { agent, clock, script, book } = live;
  const now = clock.now();
  const ctx = contextOf(agent);
  const e = event as ModelEvent & Record<string, unknown>;
  switch (e.type) {
    case 'ASK':
      book.turnSeq++;
      book.toolRounds = 0;
      book.stepFaults = [];
      agent.send({
        type: 'ASK',
        turnId: `turn-${book.turnSeq}`,
        key: `model:turn-${book.turnSeq}`,
        prompt: 'Where does EUR/USD trade this morning?',
        at: now,
      });
      return;
    case 'CANCEL':
    case 'TOKEN.DENIED':
    case 'HEALTH.STATUS':
      agent.send({ ...e, at: now });
      return;
    case 'MEMORY.SET':
      agent.send(e);
      return;
    case 'TICK':
      // The deadline is data: a TICK at the stored `coolingUntil` moves the agent on, whatever the timers do.
      agent.send({ type: 'TICK', at: ctx.turn?.coolingUntil ?? now });
      return;
    case 'TOKEN.GRANTED': {
      const leaseId = `lease-${++book.leaseSeq}`;
      book.lastGrant = { leaseId, endpointId: e.endpointId as string };
      agent.send({ ...e, leaseId, at: now });
      return;
    }
    case 'TOKEN.WAIT':
      agent.send({ ...e, until: now + COOL_MS, at: now });
      return;
    case AFTER_COOLING: {
      expect(clock.pending()).toBe(1);
      const until = ctx.turn?.coolingUntil;
      clock.runNext();
      expect(clock.now()).toBe(until);
      return;
    }
    case AFTER_PROBE:
      expect(clock.pending()).toBe(1);
      clock.runNext();
      expect(clock.now()).toBe(now + PROBE_MS);
      return;
    case `xstate.done.actor.${TOOLS_INVOKE}`:
      script.settle('runTools', (input) => {
        const { calls, turnId } = input as RunToolsInput;
        return {
          results: calls.map((call) => ({ turnId, call, result: '1.0842', isError: false })),
          at: now,
        };
      });
      book.toolRounds++;
      book.stepFaults = [];
      await ioTurn();
      return;
    case `xstate.error.actor.${TOOLS_INVOKE}`:
      script.fail('runTools', new Error(`tool host refused key ${FAKE_KEY}`));
      await ioTurn();
      return;
    case `xstate.done.actor.${DEGRADED_INVOKE}`:
      script.settle('answerDegraded', (input) => ({
        answer: {
          summary: 'EUR/USD was last quoted at 1.0842; no engine could confirm it now.',
          source: 'summary',
          reason: (input as AnswerDegradedInput).reason,
        },
        at: now,
      }));
      await ioTurn();
      return;
    case `xstate.error.actor.${DEGRADED_INVOKE}`:
      script.fail('answerDegraded', new Error(`degraded layer failed with key ${FAKE_KEY}`));
      await ioTurn();
      return;
    default:
      if (isCallDone(e.type)) {
        const out = e.output as CallOutcome;
        script.settle('callEngine', (input) => retime(out, input as CallEngineInput, now));
        if (!out.ok) book.stepFaults.push(out.fault.kind);
        await ioTurn();
        return;
      }
      if (isCallError(e.type)) {
        script.fail('callEngine', new Error(`call memo unreachable (key ${FAKE_KEY})`));
        await ioTurn();
        return;
      }
      throw new Error(`the replay does not know event ${e.type}`);
  }
}

/** How the turn must end after `event` in state `from`, or undefined if it must not end. */
function expectedOutcome(from: string, event: ModelEvent): TurnOutcome | undefined {
  const t = event.type;
  if (t === 'CANCEL') return 'cancelled';
  if (isCallDone(t)) {
    const name = outcomeName((event as { output: CallOutcome }).output);
    if (name === 'answer') return from === 'calling' ? 'answered' : 'fallback';
    if (name === 'bad_request') return 'failed';
    if (name === 'cancelled') return 'cancelled';
    return undefined;
  }
  if (
    isCallError(t) ||
    t === `xstate.error.actor.${TOOLS_INVOKE}` ||
    t === `xstate.error.actor.${DEGRADED_INVOKE}`
  )
    return 'failed';
  if (t === `xstate.done.actor.${DEGRADED_INVOKE}`) return 'degraded';
  return undefined;
}

function checkTurn(turn: Turn, outcome: TurnOutcome, event: ModelEvent, live: Live): void {
  expect(turn.outcome, `outcome after ${event.type}`).toBe(outcome);
  expect(turn.turnId).toBe(`turn-${live.book.turnSeq}`);
  expect(contextOf(live.agent).lastTurn).toEqual(turn);
  expect(JSON.stringify(turn)).not.toContain(FAKE_KEY);
  switch (outcome) {
    case 'answered':
    case 'fallback':
      expect(turn.answer.text).toBe(ANSWER_TEXT);
      expect(turn.endpointId).toBe(live.book.lastGrant?.endpointId);
      expect(turn.degraded).toBe(false);
      expect(turn.faults.map((f) => f.kind)).toEqual(expect.arrayContaining(live.book.stepFaults));
      break;
    case 'degraded':
      expect(turn.degraded).toBe(true);
      expect(turn.answer.degraded?.summary).toBe(turn.answer.text);
      expect(turn.degradedReason).toBeTruthy();
      break;
    case 'failed':
      expect(turn.answer.text).toBe('');
      expect(turn.error).toMatch(
        isCallDone(event.type) ? /^bad_request: .*no engine swap fixes this/ : /internal error/,
      );
      break;
    case 'cancelled':
      expect(turn.answer.text).toBe('');
      expect(turn.error).toBe('cancelled by the caller');
      break;
  }
}

/** What the supervisor stand-in must have received for this step, in order, and the details of each message. */
function checkMessages(
  fresh: readonly AgentToSupervisorEvent[],
  from: string,
  to: string,
  event: ModelEvent,
  before: AgentContext,
  live: Live,
): void {
  const { book } = live;
  const expected: string[] = [];
  if ((from === 'calling' || from === 'fallback') && to !== from) expected.push('TOKEN.RELEASE');
  if (from === 'queued' && event.type === 'CANCEL') expected.push('TOKEN.WITHDRAW');
  if (to === 'queued' && from !== 'queued') expected.push('TOKEN.REQUEST');
  if (to === 'degraded.checking' && from !== 'degraded.checking') expected.push('HEALTH.CHECK');
  expect(
    fresh.map((m) => m.type),
    `messages to the supervisor on ${from} --${event.type}--> ${to}`,
  ).toEqual(expected);

  if (from === 'queued' && to !== 'queued') {
    expect(book.requestOpen, 'a request is open while queued').toBe(true);
    book.requestOpen = false;
  }
  for (const m of fresh) {
    expect(m.agent).toBe('model');
    switch (m.type) {
      case 'TOKEN.RELEASE':
        expect(m.leaseId).toBe(before.turn?.leaseId);
        expect(book.granted).toContain(m.leaseId);
        expect(book.released, `lease ${m.leaseId} released twice`).not.toContain(m.leaseId);
        book.released.push(m.leaseId);
        expect(m.reservedTokens).toBeGreaterThan(0);
        if (event.type === 'CANCEL')
          expect(m.outcome).toMatchObject({ ok: false, fault: { kind: 'cancelled' } });
        else if (isCallDone(event.type))
          expect(m.outcome.ok).toBe((event as { output: CallOutcome }).output.ok);
        else expect(m.outcome.ok).toBe(false);
        break;
      case 'TOKEN.REQUEST': {
        expect(book.requestOpen, 'a second request while one is open').toBe(false);
        book.requestOpen = true;
        book.requests.push(m);
        const last = book.stepFaults[book.stepFaults.length - 1];
        expect(m.attempt).toBe(book.stepFaults.length);
        // A re-attempt after a capacity fault goes to another endpoint: a fallback, never charged as a retry.
        expect(m.retry, `retry flag after [${book.stepFaults.join(', ')}]`).toBe(
          last !== undefined && !CAPACITY_FAULTS.has(last),
        );
        expect(m).toMatchObject({ tier: 'analysis', chain: 'premium', maxWaitMs: INPUT.settings.maxWaitMs });
        expect(m.estimatedTokens).toBeGreaterThan(INPUT.settings.maxTokens);
        break;
      }
      case 'TOKEN.WITHDRAW':
        book.requestOpen = false;
        break;
      case 'HEALTH.CHECK':
        expect(m.chain).toBe('premium');
        break;
    }
  }
}

/** The invariants of every state: who holds a lease, which timers are armed, what the actors got. */
function checkInvariants(to: string, from: string, event: ModelEvent, live: Live): void {
  const { agent, clock, script, book } = live;
  const ctx = contextOf(agent);
  const t = ctx.turn;
  if (to === 'calling' || to === 'fallback') {
    expect(t?.leaseId, `${to} holds its lease`).toBe(book.lastGrant?.leaseId);
    expect(t?.endpointId).toBe(book.lastGrant?.endpointId);
    expect(t?.coolingUntil).toBeUndefined();
    if (from !== to) {
      book.granted.push(t!.leaseId!);
      const input = script.current('callEngine').input as CallEngineInput;
      expect(input.endpointId).toBe(book.lastGrant?.endpointId);
      expect(input.request.idempotencyKey).toBe(`model:turn-${book.turnSeq}:call${book.toolRounds}`);
    }
  } else {
    expect(t?.leaseId, `${to} holds no lease`).toBeUndefined();
    expect(script.inFlight('callEngine'), `${to} has no engine call in flight`).toBe(0);
  }
  if (to === 'idle' || to === 'degraded.resting' || to === 'degraded.checking') expect(t).toBeNull();
  else expect(t?.turnId).toBe(`turn-${book.turnSeq}`);
  if (to === 'cooling') {
    expect(t?.coolingUntil, 'cooling keeps its deadline in context').toBeDefined();
    expect(t?.coolingFrom).toBeDefined();
  }
  // The only timers are the two `after`s; leaving their state disarms them.
  expect(clock.pending()).toBe(to === 'cooling' || to === 'degraded.resting' ? 1 : 0);
  if (to === 'tools' && from !== 'tools')
    expect((script.current('runTools').input as RunToolsInput).calls).toEqual([FX_CALL]);
  if (to === 'degraded.answering' && from !== to) {
    const { reason } = script.current('answerDegraded').input as AnswerDegradedInput;
    if (event.type === 'TOKEN.DENIED') expect(reason).toBe((event as { reason: string }).reason);
    else
      expect(reason).toMatch(new RegExp(`^gave up after ${INPUT.settings.maxAttempts} attempts; last fault`));
  }
  if (event.type === 'MEMORY.SET') expect(ctx.memory.slots).toMatchObject({ desk: 'fx', focus: 'rates' });
}

/**
 * Replays `steps` (a model path; step 0 is `xstate.init`) on `live`, checking every step. Returns nothing:
 * every check is an `expect`.
 */
export async function replay(live: Live, steps: readonly PathStep[]): Promise<void> {
  for (const [i, step] of steps.entries()) {
    if (i === 0 && step.event.type === 'xstate.init') continue;
    const before = contextOf(live.agent);
    const from = stateName(live.agent.getSnapshot().value);
    const seen = live.received().length;
    const finished = live.turns.length;
    await perform(live, step.event);
    const snap = live.agent.getSnapshot() as AgentSnapshot;
    const to = stateName(snap.value);
    const where = `step ${i}: ${from} --${step.event.type}--> ${to}`;
    expect(snap.status, where).toBe('active');
    expect(live.root.getSnapshot().status, where).toBe('active');
    expect(abstractState(snap), where).toBe(abstractState(step.state));
    checkMessages(live.received().slice(seen), from, to, step.event, before, live);
    checkInvariants(to, from, step.event, live);
    const outcome = expectedOutcome(from, step.event);
    const ended = live.turns.slice(finished);
    expect(
      ended.map((t) => t.outcome),
      where,
    ).toEqual(outcome ? [outcome] : []);
    if (outcome) checkTurn(ended[0]!, outcome, step.event, live);
  }
  // Balance: every lease granted was released exactly once, except the one a calling agent still holds.
  const end = stateName(live.agent.getSnapshot().value);
  const holding = end === 'calling' || end === 'fallback' ? [live.book.lastGrant!.leaseId] : [];
  expect([...live.book.released, ...holding].sort()).toEqual([...live.book.granted].sort());
  expect(live.book.requestOpen).toBe(end === 'queued');
}
