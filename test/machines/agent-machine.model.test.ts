import { describe, expect, it } from 'vitest';
import { type ActorLogic, createActor, initialTransition } from 'xstate';
import { TestModel } from 'xstate/graph';
import { type AgentEvent, type AgentInput, agentMachine } from '../../machines/agent.machine.ts';
import { createManualClock } from '../../src/clock/clock.ts';
import {
  ActorScript,
  type AgentSnapshot,
  abstractState,
  type CallOutcomeName,
  contextOf,
  definedTransitions,
  ev,
  INPUT,
  MAX_ATTEMPTS,
  type ModelEvent,
  modelEvents,
  serializeEvent,
  stateName,
  T0,
} from './agent-model-harness.ts';
import { type Live, type PathStep, replay, startLive } from './agent-model-replay.ts';

// createTestModel() refuses machines with invokes and `after`; TestModel itself walks any actor logic.
const traversal = {
  events: modelEvents as unknown as (s: AgentSnapshot) => AgentEvent[],
  // Only events the state handles (guards included): the rest would be self-loops that test nothing.
  filterEvents: (s: AgentSnapshot, e: AgentEvent) => s.can(e),
  serializeEvent: serializeEvent as (e: AgentEvent) => string,
  input: INPUT,
};
// Each vertex is a transition (state reached, by which event, from where): shortest paths to every vertex
// take every edge of the abstract graph, not only every state.
const model = new TestModel(agentMachine as unknown as ActorLogic<AgentSnapshot, AgentEvent, AgentInput>, {
  ...traversal,
  serializeState: (s: AgentSnapshot, e: AgentEvent | undefined, prev?: AgentSnapshot) =>
    `${abstractState(s)}${e && prev ? ` via ${serializeEvent(e)} from ${abstractState(prev)}` : ''}`,
});

const describePath = (steps: readonly { event: unknown }[]) =>
  steps
    .slice(1)
    .map((s) => serializeEvent(s.event as ModelEvent))
    .join(' → ');

async function run(steps: readonly PathStep[], taken = new Set<string>()): Promise<Live> {
  const live = startLive(taken);
  try {
    await replay(live, steps);
  } catch (e) {
    (e as Error).message += `\n  path: ${describePath(steps)}`;
    live.agent.stop();
    throw e;
  }
  return live;
}

/** The model path of an exact event sequence (throws if the machine does not handle one of them). */
function pathOf(events: ModelEvent[]): PathStep[] {
  const [path] = model.getPathsFromEvents(events as unknown as AgentEvent[], {
    ...traversal,
    fromState: initialTransition(agentMachine, INPUT)[0],
    serializeState: abstractState,
  });
  if (!path) throw new Error('no path');
  return path.steps as unknown as PathStep[];
}

const called = (name: CallOutcomeName) => ev.called(name);
const calledBackup = (name: CallOutcomeName) => ev.called(name);

describe('agent machine — model-based, every transition replayed on a live actor', () => {
  it('the shortest paths to every transition take every transition the definition declares', async () => {
    const declared = definedTransitions(agentMachine);
    // Guards and targets spelled out, so a changed chart shows up here by name.
    // A failed attempt queues again whatever the count: spent attempts make its token request skip every endpoint it
    // tried, and only the scheduler's denial (no untried endpoint left) answers degraded.
    expect(declared).toContain('agent.calling --CALL.DONE#4--> agent.queued');
    expect(declared.filter((k) => k.includes('--CALL.DONE') && k.endsWith('agent.degraded'))).toEqual([]);
    expect(declared).toContain('agent.cooling --WAKE#0--> agent.queued');
    expect(declared).toContain('agent.queued --TOKEN.ANSWER#2 [mustCool]--> agent.cooling');
    expect(declared).toContain('agent --MEMORY.SET#0--> (stays)');

    const paths = model.getShortestPaths();
    const reached = new Set(paths.map((p) => stateName(p.state.value)));
    expect(reached).toEqual(
      new Set([
        'idle',
        'queued',
        'calling',
        'fallback',
        'tools',
        'cooling',
        'degraded.answering',
        'degraded.resting',
        'degraded.checking',
      ]),
    );
    const taken = new Set<string>();
    for (const path of paths) (await run(path.steps as unknown as PathStep[], taken)).agent.stop();
    const missing = declared.filter((k) => !taken.has(k));
    expect(missing, 'transitions no replayed path took').toEqual([]);
    expect(paths.length).toBeGreaterThan(declared.length);
  });

  it('every simple path of one turn through capacity and transient faults, cooling and fallback ends answered', async () => {
    const allowed = (e: AgentEvent) => {
      const x = e as ModelEvent & {
        output?: { ok: boolean; fault?: { kind: string }; result?: { toolCalls: [] } };
      };
      if (x.type === 'ASK' || x.type === 'WAKE') return true;
      if (x.type === 'TOKEN.ANSWER') return (x.output as unknown as { kind: string }).kind !== 'denied';
      if (x.type !== 'CALL.DONE') return false;
      return x.output?.ok
        ? x.output.result?.toolCalls.length === 0
        : ['rate_limited', 'overloaded'].includes(x.output?.fault?.kind ?? '');
    };
    const paths = model.getSimplePaths({
      ...traversal,
      filterEvents: (s, e) => allowed(e) && s.can(e),
      serializeState: (s: AgentSnapshot) => `${abstractState(s)} ${s.context.lastTurn?.outcome ?? ''}`,
      // A step's attempts spent (where the agent used to answer degraded at once) ends a path too: past it the agent
      // goes on only to endpoints it never tried, which the scripted scheduler does not model (the scripted turns do).
      stopWhen: (s: AgentSnapshot) =>
        s.context.lastTurn !== undefined ||
        s.matches('degraded') ||
        (s.context.turn?.stepAttempts ?? 0) >= MAX_ATTEMPTS,
      toState: (s: AgentSnapshot) => s.context.lastTurn !== undefined,
    });
    const outcomes = new Map<string, number>();
    for (const path of paths) {
      const live = await run(path.steps as unknown as PathStep[]);
      const [turn] = live.turns;
      outcomes.set(turn!.outcome, (outcomes.get(turn!.outcome) ?? 0) + 1);
      // Every fault was an upstream attempt and one more answered, and the answer says which endpoint gave it.
      expect(turn!.attempts).toBe(turn!.faults.length + 1);
      expect(['primary', 'backup']).toContain(turn!.endpointId);
      live.agent.stop();
    }
    expect([...outcomes.keys()].sort()).toEqual(['answered', 'fallback']);
    expect(paths.length).toBeGreaterThanOrEqual(20);
  });
});

describe('agent machine — scripted turns', () => {
  it('success on the primary: answered, one lease granted and released with the outcome', async () => {
    const live = await run(pathOf([ev.ask(), ev.grant(0), called('answer')]));
    const [turn] = live.turns;
    expect(turn).toMatchObject({ outcome: 'answered', endpointId: 'primary', attempts: 1, faults: [] });
    expect(live.script.started.map((a) => a.kind)).toEqual(['acquireToken', 'callEngine']);
    expect(live.book.spent).toEqual(['lease-1']);
    expect(contextOf(live.agent).memory.utterances.map((u) => u.endpointId)).toEqual(['primary']);
    live.agent.stop();
  });

  it('success on a later endpoint of the chain: outcome fallback', async () => {
    const live = await run(pathOf([ev.ask(), ev.grant(1), calledBackup('answer')]));
    expect(live.turns[0]).toMatchObject({ outcome: 'fallback', endpointId: 'backup' });
    live.agent.stop();
  });

  it('tool calls then success: the tool result goes into the next request and into memory', async () => {
    const live = await run(
      pathOf([ev.ask(), ev.grant(0), called('tools'), ev.toolsDone(), ev.grant(0), called('answer')]),
    );
    const [turn] = live.turns;
    expect(turn!.outcome).toBe('answered');
    expect(turn!.messages.map((m) => m.role)).toEqual(['tool_call', 'tool_result']);
    const second = live.script.started.filter((s) => s.kind === 'callEngine')[1]!.input as {
      prompt: { idempotencyKey: string; turnMessages: { role: string; content?: string }[] };
    };
    expect(second.prompt.idempotencyKey).toBe('model:turn-1:call1');
    expect(second.prompt.turnMessages.at(-1)).toMatchObject({ role: 'tool_result', content: '1.0842' });
    expect(contextOf(live.agent).memory.toolResults).toHaveLength(1);
    // The tool round trip starts a new step: its first request is not a retry either.
    expect(live.book.requests.map((r) => [r.attempt, r.retry])).toEqual([
      [0, false],
      [0, false],
    ]);
    live.agent.stop();
  });

  it('a transient fault is retried and charged as a retry; a capacity fault falls back uncharged', async () => {
    const transient = await run(
      pathOf([ev.ask(), ev.grant(0), called('overloaded'), ev.grant(0), called('answer')]),
    );
    expect(transient.book.requests.map((r) => [r.attempt, r.retry])).toEqual([
      [0, false],
      [1, true],
    ]);
    expect(transient.turns[0]).toMatchObject({ outcome: 'answered', attempts: 2 });
    transient.agent.stop();

    const capacity = await run(
      pathOf([ev.ask(), ev.grant(0), called('rate_limited'), ev.grant(1), calledBackup('answer')]),
    );
    expect(capacity.book.requests.map((r) => [r.attempt, r.retry])).toEqual([
      [0, false],
      [1, false],
    ]);
    expect(capacity.turns[0]).toMatchObject({ outcome: 'fallback', endpointId: 'backup' });
    expect(capacity.turns[0]!.faults.map((f) => f.kind)).toEqual(['rate_limited']);
    capacity.agent.stop();
  });

  it('attempts spent while the chain has an endpoint never tried: the agent goes on to it, and it answers', async () => {
    const live = await run(
      pathOf([
        ev.ask(),
        ev.grant(0),
        called('overloaded'),
        ev.grant(0),
        called('overloaded'),
        ev.grant(1),
        calledBackup('answer'),
      ]),
    );
    expect(live.turns[0]).toMatchObject({ outcome: 'fallback', endpointId: 'backup', attempts: 3 });
    // The third request, past maxAttempts (2), may go only where the step never went.
    expect(live.book.requests.map((r) => [r.attempt, r.retry, r.tried, r.skip])).toEqual([
      [0, false, undefined, undefined],
      [1, true, ['primary'], undefined],
      [2, true, ['primary'], ['primary']],
    ]);
    live.agent.stop();
  });

  it('a request too large for an endpoint: not final, the next request skips that endpoint', async () => {
    const live = await run(
      pathOf([ev.ask(), ev.grant(0), called('request_too_large'), ev.grant(1), calledBackup('answer')]),
    );
    expect(live.turns[0]).toMatchObject({ outcome: 'fallback', endpointId: 'backup', attempts: 2 });
    expect(live.turns[0]!.faults.map((f) => [f.kind, f.endpointId])).toEqual([
      ['request_too_large', 'primary'],
    ]);
    expect(live.book.requests[1]).toMatchObject({ attempt: 1, tried: ['primary'], skip: ['primary'] });
    live.agent.stop();
  });

  it('a bad request ends the turn failed with a clear error; its one grant was spent by its one call', async () => {
    const live = await run(pathOf([ev.ask(), ev.grant(0), called('bad_request')]));
    expect(live.turns[0]!.error).toMatch(/^bad_request: .* no engine swap fixes this/);
    expect(live.agent.getSnapshot().value).toBe('idle');
    expect(live.book.spent).toEqual(live.book.granted);
    live.agent.stop();
  });

  it('attempts exhausted: answers degraded, labelled, then returns to idle when its chain is healthy', async () => {
    const degraded = await run(
      pathOf([
        ev.ask(),
        ev.grant(0),
        called('overloaded'),
        ev.grant(1),
        calledBackup('overloaded'),
        ev.denied(),
        ev.degradedDone(),
        ev.woke(),
        ev.health(false),
        ev.woke(),
        ev.health(true),
      ]),
    );
    const [turn] = degraded.turns;
    expect(turn).toMatchObject({ outcome: 'degraded', degraded: true, attempts: 2 });
    expect(turn!.degradedReason).toBe('gave up after 2 attempts; last fault overloaded');
    // With its attempts spent the agent still asked, for an endpoint it never tried only; none was left.
    expect(degraded.book.requests.map((r) => [r.attempt, r.tried, r.skip])).toEqual([
      [0, undefined, undefined],
      [1, ['primary'], undefined],
      [2, ['primary', 'backup'], ['primary', 'backup']],
    ]);
    expect(degraded.script.started.filter((a) => a.kind === 'checkHealth')).toHaveLength(2);
    expect(degraded.agent.getSnapshot().value).toBe('idle');
    degraded.agent.stop();
  });

  it('cancelled: by the caller while queued or calling (its actor stopped), or by the engine call itself', async () => {
    const whileQueued = await run(pathOf([ev.ask(), ev.cancel()]));
    expect(whileQueued.turns[0]!.outcome).toBe('cancelled');
    // The token request is withdrawn through the acquire actor's abort signal: nothing is left queued.
    expect(whileQueued.script.aborted).toEqual(['acquireToken']);
    whileQueued.agent.stop();

    const byCaller = await run(pathOf([ev.ask(), ev.grant(0), ev.cancel()]));
    expect(byCaller.turns[0]!.outcome).toBe('cancelled');
    // The call's abort signal fires: the runtime's callEngine aborts the request and releases the grant.
    expect(byCaller.script.aborted).toEqual(['callEngine']);
    byCaller.agent.stop();

    const byCall = await run(pathOf([ev.ask(), ev.grant(1), calledBackup('cancelled')]));
    expect(byCall.turns[0]!.outcome).toBe('cancelled');
    byCall.agent.stop();
  });

  it('an engine call that throws (a bug, a broken call memo) ends the turn failed, without quoting the raw error', async () => {
    const live = await run(pathOf([ev.ask(), ev.grant(0), ev.callThrew(), ev.ask()]));
    expect(live.turns[0]!.outcome).toBe('failed');
    expect(live.turns[0]!.error).toMatch(/internal error in agent model: .*this is a bug/);
    expect(live.book.spent).toEqual(['lease-1']);
    // The agent is still alive and takes the next turn.
    expect(live.agent.getSnapshot().value).toBe('queued');
    live.agent.stop();
  });
});

describe('agent machine — restored from a persisted snapshot', () => {
  it('a cooling agent restored from JSON wakes by itself at its stored deadline and asks for a token again', async () => {
    const live = await run(pathOf([ev.ask(), ev.grant(0), called('rate_limited'), ev.wait()]));
    const cooling = contextOf(live.agent).turn!;
    expect(cooling.coolingUntil).toBe(T0 + 5_000);
    const json = JSON.stringify(live.agent.getPersistedSnapshot());
    live.agent.stop();

    // A new process, 2 s later: the deadline is absolute, so 3 s of cooling are left.
    const clock = createManualClock(T0 + 2_000);
    const script = new ActorScript();
    const agent = createActor(script.provide(clock), {
      clock,
      input: INPUT,
      snapshot: JSON.parse(json),
    }).start();
    expect(agent.getSnapshot().value).toBe('cooling');
    expect(contextOf(agent).turn).toEqual(cooling);
    // The invoked `wakeAt` re-ran on restore: one timer, armed for the stored deadline.
    expect(clock.pending()).toBe(1);
    clock.advance(2_999);
    expect(agent.getSnapshot().value).toBe('cooling');
    expect(script.started).toEqual([]);
    clock.advance(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(agent.getSnapshot().value).toBe('queued');
    expect(contextOf(agent).turn?.stepAttempts).toBe(1);
    expect(contextOf(agent).turn?.leaseId).toBeUndefined();
    expect(script.started).toEqual([
      { kind: 'acquireToken', input: expect.objectContaining({ attempt: 1, retry: false }) },
    ]);
    agent.stop();
  });

  it('a degraded agent restored while resting checks its chain again at its stored instant', async () => {
    const live = await run(
      pathOf([
        ev.ask(),
        ev.grant(0),
        called('overloaded'),
        ev.grant(1),
        calledBackup('overloaded'),
        ev.denied(),
        ev.degradedDone(),
      ]),
    );
    const recheckAt = contextOf(live.agent).recheckAt!;
    const json = JSON.stringify(live.agent.getPersistedSnapshot());
    live.agent.stop();
    const clock = createManualClock(T0);
    const script = new ActorScript();
    const agent = createActor(script.provide(clock), {
      clock,
      input: INPUT,
      snapshot: JSON.parse(json),
    }).start();
    expect(agent.getSnapshot().value).toEqual({ degraded: 'resting' });
    clock.advance(recheckAt - T0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(agent.getSnapshot().value).toEqual({ degraded: 'checking' });
    expect(script.started.map((a) => a.kind)).toEqual(['checkHealth']);
    agent.stop();
  });
});
