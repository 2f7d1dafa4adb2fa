import { assign, emit, fromCallback, fromPromise, setup } from 'xstate';
import type { ChatMessage, StopReason, ToolCall } from '../src/core/engine-types.ts';
import { addUsage, NO_USAGE } from '../src/core/token-usage.ts';
import { type Fault, isCapacityFault, isFinalFault, isUnfitFault } from '../src/core/fault.ts';
import {
  type AgentMemory,
  type DegradedAnswer,
  type PromptParts,
  type Turn,
  type TurnOutcome,
  usageSoFar,
} from '../src/core/turn.ts';
import type {
  AcquireTokenInput,
  ActiveTurn,
  AgentContext,
  AgentEmitted,
  AgentEvent,
  AgentInput,
  AnswerDegradedInput,
  AnswerDegradedOutput,
  CallEngineInput,
  CallOutcome,
  CheckHealthInput,
  CheckHealthOutput,
  GrantedAnswer,
  RunToolsInput,
  RunToolsOutput,
  TokenAnswer,
  WakeAtInput,
} from './agent.types.ts';

/** Bumped whenever the shape of the agent's context or states changes; stored beside every snapshot. */
export const AGENT_MACHINE_VERSION = 'agent@2';

export type {
  PartialAnswer,
  AcquireTokenInput,
  ActiveTurn,
  AgentContext,
  AgentEmitted,
  AgentEvent,
  AgentInput,
  AgentSettings,
  AnswerDegradedInput,
  AnswerDegradedOutput,
  CallEngineInput,
  CallOutcome,
  CheckHealthInput,
  CheckHealthOutput,
  GrantedAnswer,
  RunToolsInput,
  RunToolsOutput,
  TokenAnswer,
  WakeAtInput,
} from './agent.types.ts';

type Done<T> = { output: T };
const outputOf = <T>(event: unknown): T => (event as Done<T>).output;
/** The token answer an event carries: `TOKEN.ANSWER`'s, or the grant an `ASK` came with. */
const answerOf = (event: AgentEvent): TokenAnswer | undefined =>
  event.type === 'ASK' ? event.ready?.grant : event.type === 'TOKEN.ANSWER' ? event.output : undefined;

type AskEvent = Extract<AgentEvent, { type: 'ASK' }>;

/**
 * The turn an `ASK` starts (pure: the runtime calls it too, to ask for a token before the agent takes the ASK).
 *
 * @example
 * ```ts
 * const turn = turnOfAsk({ type: 'ASK', turnId: 't1', key: 'Kai:t1', prompt: 'Item 3?', at: clock.now() });
 * ```
 */
export function turnOfAsk(event: AskEvent): ActiveTurn {
  const turn: ActiveTurn = {
    turnId: event.turnId,
    key: event.key,
    prompt: event.prompt,
    startedAt: event.at,
    messages: event.messages ?? [{ role: 'user', content: event.prompt }],
    ...(event.messages ? { given: event.messages.length } : {}),
    step: 0,
    stepAttempts: 0,
    attempts: 0,
    faults: [],
    waitMs: 0,
    waitingSince: event.at,
    usage: NO_USAGE,
  };
  return event.stream ? { ...turn, stream: true as const } : turn;
}

/**
 * What the agent asks the token scheduler for, for its current turn (pure: the runtime calls it too, for the
 * grant an `ASK` may come with).
 *
 * @example
 * ```ts
 * const request = tokenRequestOf({ ...snapshot.context, turn });
 * ```
 */
export function tokenRequestOf(context: AgentContext): AcquireTokenInput {
  const t = context.turn!;
  const last = t.faults[t.faults.length - 1];
  // The first attempt of a step is free; a re-attempt after a capacity fault on another endpoint is a
  // fallback (the failed endpoint cools, nobody hits it); anything else is a retry, charged to the budget when it
  // goes to an endpoint it was tried on (one it never tried is a fallback).
  const retry = t.stepAttempts > 0 && !(last && isCapacityFault(last.kind));
  const request: AcquireTokenInput = {
    agent: context.settings.name,
    tier: context.settings.tier,
    chain: context.settings.chain,
    retry,
    attempt: t.stepAttempts,
    maxWaitMs: context.settings.maxWaitMs,
    ...(t.cooledMs ? { cooledMs: t.cooledMs } : {}),
    prompt: promptOf(context),
  };
  if (t.stepAttempts === 0) return request;
  const { tried, skip } = stepEndpoints(t, t.stepAttempts >= context.settings.maxAttempts);
  return { ...request, ...(tried.length > 0 ? { tried } : {}), ...(skip.length > 0 ? { skip } : {}) };
}

/**
 * The endpoints the current step failed on (`tried`), and those its next attempt must not go to (`skip`): those
 * that cannot take its request at all, and once its attempts are spent (`exhausted`) every one it tried, so it goes
 * on only to endpoints of its chain it never tried (attempts limit retries, not fallbacks).
 */
function stepEndpoints(t: ActiveTurn, exhausted: boolean): { tried: string[]; skip: string[] } {
  const tried: string[] = [];
  const skip: string[] = [];
  // Every attempt of the step so far failed (an answer ends the step), so its faults are the last ones.
  for (let i = Math.max(0, t.faults.length - t.stepAttempts); i < t.faults.length; i++) {
    const f = t.faults[i]!;
    if (f.endpointId === undefined) continue;
    if (!tried.includes(f.endpointId)) tried.push(f.endpointId);
    if ((exhausted || isUnfitFault(f.kind)) && !skip.includes(f.endpointId)) skip.push(f.endpointId);
  }
  return { tried, skip };
}

/** What the next engine call's prompt is made of: the runtime builds the request (and its token estimate). */
function promptOf(ctx: AgentContext): PromptParts {
  const t = ctx.turn!;
  const s = ctx.settings;
  return {
    ...(s.role ? { role: s.role } : {}),
    memory: ctx.memory,
    historyTurns: s.historyTurns,
    turnMessages: t.messages,
    tools: s.tools,
    maxTokens: s.maxTokens,
    ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
    idempotencyKey: `${t.key}:call${t.step}`,
  };
}

/** `t` holding grant `a`: its lease and endpoint, the wait for it counted. */
function withGrant(t: ActiveTurn, a: GrantedAnswer): ActiveTurn {
  return {
    ...t,
    leaseId: a.leaseId,
    endpointId: a.endpointId,
    endpointIndex: a.index,
    waitMs: t.waitMs + (t.waitingSince !== undefined ? Math.max(0, a.at - t.waitingSince) : 0),
    waitingSince: undefined,
    coolingUntil: undefined,
    coolingFrom: undefined,
    cooledMs: undefined,
  };
}

/** `t` leaving its cooling at `at`: the time it cooled counts against its max wait until its next grant. */
function withCoolingEnded(t: ActiveTurn, at: number): ActiveTurn {
  if (t.coolingFrom === undefined) return t;
  return { ...t, coolingFrom: undefined, cooledMs: (t.cooledMs ?? 0) + Math.max(0, at - t.coolingFrom) };
}

/** When a cooling agent was woken: its deadline's time, or the runtime's when it announced a change. */
function wokenAt(event: AgentEvent): number {
  if (event.type === 'WAKE') return event.output.at;
  if (event.type === 'RECHECK') return event.at;
  throw new Error(`a cooling agent is woken by WAKE or RECHECK, not ${event.type}`);
}

/** `t` with one more attempt recorded: its count, fault or usage, and the step's kept partial answer. */
function withAttempt(t: ActiveTurn, out: CallOutcome): ActiveTurn {
  const upstream = out.ok && out.memoized ? 0 : 1;
  return {
    ...t,
    attempts: t.attempts + upstream,
    stepAttempts: t.stepAttempts + 1,
    faults: out.ok ? t.faults : [...t.faults, out.fault],
    // The turn's usage is the sum over its calls: a failed call adds what it may have been billed (see CallOutcome).
    usage: addUsage(usageSoFar(t), out.ok ? out.result.usage : (out.usage ?? NO_USAGE)),
    leaseId: undefined,
    waitingSince: out.at,
    // A streamed step keeps the text its caller holds after a fault; an answer ends the step.
    partial: out.ok ? undefined : (out.partial ?? t.partial),
  };
}

function finishTurn(
  ctx: AgentContext,
  t: ActiveTurn,
  at: number,
  outcome: TurnOutcome,
  answer: { text: string; degraded?: DegradedAnswer },
  extra: {
    endpointId?: string;
    model?: string;
    error?: string;
    degradedReason?: string;
    stopReason?: StopReason;
    toolCalls?: readonly ToolCall[];
  } = {},
): { turn: Turn; memory: AgentMemory } {
  const turn: Turn = {
    turnId: t.turnId,
    agent: ctx.settings.name,
    tier: ctx.settings.tier,
    prompt: t.prompt,
    answer,
    outcome,
    degraded: outcome === 'degraded',
    faults: t.faults,
    waitMs: t.waitMs + (t.waitingSince !== undefined ? Math.max(0, at - t.waitingSince) : 0),
    attempts: t.attempts,
    usage: usageSoFar(t),
    messages: t.messages.slice(t.given ?? 1),
    startedAt: t.startedAt,
    finishedAt: at,
    ...extra,
  };
  const answered = outcome === 'answered' || outcome === 'fallback' || outcome === 'degraded';
  const memory: AgentMemory = answered
    ? {
        ...ctx.memory,
        utterances: lastOf(
          ctx.memory.utterances,
          {
            turnId: t.turnId,
            prompt: t.prompt,
            answer: answer.text,
            degraded: outcome === 'degraded',
            ...(extra.endpointId ? { endpointId: extra.endpointId } : {}),
          },
          ctx.settings.historyTurns,
        ),
      }
    : ctx.memory;
  return { turn, memory };
}

/**
 * `list` with `item` appended, keeping only the last `keep`: an agent's memory is the window its prompt reads, so
 * a turn costs the same at the 10th turn and the 10,000th (every turn is in the turns log anyway).
 */
function lastOf<T>(list: readonly T[], item: T, keep: number): readonly T[] {
  if (keep <= 0) return [];
  const from = Math.max(0, list.length + 1 - keep);
  const out = list.slice(from);
  out.push(item);
  return out;
}

/**
 * A thrown error from one of the runtime's actors is a bug. Its text is quoted only when the runtime sanitized it
 * where it entered (`InternalActorError.safeMessage`): a raw error may hold anything, a key included.
 */
function internalError(agent: string, err: unknown): string {
  const safe = (err as { safeMessage?: unknown } | null)?.safeMessage;
  const what =
    typeof safe === 'string'
      ? safe
      : `${err instanceof Error ? err.name : typeof err} (details are in the log)`;
  return `internal error in agent ${agent}: ${what}; this is a bug, please report it`;
}

/** The agent machine's implementations, registered by name (the runtime provides the real actors). */
const agentSetup = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    input: {} as AgentInput,
    emitted: {} as AgentEmitted,
  },
  actors: {
    // The hot path's actors are callbacks: they report with an event and clean up when their state is left,
    // with no AbortSignal of their own (one costs more than the rest of a grant).
    acquireToken: fromCallback<AgentEvent, AcquireTokenInput>(() => {
      throw new Error('acquireToken is provided by the runtime');
    }),
    runTools: fromPromise<RunToolsOutput, RunToolsInput>(async () => {
      throw new Error('runTools is provided by the runtime');
    }),
    answerDegraded: fromPromise<AnswerDegradedOutput, AnswerDegradedInput>(async () => {
      throw new Error('answerDegraded is provided by the runtime');
    }),
    wakeAt: fromCallback<AgentEvent, WakeAtInput>(() => {
      throw new Error('wakeAt is provided by the runtime');
    }),
    checkHealth: fromPromise<CheckHealthOutput, CheckHealthInput>(async () => {
      throw new Error('checkHealth is provided by the runtime');
    }),
  },
  guards: {
    granted: ({ event }) => answerOf(event)?.kind === 'granted',
    grantedPrimary: ({ event }) => {
      const a = answerOf(event);
      return a?.kind === 'granted' && a.index === 0;
    },
    mustCool: ({ event }) => outputOf<TokenAnswer>(event).kind === 'cool',
    leaseLost: ({ event }) => {
      const out = outputOf<CallOutcome>(event);
      return !out.ok && out.leaseLost === true;
    },
    callSucceeded: ({ event }) => outputOf<CallOutcome>(event).ok,
    wantsTools: ({ context, event }) => {
      const out = outputOf<CallOutcome>(event);
      if (!out.ok || out.result.toolCalls.length === 0 || context.settings.tools.length === 0) return false;
      // A call of a tool the caller runs ends the turn: the caller gets the calls (`turn.toolCalls`).
      const client = context.settings.clientTools;
      return !client?.length || !out.result.toolCalls.some((c) => client.includes(c.name));
    },
    faultIsFinal: ({ event }) => {
      const out = outputOf<CallOutcome>(event);
      return !out.ok && isFinalFault(out.fault.kind);
    },
    healthy: ({ event }) => outputOf<CheckHealthOutput>(event).healthy,
  },
  actions: {
    /**
     * Starts the engine call of `calling` / `fallback` (its input: {@link callInputOf}); the call reports
     * `CALL.DONE` (failures as data) or `CALL.FAILED` (a bug) to the agent. An effect the runtime provides.
     */
    startCall: () => {
      throw new Error('startCall is provided by the runtime');
    },
    /** Leaving `calling` / `fallback`: a call still running is aborted (its grant is released with that outcome). */
    stopCall: () => {},
    startTurn: assign(({ event }) => {
      if (event.type !== 'ASK') return {};
      const turn = event.ready?.turn ?? turnOfAsk(event);
      // An ASK that came with its token starts the turn holding it: one context update, not two.
      return { turn: event.ready ? withGrant(turn, event.ready.grant) : turn, recheckAt: undefined };
    }),
    takeGrant: assign(({ context, event }) => {
      const a = answerOf(event);
      return a?.kind === 'granted' ? { turn: withGrant(context.turn!, a) } : {};
    }),
    startCooling: assign(({ context, event }) => {
      const a = outputOf<TokenAnswer>(event);
      if (a.kind !== 'cool') return {};
      const t = context.turn!;
      return {
        turn: { ...t, coolingUntil: a.until, coolingFrom: a.at, waitingSince: t.waitingSince ?? a.at },
      };
    }),
    endCooling: assign(({ context, event }) => ({ turn: withCoolingEnded(context.turn!, wokenAt(event)) })),
    forgetLease: assign(({ context }) => ({ turn: { ...context.turn!, leaseId: undefined } })),
    recordAttempt: assign(({ context, event }) => ({
      turn: withAttempt(context.turn!, outputOf<CallOutcome>(event)),
    })),
    appendToolCalls: assign(({ context, event }) => {
      const out = outputOf<CallOutcome>(event);
      if (!out.ok) return {};
      const t = context.turn!;
      const msgs: ChatMessage[] = [...t.messages];
      if (out.result.text) msgs.push({ role: 'assistant', content: out.result.text });
      for (const call of out.result.toolCalls) msgs.push({ role: 'tool_call', call });
      return { turn: { ...t, messages: msgs } };
    }),
    appendToolResults: assign(({ context, event }) => {
      const { results } = outputOf<RunToolsOutput>(event);
      const t = context.turn!;
      const msgs: ChatMessage[] = [...t.messages];
      for (const r of results)
        msgs.push({
          role: 'tool_result',
          toolCallId: r.call.id,
          toolName: r.call.name,
          content: r.result,
          isError: r.isError,
        });
      let toolResults = context.memory.toolResults;
      for (const r of results) toolResults = lastOf(toolResults, r, context.settings.toolResultsKept);
      return {
        turn: { ...t, messages: msgs, step: t.step + 1, stepAttempts: 0 },
        memory: { ...context.memory, toolResults },
      };
    }),
    /** The call answered and the turn ends: its attempt recorded and the turn finished, in one context update. */
    completeAnswered: assign(({ context, event }) => {
      const out = outputOf<CallOutcome>(event);
      if (!out.ok) return {};
      const t = withAttempt(context.turn!, out);
      const outcome: TurnOutcome = (t.endpointIndex ?? 0) === 0 ? 'answered' : 'fallback';
      const { turn, memory } = finishTurn(
        context,
        t,
        out.at,
        outcome,
        { text: out.result.text },
        {
          endpointId: out.result.endpoint.id,
          model: out.result.model,
          stopReason: out.result.stopReason,
          ...(out.result.toolCalls.length > 0 ? { toolCalls: out.result.toolCalls } : {}),
        },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    completeDegraded: assign(({ context, event }) => {
      const { answer, at } = outputOf<AnswerDegradedOutput>(event);
      const { turn, memory } = finishTurn(
        context,
        context.turn!,
        at,
        'degraded',
        { text: answer.summary, degraded: answer },
        { degradedReason: answer.reason },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    /** After a degraded answer (or its failure): the next health check, an instant kept in context. */
    planRecheck: assign(({ context }) => ({
      recheckAt: (context.lastTurn?.finishedAt ?? 0) + context.settings.probeIntervalMs,
    })),
    scheduleRecheck: assign(({ context, event }) => {
      // After a failed check (no output) the last planned instant is the best time we have.
      const at = (event as Partial<Done<CheckHealthOutput>>).output?.at ?? context.recheckAt ?? 0;
      return { recheckAt: at + context.settings.probeIntervalMs };
    }),
    cancelTurn: assign(({ context, event }) => {
      const at = (event as { at?: number }).at ?? context.turn!.startedAt;
      const { turn, memory } = finishTurn(
        context,
        context.turn!,
        at,
        'cancelled',
        { text: '' },
        { error: 'cancelled by the caller' },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    internalFailure: assign(({ context, event }) => {
      const t = context.turn!;
      const err = (event as { error?: { at?: unknown } }).error;
      // The runtime stamps its errors; an unstamped one ends the turn at the last instant the turn knew.
      const at = typeof err?.at === 'number' ? err.at : (t.waitingSince ?? t.startedAt);
      const { turn, memory } = finishTurn(
        context,
        t,
        at,
        'failed',
        { text: '' },
        { error: internalError(context.settings.name, (event as { error?: unknown }).error) },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    /** The call failed for good and the turn ends: its attempt recorded and the turn finished, in one update. */
    completeFailed: assign(({ context, event }) => {
      const out = outputOf<CallOutcome>(event);
      if (out.ok) return {};
      const kind = out.fault.kind;
      const error =
        kind === 'cancelled'
          ? 'cancelled by the caller'
          : `${kind}: ${out.fault.message} — no engine swap fixes this; correct the request or the agent definition`;
      const { turn, memory } = finishTurn(
        context,
        withAttempt(context.turn!, out),
        out.at,
        kind === 'cancelled' ? 'cancelled' : 'failed',
        { text: '' },
        { error },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    emitLastTurn: emit(({ context }) => ({
      type: 'turn.completed' as const,
      turn: context.lastTurn!,
    })),
    setSlots: assign(({ context, event }) =>
      event.type === 'MEMORY.SET'
        ? { memory: { ...context.memory, slots: { ...context.memory.slots, ...event.slots } } }
        : {},
    ),
  },
});

const CANCEL = { target: '#agent.idle', actions: ['cancelTurn', 'emitLastTurn'] } as const;

/**
 * What the engine call of `calling` / `fallback` is given (pure: the runtime's `startCall` reads it).
 *
 * @example
 * ```ts
 * const input = callInputOf(snapshot.context);
 * ```
 */
export function callInputOf(context: AgentContext): CallEngineInput {
  const t = context.turn!;
  const input: CallEngineInput = {
    agent: context.settings.name,
    turnId: t.turnId,
    tier: context.settings.tier,
    leaseId: t.leaseId!,
    endpointId: t.endpointId!,
    chainPosition: t.endpointIndex ?? 0,
    prompt: promptOf(context),
    waitMs: t.waitMs,
  };
  // A plain turn's input stays as it was (the hot path): only a streamed one carries the stream's state.
  return t.stream ? { ...input, stream: true as const, step: t.step, partial: t.partial } : input;
}

/**
 * `calling` and `fallback` are the same state: they differ only in which endpoint of the chain was granted.
 * The call is an entry/exit pair of effects, not an invoked actor (an actor per call cost a third of the agent's
 * work per turn): `startCall` owns the grant from here and releases it with the call's outcome, `stopCall` aborts
 * a call still running when the state is left (cancelled, stopped), so the machine never touches a token. A
 * snapshot persisted mid-call resumes in `queued` (`restoredAgentSnapshot`): its lease died with its process.
 */
const engineCall = agentSetup.createStateConfig({
  entry: 'startCall',
  exit: 'stopCall',
  on: {
    'CALL.DONE': [
      { guard: 'leaseLost', target: 'queued', actions: 'forgetLease' },
      { guard: 'wantsTools', target: 'tools', actions: ['recordAttempt', 'appendToolCalls'] },
      {
        guard: 'callSucceeded',
        target: 'idle',
        actions: ['completeAnswered', 'emitLastTurn'],
      },
      {
        guard: 'faultIsFinal',
        target: 'idle',
        actions: ['completeFailed', 'emitLastTurn'],
      },
      // Queued again even with the step's attempts spent: its token request then skips every endpoint it tried,
      // and the scheduler denies it (degraded) only when no endpoint of its chain it never tried is left.
      { target: 'queued', actions: 'recordAttempt' },
    ],
    'CALL.FAILED': { target: 'idle', actions: ['internalFailure', 'emitLastTurn'] },
    CANCEL,
  },
});

/**
 * The agent actor. It never halts on an upstream fault:
 * - `idle`: waits for work (`ASK`).
 * - `queued`: asks the token scheduler (`acquireToken`) for a token and an endpoint; holds nothing yet.
 * - `calling`: holds a token; one call in flight to the chain's first endpoint.
 * - `fallback`: holds a token; one call in flight to a later endpoint of the chain.
 * - `tools`: runs the tool calls the model asked for (no token held), then queues again.
 * - `cooling`: every usable endpoint is cooling; waits for the earliest (`coolingUntil` in context) holding
 *   no token.
 * - `degraded`: no engine can answer within the agent's max wait (or its retries, of the budget or of
 *   `maxAttempts`, are spent and no endpoint of its chain it never tried is left): answers
 *   from the degraded layer, labelled, then checks its chain's health every `probeIntervalMs` and returns to
 *   `idle` by itself.
 *
 * Every effect is registered by name and provided by the runtime: actors (`acquireToken`, `runTools`,
 * `answerDegraded`, `wakeAt`, `checkHealth`) and, for the engine call on the hot path, the entry/exit effects
 * `startCall` / `stopCall` (an actor per call cost a third of the agent's work). Waits are invoked `wakeAt` timers
 * at absolute instants kept in context: XState re-runs an invoked actor that was in flight when a snapshot is
 * restored, so a restored cooling agent wakes at its stored deadline; a snapshot stored mid-call is restored in
 * `queued` (`restoredAgentSnapshot`), its lease having died with its process.
 *
 * @example
 * ```ts
 * const logic = agentMachine.provide({
 *   actors: { acquireToken, runTools, answerDegraded, wakeAt, checkHealth },
 *   actions: { startCall, stopCall },
 * });
 * ```
 */
export const agentMachine = agentSetup.createMachine({
  id: 'agent',
  context: ({ input }) => ({ settings: input.settings, memory: input.memory, turn: null }),
  on: { 'MEMORY.SET': { actions: 'setSlots' } },
  initial: 'idle',
  states: {
    idle: {
      on: {
        // With a token taken at once (`ready`) the agent calls in the same step; otherwise it queues for one.
        ASK: [
          { guard: 'grantedPrimary', target: 'calling', actions: 'startTurn' },
          { guard: 'granted', target: 'fallback', actions: 'startTurn' },
          { target: 'queued', actions: 'startTurn' },
        ],
      },
    },
    queued: {
      invoke: {
        src: 'acquireToken',
        input: ({ context }) => tokenRequestOf(context),
      },
      on: {
        'TOKEN.ANSWER': [
          { guard: 'grantedPrimary', target: 'calling', actions: 'takeGrant' },
          { guard: 'granted', target: 'fallback', actions: 'takeGrant' },
          { guard: 'mustCool', target: 'cooling', actions: 'startCooling' },
          { target: 'degraded' },
        ],
        'TOKEN.FAILED': { target: 'idle', actions: ['internalFailure', 'emitLastTurn'] },
        CANCEL,
      },
    },
    calling: engineCall,
    fallback: engineCall,
    tools: {
      invoke: {
        src: 'runTools',
        input: ({ context }) => ({
          agent: context.settings.name,
          keyPrefix: `${context.turn!.key}:tool${context.turn!.step}`,
          turnId: context.turn!.turnId,
          calls: pendingToolCalls(context.turn!.messages),
        }),
        onDone: { target: 'queued', actions: 'appendToolResults' },
        onError: { target: 'idle', actions: ['internalFailure', 'emitLastTurn'] },
      },
      on: { CANCEL },
    },
    cooling: {
      invoke: {
        src: 'wakeAt',
        input: ({ context }) => ({ at: context.turn!.coolingUntil ?? 0 }),
      },
      // RECHECK: something changed that may let it go sooner (a BYOK key came): ask again now.
      on: {
        WAKE: { target: 'queued', actions: 'endCooling' },
        RECHECK: { target: 'queued', actions: 'endCooling' },
        CANCEL,
      },
    },
    degraded: {
      initial: 'answering',
      states: {
        answering: {
          invoke: {
            src: 'answerDegraded',
            input: ({ context, event }) => ({
              agent: context.settings.name,
              prompt: context.turn!.prompt,
              memory: context.memory,
              reason: degradedReason(context, event),
            }),
            onDone: { target: 'resting', actions: ['completeDegraded', 'planRecheck', 'emitLastTurn'] },
            onError: { target: 'resting', actions: ['internalFailure', 'planRecheck', 'emitLastTurn'] },
          },
          on: { CANCEL },
        },
        resting: {
          invoke: {
            src: 'wakeAt',
            input: ({ context }) => ({ at: context.recheckAt ?? 0 }),
          },
          on: { WAKE: 'checking', ASK: { target: '#agent.queued', actions: 'startTurn' } },
        },
        checking: {
          invoke: {
            src: 'checkHealth',
            input: ({ context }) => ({ agent: context.settings.name, chain: context.settings.chain }),
            onDone: [
              { guard: 'healthy', target: '#agent.idle' },
              { target: 'resting', actions: 'scheduleRecheck' },
            ],
            onError: { target: 'resting', actions: 'scheduleRecheck' },
          },
          on: { ASK: { target: '#agent.queued', actions: 'startTurn' } },
        },
      },
    },
  },
});

function pendingToolCalls(messages: readonly ChatMessage[]): ToolCall[] {
  const calls: ToolCall[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'tool_call') break;
    calls.unshift(m.call);
  }
  return calls;
}

function degradedReason(context: AgentContext, event: unknown): string {
  const answer = (event as Partial<Done<TokenAnswer>>).output;
  const t = context.turn;
  const last: Fault | undefined = t?.faults[t.faults.length - 1];
  const gaveUp = last ? `gave up after ${t!.stepAttempts} attempts; last fault ${last.kind}` : undefined;
  // Attempts spent and no untried endpoint left: the attempts are the reason, not the empty choice they left.
  if (gaveUp && t!.stepAttempts >= context.settings.maxAttempts) return gaveUp;
  if (answer && answer.kind === 'denied') return answer.reason;
  return gaveUp ?? 'no engine available';
}
