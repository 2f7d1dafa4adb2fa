/**
 * Replays a path of the agent machine's model on a live actor: a real `createActor` of the agent (a root actor,
 * as the runtime runs it), a manual clock for its `wakeAt` timers, and scripted actors settled by the path.
 * After every step it checks the state against the model and the invariants the design states.
 */
import { expect } from 'vitest';
import { type Actor, type AnyActorRef, createActor } from 'xstate';
import type {
  AcquireTokenInput,
  AgentEmitted,
  AgentInput,
  AnswerDegradedInput,
  CallEngineInput,
  CallOutcome,
  CheckHealthInput,
  RunToolsInput,
  TokenAnswer,
} from '../../machines/agent.machine.ts';
import { type GrantedAnswer, turnOfAsk } from '../../machines/agent.machine.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import type { FaultKind } from '../../src/core/fault.ts';
import type { Turn, TurnOutcome } from '../../src/core/turn.ts';
import {
  ANSWER_TEXT,
  ActorScript,
  type AgentSnapshot,
  abstractState,
  CAPACITY_FAULTS,
  CHECKING_INVOKE,
  COOL_MS,
  contextOf,
  DEGRADED_INVOKE,
  FAKE_KEY,
  FX_CALL,
  INPUT,
  ioTurn,
  type ModelEvent,
  outcomeName,
  PROBE_MS,
  stateName,
  TOOLS_INVOKE,
  T0,
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
  /** The endpoint each of `stepFaults` came from (the grant its call spent). */
  stepEndpoints: string[];
  leaseSeq: number;
  granted: string[];
  /** Leases an engine call was started with (each grant must be spent by exactly one call). */
  spent: string[];
  lastGrant?: { leaseId: string; endpointId: string };
  requests: AcquireTokenInput[];
}

export interface Live {
  readonly clock: ManualClock;
  readonly script: ActorScript;
  readonly agent: Actor<ReturnType<ActorScript['provide']>>;
  readonly turns: Turn[];
  readonly book: Book;
}

/** Starts a fresh agent; records every transition it takes into `taken`. */
export function startLive(taken: Set<string>, input: AgentInput = INPUT): Live {
  const clock = createManualClock(T0);
  const script = new ActorScript();
  const agent = createActor(script.provide(clock), {
    id: 'agent',
    input,
    clock,
    inspect: (e) => {
      if (e.type === '@xstate.microstep' && (e.actorRef as AnyActorRef).id === 'agent')
        for (const t of e._transitions) taken.add(transitionKey(t));
    },
  });
  agent.start();
  const turns: Turn[] = [];
  agent.on('turn.completed', (e: AgentEmitted) => turns.push(e.turn));
  const book: Book = {
    turnSeq: 0,
    toolRounds: 0,
    stepFaults: [],
    stepEndpoints: [],
    leaseSeq: 0,
    granted: [],
    spent: [],
    requests: [],
  };
  return { clock, script, agent, turns, book };
}

function retime(out: CallOutcome, input: CallEngineInput, at: number): CallOutcome {
  return out.ok
    ? { ...out, at, result: { ...out.result, endpoint: { ...out.result.endpoint, id: input.endpointId } } }
    : { ...out, at, fault: { ...out.fault, endpointId: input.endpointId } };
}

const is = (t: string, kind: 'done' | 'error', ...invokes: string[]) =>
  invokes.some((i) => t === `xstate.${kind}.actor.${i}`);

/** Makes the live world do what the model event says: send the event, settle an actor, or let a timer fire. */
async function perform(live: Live, event: ModelEvent): Promise<void> {
  const { agent, clock, script, book } = live;
  const now = clock.now();
  const ctx = contextOf(agent);
  const e = event as ModelEvent & Record<string, unknown>;
  if (e.type === 'ASK') {
    book.turnSeq++;
    book.toolRounds = 0;
    book.stepFaults = [];
    book.stepEndpoints = [];
    const ask = {
      type: 'ASK' as const,
      turnId: `turn-${book.turnSeq}`,
      key: `model:turn-${book.turnSeq}`,
      prompt: 'Where does EUR/USD trade this morning?',
      at: now,
    };
    const ready = (e as { ready?: { grant: GrantedAnswer } }).ready;
    if (!ready) agent.send(ask);
    else {
      // The runtime took the first call's token before the ASK (as `grantAtOnce` does).
      const answer = ready.grant;
      const leaseId = `lease-${++book.leaseSeq}`;
      book.lastGrant = { leaseId, endpointId: answer.endpointId };
      book.granted.push(leaseId);
      agent.send({ ...ask, ready: { grant: { ...answer, leaseId, at: now }, turn: turnOfAsk(ask) } });
    }
  } else if (e.type === 'CANCEL') agent.send({ type: 'CANCEL', at: now });
  else if (e.type === 'RECHECK') agent.send({ type: 'RECHECK', at: now });
  else if (e.type === 'MEMORY.SET') agent.send(e as never);
  else if (e.type === 'TOKEN.ANSWER') {
    const answer = e.output as TokenAnswer;
    script.settle('acquireToken', () => {
      if (answer.kind === 'granted') {
        const leaseId = `lease-${++book.leaseSeq}`;
        book.lastGrant = { leaseId, endpointId: answer.endpointId };
        book.granted.push(leaseId);
        return { ...answer, leaseId, at: now };
      }
      return answer.kind === 'cool' ? { ...answer, until: now + COOL_MS, at: now } : { ...answer, at: now };
    });
  } else if (e.type === 'TOKEN.FAILED')
    script.fail('acquireToken', new Error(`scheduler failed near key ${FAKE_KEY}`));
  else if (e.type === 'WAKE') {
    // The deadline is data: the timer fires exactly at the instant stored in context.
    expect(clock.pending()).toBe(1);
    const at = agent.getSnapshot().matches('cooling') ? ctx.turn?.coolingUntil : ctx.recheckAt;
    clock.runNext();
    expect(clock.now()).toBe(at);
  } else if (is(e.type, 'done', CHECKING_INVOKE)) {
    const { healthy } = e.output as { healthy: boolean };
    script.settle('checkHealth', () => ({ healthy, at: now }));
    await ioTurn();
  } else if (is(e.type, 'error', CHECKING_INVOKE)) {
    script.fail('checkHealth', new Error('health check failed'));
    await ioTurn();
  } else if (is(e.type, 'done', TOOLS_INVOKE)) {
    script.settle('runTools', (input) => {
      const { calls, turnId } = input as RunToolsInput;
      return { results: calls.map((call) => ({ turnId, call, result: '1.0842', isError: false })), at: now };
    });
    book.toolRounds++;
    book.stepFaults = [];
    book.stepEndpoints = [];
    await ioTurn();
  } else if (is(e.type, 'error', TOOLS_INVOKE)) {
    script.fail('runTools', new Error(`tool host refused key ${FAKE_KEY}`));
    await ioTurn();
  } else if (is(e.type, 'done', DEGRADED_INVOKE)) {
    script.settle('answerDegraded', (input) => ({
      answer: {
        summary: 'EUR/USD was last quoted at 1.0842; no engine could confirm it now.',
        source: 'summary',
        reason: (input as AnswerDegradedInput).reason,
      },
      at: now,
    }));
    await ioTurn();
  } else if (is(e.type, 'error', DEGRADED_INVOKE)) {
    script.fail('answerDegraded', new Error(`degraded layer failed with key ${FAKE_KEY}`));
    await ioTurn();
  } else if (e.type === 'CALL.DONE') {
    const out = e.output as CallOutcome;
    script.settle('callEngine', (input) => retime(out, input as CallEngineInput, now));
    if (!out.ok && !out.leaseLost) {
      book.stepFaults.push(out.fault.kind);
      book.stepEndpoints.push(book.lastGrant!.endpointId);
    }
  } else if (e.type === 'CALL.FAILED')
    script.fail('callEngine', new Error(`call memo unreachable (key ${FAKE_KEY})`));
  else throw new Error(`the replay does not know event ${e.type}`);
}

/** How the turn must end after `event` in state `from`, or undefined if it must not end. */
function expectedOutcome(from: string, event: ModelEvent): TurnOutcome | undefined {
  const t = event.type;
  if (t === 'CANCEL') return 'cancelled';
  if (t === 'CALL.DONE') {
    const name = outcomeName((event as { output: CallOutcome }).output);
    if (name === 'answer') return from === 'calling' ? 'answered' : 'fallback';
    if (name === 'bad_request') return 'failed';
    if (name === 'cancelled') return 'cancelled';
    return undefined;
  }
  if (t === 'CALL.FAILED' || t === 'TOKEN.FAILED' || is(t, 'error', TOOLS_INVOKE, DEGRADED_INVOKE))
    return 'failed';
  if (is(t, 'done', DEGRADED_INVOKE)) return 'degraded';
  return undefined;
}

function checkTurn(turn: Turn, outcome: TurnOutcome, event: ModelEvent, live: Live): void {
  expect(turn.outcome, `outcome after ${event.type}`).toBe(outcome);
  expect(turn.turnId).toBe(`turn-${live.book.turnSeq}`);
  expect(contextOf(live.agent).lastTurn).toEqual(turn);
  // A raw error's text never reaches a turn: only the runtime's sanitized one could.
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
        event.type === 'CALL.DONE'
          ? /^bad_request: .*no engine swap fixes this/
          : /^internal error in agent model: Error \(details are in the log\); this is a bug/,
      );
      break;
    case 'cancelled':
      expect(turn.answer.text).toBe('');
      expect(turn.error).toBe('cancelled by the caller');
      break;
  }
}

/** What the agent asked of its actors in this step: a token when it queued, a call with its grant, a health check. */
function checkRequests(
  started: readonly { kind: string; input: unknown }[],
  from: string,
  to: string,
  event: ModelEvent,
  live: Live,
): void {
  const { book, script } = live;
  const expected: string[] = [];
  if (to === 'queued' && from !== 'queued') expected.push('acquireToken');
  if ((to === 'calling' || to === 'fallback') && from !== to) expected.push('callEngine');
  if (to === 'tools' && from !== 'tools') expected.push('runTools');
  if (to === 'degraded.answering' && from !== to) expected.push('answerDegraded');
  if (to === 'degraded.checking' && from !== to) expected.push('checkHealth');
  expect(
    started.map((s) => s.kind),
    `actors started on ${from} --${event.type}--> ${to}`,
  ).toEqual(expected);
  // Leaving a state stops its actor: a token request withdrawn, a call aborted (its grant released by the runtime).
  if (event.type === 'CANCEL' && (from === 'queued' || from === 'calling' || from === 'fallback'))
    expect(script.aborted.at(-1)).toBe(from === 'queued' ? 'acquireToken' : 'callEngine');
  for (const s of started) {
    if (s.kind === 'acquireToken') {
      const r = s.input as AcquireTokenInput;
      book.requests.push(r);
      const last = book.stepFaults[book.stepFaults.length - 1];
      expect(r.attempt).toBe(book.stepFaults.length);
      // A re-attempt after a capacity fault goes to another endpoint: a fallback, never charged as a retry.
      expect(r.retry, `retry flag after [${book.stepFaults.join(', ')}]`).toBe(
        last !== undefined && !CAPACITY_FAULTS.has(last),
      );
      // Which endpoints the step failed on, and where it must not go: those its request is too large for, and
      // once its attempts are spent every one it tried (it goes on only to endpoints it never tried).
      const tried = [...new Set(book.stepEndpoints)];
      const spent = book.stepFaults.length >= INPUT.settings.maxAttempts;
      const skip = [
        ...new Set(book.stepEndpoints.filter((_, i) => spent || book.stepFaults[i] === 'request_too_large')),
      ];
      expect(r.tried, `tried after [${book.stepFaults.join(', ')}]`).toEqual(
        tried.length ? tried : undefined,
      );
      expect(r.skip, `skip after [${book.stepFaults.join(', ')}]`).toEqual(skip.length ? skip : undefined);
      expect(r).toMatchObject({
        agent: 'model',
        tier: 'analysis',
        chain: 'premium',
        maxWaitMs: INPUT.settings.maxWaitMs,
      });
      expect(r.prompt.idempotencyKey).toBe(`model:turn-${book.turnSeq}:call${book.toolRounds}`);
      expect(r.prompt.maxTokens).toBe(INPUT.settings.maxTokens);
    }
    if (s.kind === 'callEngine') {
      const c = s.input as CallEngineInput;
      expect(c.leaseId).toBe(book.lastGrant?.leaseId);
      expect(c.endpointId).toBe(book.lastGrant?.endpointId);
      expect(book.spent, `lease ${c.leaseId} spent twice`).not.toContain(c.leaseId);
      book.spent.push(c.leaseId);
      expect(c.prompt.idempotencyKey).toBe(`model:turn-${book.turnSeq}:call${book.toolRounds}`);
    }
    if (s.kind === 'checkHealth') expect((s.input as CheckHealthInput).chain).toBe('premium');
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
    expect(script.inFlight('callEngine')).toBe(1);
  } else {
    expect(t?.leaseId, `${to} holds no lease`).toBeUndefined();
    expect(script.inFlight('callEngine'), `${to} has no engine call in flight`).toBe(0);
  }
  expect(script.inFlight('acquireToken'), 'a token is asked for only while queued').toBe(
    to === 'queued' ? 1 : 0,
  );
  if (to === 'idle' || to === 'degraded.resting' || to === 'degraded.checking') expect(t).toBeNull();
  else expect(t?.turnId).toBe(`turn-${book.turnSeq}`);
  if (to === 'cooling') expect(t?.coolingUntil, 'cooling keeps its deadline in context').toBeDefined();
  if (to === 'degraded.resting') expect(ctx.recheckAt, 'resting keeps its deadline in context').toBeDefined();
  // The only timers are the two `wakeAt`s; leaving their state disarms them.
  expect(clock.pending()).toBe(to === 'cooling' || to === 'degraded.resting' ? 1 : 0);
  if (to === 'tools' && from !== 'tools')
    expect((script.current('runTools').input as RunToolsInput).calls).toEqual([FX_CALL]);
  if (to === 'degraded.answering' && from !== to) {
    const { reason } = script.current('answerDegraded').input as AnswerDegradedInput;
    // Denied with the step's attempts spent: they are the reason; else the scheduler's.
    if (book.stepFaults.length < INPUT.settings.maxAttempts) expect(reason).toMatch(/beyond max wait/);
    else
      expect(reason).toMatch(
        new RegExp(
          `^gave up after ${book.stepFaults.length} attempts; last fault ${book.stepFaults.at(-1)}$`,
        ),
      );
  }
  // The next check is one probe interval after the degraded turn ended (now, unless its answer failed unstamped).
  if (to === 'degraded.resting' && from === 'degraded.answering')
    expect(ctx.recheckAt).toBe(ctx.lastTurn!.finishedAt + PROBE_MS);
  if (to === 'degraded.resting' && is(event.type, 'done', DEGRADED_INVOKE))
    expect(ctx.lastTurn!.finishedAt).toBe(clock.now());
  if (event.type === 'MEMORY.SET') expect(ctx.memory.slots).toMatchObject({ desk: 'fx', focus: 'rates' });
}

/**
 * Replays `steps` (a model path; step 0 is `xstate.init`) on `live`, checking every step. Returns nothing:
 * every check is an `expect`.
 */
export async function replay(live: Live, steps: readonly PathStep[]): Promise<void> {
  for (const [i, step] of steps.entries()) {
    if (i === 0 && step.event.type === 'xstate.init') continue;
    const from = stateName(live.agent.getSnapshot().value);
    const startedBefore = live.script.started.length;
    const finished = live.turns.length;
    await perform(live, step.event);
    const snap = live.agent.getSnapshot() as AgentSnapshot;
    const to = stateName(snap.value);
    const where = `step ${i}: ${from} --${step.event.type}--> ${to}`;
    expect(snap.status, where).toBe('active');
    expect(abstractState(snap), where).toBe(abstractState(step.state));
    checkRequests(live.script.started.slice(startedBefore), from, to, step.event, live);
    checkInvariants(to, from, step.event, live);
    const outcome = expectedOutcome(from, step.event);
    const ended = live.turns.slice(finished);
    expect(
      ended.map((t) => t.outcome),
      where,
    ).toEqual(outcome ? [outcome] : []);
    if (outcome) checkTurn(ended[0]!, outcome, step.event, live);
  }
  // Balance: every grant was spent by exactly one engine call.
  expect([...live.book.spent].sort()).toEqual([...live.book.granted].sort());
}
