import { type AnyActorRef, type ActorSystem, assign, emit, fromPromise, sendTo, setup } from 'xstate';
import type { DegradedAnswer } from '../src/degraded/decision-tree.ts';
import type { ChatMessage, EngineRequest, ToolCall } from '../src/engines/engine-types.ts';
import { type Fault, isSwappableFault } from '../src/faults/fault.ts';
import { buildRequest, estimateRequestTokens } from '../src/runtime/prompt-builder.ts';
import { scrubSecrets } from '../src/redact/secret-scrubber.ts';
import type { AgentMemory, Turn, TurnOutcome } from '../src/runtime/turn.ts';
import type {
  ActiveTurn,
  AgentContext,
  AgentEmitted,
  AgentEvent,
  AgentInput,
  AgentToSupervisorEvent,
  AnswerDegradedInput,
  AnswerDegradedOutput,
  CallEngineInput,
  CallOutcome,
  RunToolsInput,
  RunToolsOutput,
} from './agent.types.ts';

/** Bumped whenever the shape of the agent's context or states changes; stored beside every snapshot. */
export const AGENT_MACHINE_VERSION = 'agent@1';

export type {
  ActiveTurn,
  AgentContext,
  AgentEmitted,
  AgentEvent,
  AgentInput,
  AgentSettings,
  AgentToSupervisorEvent,
  AnswerDegradedInput,
  AnswerDegradedOutput,
  CallEngineInput,
  CallOutcome,
  RunToolsInput,
  RunToolsOutput,
} from './agent.types.ts';

/** Faults after which trying *another* endpoint is a fallback, not a retry: the endpoint said it has no room for us. */
const CAPACITY_FAULTS = new Set(['rate_limited', 'credit_exhausted', 'auth']);

// biome-ignore lint/suspicious/noExplicitAny: the system's actor map is not typed; the supervisor is found by id.
const supervisor = ({ system }: { system: ActorSystem<any> }) => system.get('supervisor') as AnyActorRef;

function requestOf(ctx: AgentContext): Omit<EngineRequest, 'signal'> {
  const t = ctx.turn!;
  const s = ctx.settings;
  return buildRequest({
    ...(s.role ? { role: s.role } : {}),
    memory: ctx.memory,
    historyTurns: s.historyTurns,
    turnMessages: t.messages,
    tools: s.tools,
    maxTokens: s.maxTokens,
    ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
    idempotencyKey: `${t.key}:call${t.step}`,
  });
}

function finishTurn(
  ctx: AgentContext,
  at: number,
  outcome: TurnOutcome,
  answer: { text: string; degraded?: DegradedAnswer },
  extra: { endpointId?: string; model?: string; error?: string; degradedReason?: string } = {},
): { turn: Turn; memory: AgentMemory } {
  const t = ctx.turn!;
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
    usage: { inputTokens: t.inputTokens, outputTokens: t.outputTokens },
    messages: t.messages.slice(1),
    startedAt: t.startedAt,
    finishedAt: at,
    ...extra,
  };
  const answered = outcome === 'answered' || outcome === 'fallback' || outcome === 'degraded';
  const memory: AgentMemory = answered
    ? {
        ...ctx.memory,
        utterances: [
          ...ctx.memory.utterances,
          {
            turnId: t.turnId,
            prompt: t.prompt,
            answer: answer.text,
            degraded: outcome === 'degraded',
            ...(extra.endpointId ? { endpointId: extra.endpointId } : {}),
          },
        ],
      }
    : ctx.memory;
  return { turn, memory };
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
    callEngine: fromPromise<CallOutcome, CallEngineInput>(async () => {
      throw new Error('callEngine is provided by the runtime');
    }),
    runTools: fromPromise<RunToolsOutput, RunToolsInput>(async () => {
      throw new Error('runTools is provided by the runtime');
    }),
    answerDegraded: fromPromise<AnswerDegradedOutput, AnswerDegradedInput>(async () => {
      throw new Error('answerDegraded is provided by the runtime');
    }),
  },
  delays: {
    coolingDelay: ({ context }) => {
      const t = context.turn;
      return t?.coolingUntil !== undefined && t.coolingFrom !== undefined
        ? Math.max(0, t.coolingUntil - t.coolingFrom)
        : 0;
    },
    probeDelay: ({ context }) => context.settings.probeIntervalMs,
  },
  guards: {
    isPrimary: ({ event }) => event.type === 'TOKEN.GRANTED' && event.index === 0,
    callSucceeded: ({ event }) => (event as unknown as { output: CallOutcome }).output.ok,
    wantsTools: ({ context, event }) => {
      const out = (event as unknown as { output: CallOutcome }).output;
      return out.ok && out.result.toolCalls.length > 0 && context.settings.tools.length > 0;
    },
    faultIsFinal: ({ event }) => {
      const out = (event as unknown as { output: CallOutcome }).output;
      return !out.ok && !isSwappableFault(out.fault.kind);
    },
    attemptsExhausted: ({ context }) => (context.turn?.stepAttempts ?? 0) + 1 >= context.settings.maxAttempts,
    coolingDone: ({ context, event }) =>
      event.type === 'TICK' &&
      context.turn?.coolingUntil !== undefined &&
      event.at >= context.turn.coolingUntil,
    healthy: ({ event }) => event.type === 'HEALTH.STATUS' && event.healthy,
  },
  actions: {
    startTurn: assign(({ event }) => {
      if (event.type !== 'ASK') return {};
      const turn: ActiveTurn = {
        turnId: event.turnId,
        key: event.key,
        prompt: event.prompt,
        startedAt: event.at,
        messages: [{ role: 'user', content: event.prompt }],
        step: 0,
        stepAttempts: 0,
        attempts: 0,
        faults: [],
        waitMs: 0,
        waitingSince: event.at,
        inputTokens: 0,
        outputTokens: 0,
      };
      return { turn };
    }),
    requestToken: sendTo(supervisor, ({ context }): AgentToSupervisorEvent => {
      const t = context.turn!;
      const last = t.faults[t.faults.length - 1];
      // The first attempt of a step is free; a re-attempt after a capacity fault on another endpoint is a
      // fallback (the failed endpoint cools, nobody hits it); anything else is a retry, charged to the budget.
      const retry = t.stepAttempts > 0 && !(last && CAPACITY_FAULTS.has(last.kind));
      const req = requestOf(context);
      return {
        type: 'TOKEN.REQUEST',
        agent: context.settings.name,
        tier: context.settings.tier,
        chain: context.settings.chain,
        retry,
        attempt: t.stepAttempts,
        maxWaitMs: context.settings.maxWaitMs,
        estimatedTokens: estimateRequestTokens(req),
      };
    }),
    withdrawToken: sendTo(
      supervisor,
      ({ context }): AgentToSupervisorEvent => ({
        type: 'TOKEN.WITHDRAW',
        agent: context.settings.name,
      }),
    ),
    takeGrant: assign(({ context, event }) => {
      if (event.type !== 'TOKEN.GRANTED') return {};
      const t = context.turn!;
      return {
        turn: {
          ...t,
          leaseId: event.leaseId,
          endpointId: event.endpointId,
          endpointIndex: event.index,
          waitMs: t.waitMs + (t.waitingSince !== undefined ? Math.max(0, event.at - t.waitingSince) : 0),
          waitingSince: undefined,
          coolingUntil: undefined,
          coolingFrom: undefined,
        },
      };
    }),
    startCooling: assign(({ context, event }) => {
      if (event.type !== 'TOKEN.WAIT') return {};
      const t = context.turn!;
      return {
        turn: {
          ...t,
          coolingUntil: event.until,
          coolingFrom: event.at,
          waitingSince: t.waitingSince ?? event.at,
        },
      };
    }),
    releaseToken: sendTo(supervisor, ({ context, event }): AgentToSupervisorEvent => {
      const out = (event as unknown as { output: CallOutcome }).output;
      const t = context.turn!;
      return {
        type: 'TOKEN.RELEASE',
        agent: context.settings.name,
        leaseId: t.leaseId ?? '',
        outcome: out,
        reservedTokens: estimateRequestTokens(requestOf(context)),
      };
    }),
    recordAttempt: assign(({ context, event }) => {
      const out = (event as unknown as { output: CallOutcome }).output;
      const t = context.turn!;
      const upstream = out.ok && out.memoized ? 0 : 1;
      return {
        turn: {
          ...t,
          attempts: t.attempts + upstream,
          stepAttempts: t.stepAttempts + 1,
          faults: out.ok ? t.faults : [...t.faults, out.fault],
          inputTokens: t.inputTokens + (out.ok ? out.result.usage.inputTokens : 0),
          outputTokens: t.outputTokens + (out.ok ? out.result.usage.outputTokens : 0),
          leaseId: undefined,
          waitingSince: out.at,
        },
      };
    }),
    appendToolCalls: assign(({ context, event }) => {
      const out = (event as unknown as { output: CallOutcome }).output;
      if (!out.ok) return {};
      const t = context.turn!;
      const msgs: ChatMessage[] = [...t.messages];
      if (out.result.text) msgs.push({ role: 'assistant', content: out.result.text });
      for (const call of out.result.toolCalls) msgs.push({ role: 'tool_call', call });
      return { turn: { ...t, messages: msgs } };
    }),
    appendToolResults: assign(({ context, event }) => {
      const { results } = (event as unknown as { output: RunToolsOutput }).output;
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
      return {
        turn: { ...t, messages: msgs, step: t.step + 1, stepAttempts: 0 },
        memory: { ...context.memory, toolResults: [...context.memory.toolResults, ...results] },
      };
    }),
    completeAnswered: assign(({ context, event }) => {
      const out = (event as unknown as { output: CallOutcome }).output;
      if (!out.ok) return {};
      const t = context.turn!;
      const outcome: TurnOutcome = (t.endpointIndex ?? 0) === 0 ? 'answered' : 'fallback';
      const { turn, memory } = finishTurn(
        context,
        out.at,
        outcome,
        { text: out.result.text },
        {
          endpointId: out.result.endpoint.id,
          model: out.result.model,
        },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    completeDegraded: assign(({ context, event }) => {
      const { answer, at } = (event as unknown as { output: AnswerDegradedOutput }).output;
      const { turn, memory } = finishTurn(
        context,
        at,
        'degraded',
        { text: answer.summary, degraded: answer },
        {
          degradedReason: answer.reason,
        },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    cancelTurn: assign(({ context, event }) => {
      const at = (event as { at?: number }).at ?? context.turn!.startedAt;
      const { turn, memory } = finishTurn(
        context,
        at,
        'cancelled',
        { text: '' },
        { error: 'cancelled by the caller' },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    releaseCancelled: sendTo(supervisor, ({ context, event }): AgentToSupervisorEvent => {
      const at = (event as { at?: number }).at ?? context.turn!.startedAt;
      const fault: Fault = { kind: 'cancelled', provider: 'openai', message: 'cancelled by the caller' };
      return {
        type: 'TOKEN.RELEASE',
        agent: context.settings.name,
        leaseId: context.turn!.leaseId ?? '',
        outcome: { ok: false, fault, at },
        reservedTokens: estimateRequestTokens(requestOf(context)),
      };
    }),
    // The engine call threw instead of resolving with an outcome (a bug, a call memo that failed): free the
    // token so the supervisor is not left short; `bad_request` leaves the endpoint's health untouched.
    releaseThrown: sendTo(supervisor, ({ context, event }): AgentToSupervisorEvent => {
      const err = (event as { error?: unknown }).error;
      const t = context.turn!;
      const fault: Fault = {
        kind: 'bad_request',
        provider: 'openai',
        message: `internal error: ${scrubSecrets(err instanceof Error ? err.message : String(err))}`,
        ...(t.endpointId ? { endpointId: t.endpointId } : {}),
      };
      return {
        type: 'TOKEN.RELEASE',
        agent: context.settings.name,
        leaseId: t.leaseId ?? '',
        outcome: { ok: false, fault, at: t.startedAt },
        reservedTokens: estimateRequestTokens(requestOf(context)),
      };
    }),
    internalFailure: assign(({ context, event }) => {
      const err = (event as { error?: unknown }).error;
      const message = scrubSecrets(err instanceof Error ? err.message : String(err));
      const t = context.turn!;
      const { turn, memory } = finishTurn(
        context,
        t.waitingSince ?? t.startedAt,
        'failed',
        { text: '' },
        {
          error: `internal error in agent ${context.settings.name}: ${message}; this is a bug, please report it`,
        },
      );
      return { turn: null, memory, lastTurn: turn };
    }),
    completeFailed: assign(({ context, event }) => {
      const out = (event as unknown as { output: CallOutcome }).output;
      if (out.ok) return {};
      const kind = out.fault.kind;
      const error =
        kind === 'cancelled'
          ? 'cancelled by the caller'
          : `${kind}: ${out.fault.message} — no engine swap fixes this; correct the request or the agent definition`;
      const { turn, memory } = finishTurn(
        context,
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
    checkHealth: sendTo(
      supervisor,
      ({ context }): AgentToSupervisorEvent => ({
        type: 'HEALTH.CHECK',
        agent: context.settings.name,
        chain: context.settings.chain,
      }),
    ),
    setSlots: assign(({ context, event }) =>
      event.type === 'MEMORY.SET'
        ? { memory: { ...context.memory, slots: { ...context.memory.slots, ...event.slots } } }
        : {},
    ),
  },
});

/** `calling` and `fallback` are the same state: they differ only in which endpoint of the chain was granted. */
const engineCall = agentSetup.createStateConfig({
  invoke: {
    src: 'callEngine',
    input: ({ context }) => ({
      agent: context.settings.name,
      tier: context.settings.tier,
      endpointId: context.turn!.endpointId!,
      request: requestOf(context),
      waitMs: context.turn!.waitMs,
    }),
    onDone: [
      {
        guard: 'wantsTools',
        target: 'tools',
        actions: ['releaseToken', 'recordAttempt', 'appendToolCalls'],
      },
      {
        guard: 'callSucceeded',
        target: 'idle',
        actions: ['releaseToken', 'recordAttempt', 'completeAnswered', 'emitLastTurn'],
      },
      {
        guard: 'faultIsFinal',
        target: 'idle',
        actions: ['releaseToken', 'recordAttempt', 'completeFailed', 'emitLastTurn'],
      },
      { guard: 'attemptsExhausted', target: 'degraded', actions: ['releaseToken', 'recordAttempt'] },
      { target: 'queued', actions: ['releaseToken', 'recordAttempt'] },
    ],
    onError: { target: 'idle', actions: ['releaseThrown', 'internalFailure', 'emitLastTurn'] },
  },
  on: { CANCEL: { target: 'idle', actions: ['releaseCancelled', 'cancelTurn', 'emitLastTurn'] } },
});

/**
 * The agent actor. It never halts on an upstream fault:
 * - `idle`: waits for work (`ASK`).
 * - `queued`: asked the supervisor for a concurrency token and an endpoint; holds nothing yet.
 * - `calling`: holds a token; one call in flight to the chain's first endpoint.
 * - `fallback`: holds a token; one call in flight to a later endpoint of the chain.
 * - `tools`: runs the tool calls the model asked for (no token held), then queues again.
 * - `cooling`: every usable endpoint is cooling; waits for the earliest (deadline `coolingUntil` in
 *   context, so a restored actor recomputes it) holding no token.
 * - `degraded`: no engine can answer within the agent's max wait (or the retry budget is spent): answers
 *   from the degraded layer, labelled, then keeps checking its chain's health and returns to `idle` by itself.
 *
 * The engine call, the tools and the degraded answer are actors registered by name (`callEngine`,
 * `runTools`, `answerDegraded`); the runtime provides them with `agentMachine.provide({ actors })`.
 *
 * @example
 * ```ts
 * const logic = agentMachine.provide({ actors: { callEngine, runTools, answerDegraded } });
 * ```
 */
export const agentMachine = agentSetup.createMachine({
  id: 'agent',
  context: ({ input }) => ({ settings: input.settings, memory: input.memory, turn: null }),
  on: { 'MEMORY.SET': { actions: 'setSlots' } },
  initial: 'idle',
  states: {
    idle: {
      on: { ASK: { target: 'queued', actions: 'startTurn' } },
    },
    queued: {
      entry: 'requestToken',
      on: {
        'TOKEN.GRANTED': [
          { guard: 'isPrimary', target: 'calling', actions: 'takeGrant' },
          { target: 'fallback', actions: 'takeGrant' },
        ],
        'TOKEN.WAIT': { target: 'cooling', actions: 'startCooling' },
        'TOKEN.DENIED': { target: 'degraded' },
        CANCEL: { target: 'idle', actions: ['withdrawToken', 'cancelTurn', 'emitLastTurn'] },
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
      on: { CANCEL: { target: 'idle', actions: ['cancelTurn', 'emitLastTurn'] } },
    },
    cooling: {
      after: { coolingDelay: 'queued' },
      on: {
        TICK: { guard: 'coolingDone', target: 'queued' },
        CANCEL: { target: 'idle', actions: ['cancelTurn', 'emitLastTurn'] },
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
            onDone: { target: 'resting', actions: ['completeDegraded', 'emitLastTurn'] },
            onError: { target: 'resting', actions: ['internalFailure', 'emitLastTurn'] },
          },
        },
        resting: {
          after: { probeDelay: 'checking' },
          on: { ASK: { target: '#agent.queued', actions: 'startTurn' } },
        },
        checking: {
          entry: 'checkHealth',
          on: {
            'HEALTH.STATUS': [{ guard: 'healthy', target: '#agent.idle' }, { target: 'resting' }],
            ASK: { target: '#agent.queued', actions: 'startTurn' },
          },
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
  const e = event as { type?: string; reason?: string };
  if (e.type === 'TOKEN.DENIED' && e.reason) return e.reason;
  const last = context.turn?.faults[context.turn.faults.length - 1];
  return last
    ? `gave up after ${context.turn!.stepAttempts} attempts; last fault ${last.kind}`
    : 'no engine available';
}
