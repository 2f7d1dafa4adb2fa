import { warnCapped } from './capped-wait-warning.ts';
import type { Logger } from 'pino';
import { type AnyActorRef, fromCallback } from 'xstate';
import {
  type AcquireTokenInput,
  type AgentContext,
  type AgentEvent,
  type CallEngineInput,
  type CallOutcome,
  callInputOf,
  type GrantedAnswer,
  type TokenAnswer,
  tokenRequestOf,
  turnOfAsk,
} from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import type { DegradedResponder } from '../degraded/degraded-responder.ts';
import { CallCancel } from '../core/call-abort.ts';
import { estimateTokens, faultUsage } from '../core/token-usage.ts';
import type { EngineRequest, EngineResult } from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';
import type { CallSettlement } from '../health/endpoint-health.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import type {
  TokenDecision,
  TokenScheduler,
  TokenRequest,
  TokenTicket,
} from '../scheduler/token-scheduler.ts';
import type { AgentDefinition } from './agent-definition.ts';
import type { CallMemo, CallRecordEvent } from '../core/call-memo.ts';
import { buildRequest, estimateRequestTokens } from './prompt-builder.ts';
import { beginStreamAttempt, replayMemoized } from './stream-attempt.ts';
import type { PromptParts } from '../core/turn.ts';
import type { TurnStreamSink } from './turn-stream.ts';
import { sanitized } from './actor-failure.ts';
import { createAnswerDegradedActor } from './answer-degraded-actor.ts';
import { createCheckHealthActor } from './check-health-actor.ts';
import { memoWriter } from './memo-writer.ts';
import { createRunToolsActor } from './run-tools-actor.ts';
import { createWakeAtActor } from './wake-at-actor.ts';
import {
  callRecord,
  cappedCall,
  faultOf,
  internalFault,
  logLine,
  streamCall,
  withCancel,
} from './call-attempt-parts.ts';

type AskEvent = Extract<AgentEvent, { type: 'ASK' }>;

/** The engine call an agent is in (one at most: an agent runs one call at a time). */
interface RunningCall {
  readonly cancel: CallCancel;
  /** The agent left the call's state: nothing more is reported to it. */
  left: boolean;
  ended: boolean;
}
/** What an `ASK` carries when its first call's token was taken at once (see {@link AgentActors.grantAtOnce}). */
export type ReadyAsk = NonNullable<AskEvent['ready']>;

export interface AgentActorDeps {
  readonly endpoints: EndpointRegistry;
  readonly scheduler: TokenScheduler;
  readonly timers: TimerHeap;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly definitions: ReadonlyMap<string, AgentDefinition>;
  readonly degraded: DegradedResponder;
  /** The BYOK session of an agent (its keys come after its chain). */
  readonly sessionOf: (agent: string) => string | undefined;
  /** Endpoint ids an agent may use, in order (its chain, then its session's BYOK keys). */
  readonly endpointsOf: (agent: string, chain: string) => readonly string[];
  readonly memo?: CallMemo;
  /** Receives one record per upstream attempt (the call log as data). */
  readonly onCall?: (record: CallRecordEvent) => void;
  /** Whether anyone hears `onCall` now (default: yes when it is set); no record is built for nobody. */
  readonly callsHeard?: () => boolean;
  /** The trace and span ids of an agent's running turn, for its log lines (when tracing is on). */
  readonly traceIdsOf?: (turnId: string) => { trace_id: string; span_id: string } | undefined;
  /** Where a streamed turn's events go: the channel of `agent`'s running ask, if it is turn `turnId`. */
  readonly streamOf?: (agent: string, turnId: string) => TurnStreamSink | undefined;
}

export type { CallMemo, CallRecordEvent } from '../core/call-memo.ts';

/** Prefix of a memo grant's lease id: the answer is memoized, no token was taken. */
const MEMO_LEASE = 'memo:';

/** Real ms a cut call keeps its token after it ended on our side (socket teardown, not simulated time). */
const ABORT_SETTLE_MS = 10;

/** The scheduler's decision as plain data for the agent's snapshot. */
function tokenAnswer(d: TokenDecision): TokenAnswer {
  if (d.kind === 'granted') {
    const { leaseId, endpointId, index, grantedAt } = d.grant;
    return { kind: 'granted', leaseId, endpointId, index, at: grantedAt };
  }
  if (d.kind === 'cool') return { kind: 'cool', endpointId: d.endpointId, until: d.until, at: d.at };
  return { kind: 'denied', reason: d.reason, at: d.at };
}

/**
 * The real implementations of the agent machine's named actors:
 * - `acquireToken`: asks the scheduler; a grant its holder leaves before calling is given back at once;
 * - `startCall` / `stopCall` (the entry and exit of `calling` / `fallback`): the engine call; it claims the grant, calls the engine with a signal that aborts when the agent is cancelled or
 *   the lease is taken back, and always releases the grant with how the call ended (one log line per attempt,
 *   `confirmed_model` on success, as seed 000 counts them);
 * - `runTools`, `answerDegraded`, `checkHealth`, and `wakeAt` (a deadline in the runtime's timer heap).
 */
export function createAgentActors(deps: AgentActorDeps) {
  const { endpoints, scheduler, clock, logger, memo } = deps;
  const remember = memoWriter(memo, logger);
  // The request an agent's token was estimated for: its call sends the same one (built once, not twice), unless
  // what it is built from changed in between.
  const built = new Map<string, { parts: PromptParts; request: Omit<EngineRequest, 'signal'> }>();
  // Answers read from the memo before any token, by their memo grant, until the call (`startCall`) takes them.
  const memoized = new Map<string, EngineResult>();
  /** What the scheduler is asked for: the agent's token request, sized by the request it will send. */
  const schedulerRequest = (
    input: AcquireTokenInput,
    request: Omit<EngineRequest, 'signal'>,
  ): TokenRequest => {
    const session = deps.sessionOf(input.agent);
    return {
      holder: input.agent,
      tier: input.tier,
      chain: input.chain,
      ...(session !== undefined ? { session } : {}),
      estimatedTokens: estimateRequestTokens(request),
      maxWaitMs: input.maxWaitMs,
      ...(input.cooledMs ? { cooledMs: input.cooledMs } : {}),
      retry: input.retry,
      attempt: input.attempt,
      ...(input.tried ? { tried: input.tried } : {}),
      ...(input.skip ? { skip: input.skip } : {}),
    };
  };
  const requestFor = (agent: string, parts: PromptParts): Omit<EngineRequest, 'signal'> => {
    const b = built.get(agent);
    built.delete(agent);
    const same =
      b !== undefined &&
      b.parts.idempotencyKey === parts.idempotencyKey &&
      b.parts.memory === parts.memory &&
      b.parts.turnMessages === parts.turnMessages;
    return same ? b.request : buildRequest(parts);
  };
  /**
   * Asks the scheduler for a token and an endpoint. With a memo, the memo is read FIRST, holding nothing: a call
   * whose answer is memoized (a resumed round) gets a memo grant (`memo:<key>`) that takes no token, and its
   * call answers from the memo without going upstream.
   */
  const acquireToken = fromCallback<AgentEvent, AcquireTokenInput>(({ input, sendBack }) => {
    let left = false;
    let granted: string | undefined;
    let ticket: TokenTicket | undefined;
    const request = () => {
      try {
        const built0 = buildRequest(input.prompt);
        built.set(input.agent, { parts: input.prompt, request: built0 });
        ticket = scheduler.request(schedulerRequest(input, built0));
      } catch (e) {
        // Reported as an event (the machine's failure path), not thrown into XState.
        sendBack({ type: 'TOKEN.FAILED', error: sanitized(logger, clock, 'acquireToken', e) });
        return;
      }
      ticket.decision.then(
        (d) => {
          if (d.kind === 'granted') granted = d.grant.leaseId;
          else built.delete(input.agent);
          // The agent left `queued` first (cancelled, stopped): nobody will call with this grant.
          if (left) {
            built.delete(input.agent);
            if (granted) scheduler.releaseUnclaimed(granted);
            return;
          }
          sendBack({ type: 'TOKEN.ANSWER', output: tokenAnswer(d) });
        },
        (e: unknown) => {
          if (!left) sendBack({ type: 'TOKEN.FAILED', error: sanitized(logger, clock, 'acquireToken', e) });
        },
      );
    };
    if (!memo) request();
    else {
      const key = input.prompt.idempotencyKey;
      memo.recall(key).then(
        (hit) => {
          if (left) return;
          if (hit === undefined || hit === null) return request();
          const result = hit as EngineResult;
          const leaseId = `${MEMO_LEASE}${key}`;
          memoized.set(leaseId, result);
          const ids = deps.endpointsOf(input.agent, input.chain);
          const endpointId = result.endpoint?.id ?? ids[0] ?? 'memo';
          const index = Math.max(0, ids.indexOf(endpointId));
          sendBack({
            type: 'TOKEN.ANSWER',
            output: { kind: 'granted', leaseId, endpointId, index, at: clock.now() },
          });
        },
        // A memo that cannot be read might hold the answer: asking upstream again could repeat a call that had
        // returned, so the turn fails (a bug or a lost store, reported sanitized), holding nothing.
        (e: unknown) => {
          if (!left) sendBack({ type: 'TOKEN.FAILED', error: sanitized(logger, clock, 'acquireToken', e) });
        },
      );
    }
    return () => {
      left = true;
      if (!granted) built.delete(input.agent);
      ticket?.withdraw();
      // Leaving `queued` for `calling` claims the grant in the same step; anything else leaves it unclaimed.
      if (granted) queueMicrotask(() => scheduler.releaseUnclaimed(granted!));
    };
  });

  /**
   * The engine call, spending its grant: `startCall` on entering `calling` / `fallback`, `stopCall` on leaving.
   * Its cancellation is the only one of the call: the agent leaving the state (cancel, stop) and the lease running
   * out both abort it; the grant is released exactly once, with how the call ended. It is a {@link CallCancel}, not
   * an AbortController: an engine of the adapter listens to it directly, so no AbortSignal is made for a call that
   * is never cancelled (any other engine still gets `request.signal`). Effects, not an invoked actor: an actor per
   * call (its scope, mailbox and start/stop) was a third of an agent's work per turn.
   */
  const running = new WeakMap<object, RunningCall>();
  const startCall = ({ context, self }: { context: AgentContext; self: AnyActorRef }): void => {
    const input = callInputOf(context);
    const call: RunningCall = { cancel: new CallCancel(), left: false, ended: false };
    running.set(self, call);
    let answered: [string, EngineResult] | undefined;
    const report = (outcome: CallOutcome) => {
      if (!call.left) self.send({ type: 'CALL.DONE', output: outcome });
    };
    callEngineBody(input, call.cancel, (key, result) => {
      answered = [key, result];
    }).then(
      (outcome) => {
        call.ended = true;
        // The token is back already (the body released it); the answer is made durable before it is reported.
        // Without a memo there is nothing to wait for: reported now, not a promise and two microtasks later.
        if (answered && memo) remember(answered[0], answered[1]).then(() => report(outcome));
        else report(outcome);
      },
      (e: unknown) => {
        call.ended = true;
        if (!call.left) self.send({ type: 'CALL.FAILED', error: sanitized(logger, clock, 'callEngine', e) });
      },
    );
  };
  /** The agent left its call (the state, or the agent itself: stopped, crashed): a call still running is cut. */
  const stopCall = ({ self }: { self: AnyActorRef }): void => {
    const call = running.get(self);
    if (!call) return;
    running.delete(self);
    call.left = true;
    // Aborting costs an event dispatch: only a call still running needs it.
    if (!call.ended) call.cancel.abort(new Error('the agent left the call (cancelled or stopped)'));
  };
  const callEngineBody = async (
    input: CallEngineInput,
    cancel: CallCancel,
    onAnswer: (key: string, result: EngineResult) => void,
  ): Promise<CallOutcome> => {
    if (input.leaseId.startsWith(MEMO_LEASE)) {
      // A memo grant: no token was taken and nothing goes upstream.
      const key = input.leaseId.slice(MEMO_LEASE.length);
      const result = (memoized.get(input.leaseId) ?? (await memo?.recall(key))) as EngineResult | undefined;
      memoized.delete(input.leaseId);
      if (result) {
        const out = input.stream ? deps.streamOf?.(input.agent, input.turnId) : undefined;
        if (out) replayMemoized(out, input, result);
        return { ok: true, result, at: clock.now(), memoized: true };
      }
      const fault: Fault = {
        kind: 'cancelled',
        provider: 'openai',
        code: 'lease_lost',
        message: 'the memoized answer was gone before the call started; nothing was sent',
        endpointId: input.endpointId,
      };
      return { ok: false, fault, at: clock.now(), leaseLost: true };
    }
    const grant = scheduler.claim(input.leaseId, (reason) => cancel.abort(reason));
    if (!grant) {
      const fault: Fault = {
        kind: 'cancelled',
        provider: 'openai',
        code: 'lease_lost',
        message: 'the concurrency token was gone before the call started; nothing was sent',
        endpointId: input.endpointId,
      };
      return { ok: false, fault, at: clock.now(), leaseLost: true };
    }
    let settlement: CallSettlement = { kind: 'unused' };
    try {
      const request = requestFor(input.agent, input.prompt);
      const key = request.idempotencyKey;
      // The memo was read before the token was asked for (acquireToken): nothing is read while holding it.
      const engine = endpoints.get(input.endpointId)?.engine;
      const started = clock.now();
      const wallStartedAt = Date.now();
      if (!engine) {
        // A BYOK key that expired or was revoked between the grant and the call: nothing was sent, and another
        // endpoint (or the degraded layer) can still answer, so it is a swappable auth fault, not a bug.
        const fault: Fault = input.endpointId.startsWith('byok:')
          ? {
              kind: 'auth',
              provider: 'openai',
              code: 'byok_expired',
              message: `BYOK endpoint ${input.endpointId} is gone (its key expired or was revoked); nothing was sent`,
              endpointId: input.endpointId,
            }
          : internalFault(new Error(`endpoint ${input.endpointId} is gone`), input.endpointId);
        return { ok: false, fault, at: clock.now() };
      }
      // A streamed turn streams its calls; its events go to the caller's channel as they come.
      const out = input.stream ? deps.streamOf?.(input.agent, input.turnId) : undefined;
      const attempt = out ? beginStreamAttempt(out, input, engine.endpoint) : undefined;
      try {
        const result = attempt
          ? attempt.succeeded(await streamCall(engine, request, cancel, attempt))
          : await engine.call(withCancel(engine, request, cancel));
        const at = clock.now();
        settlement = { kind: 'success', result };
        if (logger.isLevelEnabled('info'))
          logger.info(
            {
              ...logLine(input, deps.traceIdsOf),
              outcome: 'ok',
              latencyMs: at - started,
              confirmed_model: `${result.endpoint.provider}/${result.model}`,
            },
            'call',
          );
        const cappedFromMs = result.rateLimit.cappedFromMs;
        if (cappedFromMs !== undefined) warnCapped(logger, cappedCall(input, engine), cappedFromMs);
        if (deps.onCall && (deps.callsHeard?.() ?? true))
          deps.onCall({
            ...callRecord(input, engine, wallStartedAt, started, 'ok', at),
            model: result.model,
            requestModel: engine.endpoint.model,
            usage: result.usage,
            ...(cappedFromMs !== undefined ? { resetCappedFromMs: cappedFromMs } : {}),
          });
        onAnswer(key, result);
        return { ok: true, result, at, memoized: false };
      } catch (e) {
        const at = clock.now();
        const fault = faultOf(e, input.endpointId, cancel, engine.endpoint.provider);
        settlement = { kind: 'fault', fault };
        logger.info(
          {
            ...logLine(input, deps.traceIdsOf),
            outcome: 'fault',
            fault: fault.kind,
            status: fault.status,
            retryAfterMs: fault.retryAfterMs,
            ...(fault.retryAfterCappedFromMs !== undefined
              ? { retryAfterCappedFromMs: fault.retryAfterCappedFromMs }
              : {}),
            latencyMs: at - started,
          },
          'call',
        );
        if (fault.retryAfterCappedFromMs !== undefined)
          warnCapped(logger, cappedCall(input, engine), fault.retryAfterCappedFromMs);
        // What the call may have cost: a reported 0 when refused with a status, unknown (estimated) when cut after it
        // was sent: its prompt ÷ 4 read, the text it had written ÷ 4.
        const usage = faultUsage(fault, {
          inputTokens: Math.max(0, estimateRequestTokens(request) - request.maxTokens),
          outputTokens: estimateTokens(attempt?.receivedChars ?? 0),
        });
        if (deps.onCall && (deps.callsHeard?.() ?? true))
          deps.onCall({
            ...callRecord(input, engine, wallStartedAt, started, 'fault', at, fault),
            ...(usage.source !== 'reported' ? { usage } : {}),
          });
        const partial = attempt?.failed(fault);
        return partial ? { ok: false, fault, at, partial, usage } : { ok: false, fault, at, usage };
      }
    } finally {
      // A call we cut ourselves (cancelled, a deadline, the lease) may still be on its way to the server or its
      // close not yet read there: the token is handed on only once that connection had time to go, so the
      // provider never sees more calls at once than the limit.
      const cut =
        cancel.aborted ||
        (settlement.kind === 'fault' &&
          (settlement.fault.kind === 'timeout' || settlement.fault.kind === 'cancelled'));
      if (cut) releaseCut(grant.leaseId, input.endpointId, settlement);
      else scheduler.release(grant.leaseId, settlement);
    }
  };
  /**
   * Releases the token of a call we cut after {@link ABORT_SETTLE_MS}; its fault reaches the endpoint's health now.
   * The agent asks for its next token the moment the call is reported, and that request must find the endpoint
   * that just stalled cooling or open: recorded only with the release, the retry was granted on that endpoint
   * again while a spare token existed. The run's clock is held meanwhile (a real wait a virtual clock cannot see).
   */
  const releaseCut = (leaseId: string, endpointId: string, settlement: CallSettlement): void => {
    let release = settlement;
    if (settlement.kind === 'fault') {
      endpoints.get(endpointId)?.health.noteFault(settlement.fault, clock.now());
      release = { ...settlement, noted: true };
    }
    const unhold = holdClock(clock);
    setTimeout(() => {
      unhold();
      scheduler.release(leaseId, release);
    }, ABORT_SETTLE_MS);
  };

  const runTools = createRunToolsActor({ definitions: deps.definitions, memo, remember, logger, clock });
  const answerDegraded = createAnswerDegradedActor({ degraded: deps.degraded, logger, clock });
  const wakeAt = createWakeAtActor({ timers: deps.timers, clock });
  const checkHealth = createCheckHealthActor({ endpoints, endpointsOf: deps.endpointsOf, clock });

  /**
   * The first call's token for the turn `ask` starts, taken now when the scheduler can grant one at once (a token
   * free, nobody waiting, an endpoint ready): the agent then goes from idle to calling in one step, with no
   * `queued` state, no `acquireToken` actor and no event in between. Undefined (nothing taken) otherwise, and
   * always with a memo (its read comes before any token), or when the agent is not idle. A grant its agent does
   * not claim in the same step (it was not idle after all) is given back.
   */
  const grantAtOnce = (context: AgentContext, idle: boolean, ask: AskEvent): ReadyAsk | undefined => {
    if (!idle || memo || !scheduler.tryGrant) return undefined;
    let prepared: {
      turn: ReadyAsk['turn'];
      input: AcquireTokenInput;
      request: Omit<EngineRequest, 'signal'>;
      asked: TokenRequest;
    };
    try {
      const turn = turnOfAsk(ask);
      const input = tokenRequestOf({ ...context, turn });
      const request = buildRequest(input.prompt);
      prepared = { turn, input, request, asked: schedulerRequest(input, request) };
    } catch {
      // A request that cannot be built (a prompt that is not text, arguments JSON cannot hold): the ASK queues
      // without a grant, and `acquireToken` meets the same error where it reports it (the turn fails, settled).
      return undefined;
    }
    const { turn, input, request, asked } = prepared;
    const grant = scheduler.tryGrant(asked);
    if (!grant) return undefined;
    built.set(input.agent, { parts: input.prompt, request });
    queueMicrotask(() => scheduler.releaseUnclaimed(grant.leaseId));
    return { grant: tokenAnswer({ kind: 'granted', grant }) as GrantedAnswer, turn };
  };

  return {
    actors: { acquireToken, runTools, answerDegraded, wakeAt, checkHealth },
    actions: { startCall, stopCall },
    grantAtOnce,
    /** Cuts the call of an agent that stopped without leaving its state (its machine failed). */
    leaveCall: (agent: AnyActorRef) => stopCall({ self: agent }),
  };
}

/** What {@link createAgentActors} makes: the machine's actors, and the grant an `ASK` may come with. */
export type AgentActors = ReturnType<typeof createAgentActors>;
