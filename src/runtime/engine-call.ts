import type { Logger } from 'pino';
import type { AnyActorRef } from 'xstate';
import type { AgentContext, CallEngineInput, CallOutcome } from '../../machines/agent.machine.ts';
import { callInputOf } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import { CallCancel } from '../core/call-abort.ts';
import type { CallMemo, CallRecordEvent } from '../core/call-memo.ts';
import type { Engine, EngineResult } from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';
import { estimateTokens, faultUsage } from '../core/token-usage.ts';
import type { CallSettlement } from '../health/endpoint-health.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import { sanitized } from './actor-failure.ts';
import { type AgentCallState, type BuiltRequest, MEMO_LEASE } from './agent-call-state.ts';
import {
  callRecord,
  cappedCall,
  faultOf,
  internalFault,
  logLine,
  streamCall,
  withCancel,
} from './call-attempt-parts.ts';
import { warnCapped } from './capped-wait-warning.ts';
import { estimateRequestTokens } from './prompt-builder.ts';
import { beginStreamAttempt, replayMemoized, type StreamAttempt } from './stream-attempt.ts';
import type { TurnStreamSink } from './turn-stream.ts';

/** Real ms a cut call keeps its token after it ended on our side (socket teardown, not simulated time). */
const ABORT_SETTLE_MS = 10;

/** The engine call an agent is in (one at most: an agent runs one call at a time). */
interface RunningCall {
  readonly cancel: CallCancel;
  /** The agent left the call's state: nothing more is reported to it. */
  left: boolean;
  ended: boolean;
}

export interface EngineCallParts {
  readonly endpoints: EndpointRegistry;
  readonly scheduler: TokenScheduler;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly memo: CallMemo | undefined;
  readonly state: AgentCallState;
  /** Makes an answer durable (the memo) before it is reported. */
  readonly remember: (key: string, result: unknown) => Promise<void>;
  readonly onCall: ((record: CallRecordEvent) => void) | undefined;
  readonly callsHeard: (() => boolean) | undefined;
  readonly traceIdsOf: ((turnId: string) => { trace_id: string; span_id: string } | undefined) | undefined;
  readonly streamOf: ((agent: string, turnId: string) => TurnStreamSink | undefined) | undefined;
}

/** A call that never went out: its token (or its memoized answer) was gone before it started. */
function leaseLost(input: CallEngineInput, what: string, at: number): CallOutcome {
  const fault: Fault = {
    kind: 'cancelled',
    provider: 'openai',
    code: 'lease_lost',
    message: `${what} was gone before the call started; nothing was sent`,
    endpointId: input.endpointId,
  };
  return { ok: false, fault, at, leaseLost: true };
}

/**
 * A BYOK key that expired or was revoked between the grant and the call: nothing was sent, and another endpoint
 * (or the degraded layer) can still answer, so it is a swappable auth fault, not a bug.
 */
function goneEndpointFault(endpointId: string): Fault {
  return endpointId.startsWith('byok:')
    ? {
        kind: 'auth',
        provider: 'openai',
        code: 'byok_expired',
        message: `BYOK endpoint ${endpointId} is gone (its key expired or was revoked); nothing was sent`,
        endpointId,
      }
    : internalFault(new Error(`endpoint ${endpointId} is gone`), endpointId);
}

/** One attempt as it goes out: what it sends, on which engine, from when. */
interface Attempt {
  readonly input: CallEngineInput;
  readonly engine: Engine;
  readonly request: BuiltRequest;
  readonly started: number;
  readonly wallStartedAt: number;
  readonly stream: StreamAttempt | undefined;
}

/**
 * The agent machine's engine call, spending its grant: `startCall` on entering `calling` / `fallback`, `stopCall`
 * on leaving. Its cancellation is the only one of the call: the agent leaving the state (cancel, stop) and the
 * lease running out both abort it; the grant is released exactly once, with how the call ended (one log line per
 * attempt, `confirmed_model` on success, as seed 000 counts them). It is a {@link CallCancel}, not an
 * AbortController: an engine of the adapter listens to it directly, so no AbortSignal is made for a call that is
 * never cancelled. Effects, not an invoked actor: an actor per call (its scope, mailbox and start/stop) was a third
 * of an agent's work per turn.
 */
export class EngineCalls {
  readonly #parts: EngineCallParts;
  readonly #running = new WeakMap<object, RunningCall>();

  constructor(parts: EngineCallParts) {
    this.#parts = parts;
  }

  readonly startCall = ({ context, self }: { context: AgentContext; self: AnyActorRef }): void => {
    const { memo, logger, clock } = this.#parts;
    const input = callInputOf(context);
    const call: RunningCall = { cancel: new CallCancel(), left: false, ended: false };
    this.#running.set(self, call);
    let answered: [string, EngineResult] | undefined;
    const report = (outcome: CallOutcome) => {
      if (!call.left) self.send({ type: 'CALL.DONE', output: outcome });
    };
    this.#callEngine(input, call.cancel, (key, result) => {
      answered = [key, result];
    }).then(
      (outcome) => {
        call.ended = true;
        // The token is back already (the call released it); the answer is made durable before it is reported.
        // Without a memo there is nothing to wait for: reported now, not a promise and two microtasks later.
        if (answered && memo) this.#parts.remember(answered[0], answered[1]).then(() => report(outcome));
        else report(outcome);
      },
      (e: unknown) => {
        call.ended = true;
        if (!call.left) self.send({ type: 'CALL.FAILED', error: sanitized(logger, clock, 'callEngine', e) });
      },
    );
  };

  /** The agent left its call (the state, or the agent itself: stopped, crashed): a call still running is cut. */
  readonly stopCall = ({ self }: { self: AnyActorRef }): void => {
    const call = this.#running.get(self);
    if (!call) return;
    this.#running.delete(self);
    call.left = true;
    // Aborting costs an event dispatch: only a call still running needs it.
    if (!call.ended) call.cancel.abort(new Error('the agent left the call (cancelled or stopped)'));
  };

  async #callEngine(
    input: CallEngineInput,
    cancel: CallCancel,
    onAnswer: (key: string, result: EngineResult) => void,
  ): Promise<CallOutcome> {
    const { scheduler, clock, endpoints, state } = this.#parts;
    if (input.leaseId.startsWith(MEMO_LEASE)) return this.#answerFromMemo(input);
    const grant = scheduler.claim(input.leaseId, (reason) => cancel.abort(reason));
    if (!grant) return leaseLost(input, 'the concurrency token', clock.now());
    let settlement: CallSettlement = { kind: 'unused' };
    try {
      const request = state.requestFor(input.agent, input.prompt);
      // The memo was read before the token was asked for (acquireToken): nothing is read while holding it.
      const engine = endpoints.get(input.endpointId)?.engine;
      if (!engine) return { ok: false, fault: goneEndpointFault(input.endpointId), at: clock.now() };
      // A streamed turn streams its calls; its events go to the caller's channel as they come.
      const out = input.stream ? this.#parts.streamOf?.(input.agent, input.turnId) : undefined;
      const attempt: Attempt = {
        input,
        engine,
        request,
        started: clock.now(),
        wallStartedAt: Date.now(),
        stream: out ? beginStreamAttempt(out, input, engine.endpoint) : undefined,
      };
      try {
        const result = attempt.stream
          ? attempt.stream.succeeded(await streamCall(engine, request, cancel, attempt.stream))
          : await engine.call(withCancel(engine, request, cancel));
        settlement = { kind: 'success', result };
        const at = this.#answered(attempt, result);
        onAnswer(request.idempotencyKey, result);
        return { ok: true, result, at, memoized: false };
      } catch (e) {
        const fault = faultOf(e, input.endpointId, cancel, engine.endpoint.provider);
        settlement = { kind: 'fault', fault };
        return this.#faulted(attempt, fault);
      }
    } finally {
      // A call we cut ourselves (cancelled, a deadline, the lease) may still be on its way to the server or its
      // close not yet read there: the token is handed on only once that connection had time to go, so the
      // provider never sees more calls at once than the limit.
      const cut =
        cancel.aborted ||
        (settlement.kind === 'fault' &&
          (settlement.fault.kind === 'timeout' || settlement.fault.kind === 'cancelled'));
      if (cut) this.#releaseCut(grant.leaseId, input.endpointId, settlement);
      else scheduler.release(grant.leaseId, settlement);
    }
  }

  /** A memo grant: no token was taken and nothing goes upstream. */
  async #answerFromMemo(input: CallEngineInput): Promise<CallOutcome> {
    const { state, memo, clock } = this.#parts;
    const key = input.leaseId.slice(MEMO_LEASE.length);
    const result = (state.memoized.get(input.leaseId) ?? (await memo?.recall(key))) as
      | EngineResult
      | undefined;
    state.memoized.delete(input.leaseId);
    if (!result) return leaseLost(input, 'the memoized answer', clock.now());
    const out = input.stream ? this.#parts.streamOf?.(input.agent, input.turnId) : undefined;
    if (out) replayMemoized(out, input, result);
    return { ok: true, result, at: clock.now(), memoized: true };
  }

  #heard(): boolean {
    return this.#parts.onCall !== undefined && (this.#parts.callsHeard?.() ?? true);
  }

  /** An answer: its log line, a warning for a capped wait, its call record. Returns when it ended. */
  #answered(a: Attempt, result: EngineResult): number {
    const { logger, clock } = this.#parts;
    const at = clock.now();
    if (logger.isLevelEnabled('info'))
      logger.info(
        {
          ...logLine(a.input, this.#parts.traceIdsOf),
          outcome: 'ok',
          latencyMs: at - a.started,
          confirmed_model: `${result.endpoint.provider}/${result.model}`,
        },
        'call',
      );
    const cappedFromMs = result.rateLimit.cappedFromMs;
    if (cappedFromMs !== undefined) warnCapped(logger, cappedCall(a.input, a.engine), cappedFromMs);
    if (this.#heard())
      this.#parts.onCall!({
        ...callRecord(a.input, a.engine, a.wallStartedAt, a.started, 'ok', at),
        model: result.model,
        requestModel: a.engine.endpoint.model,
        usage: result.usage,
        ...(cappedFromMs !== undefined ? { resetCappedFromMs: cappedFromMs } : {}),
      });
    return at;
  }

  /** A fault: its log line, a warning for a capped wait, what it may have cost, its call record. */
  #faulted(a: Attempt, fault: Fault): CallOutcome {
    const { logger, clock } = this.#parts;
    const at = clock.now();
    logger.info(
      {
        ...logLine(a.input, this.#parts.traceIdsOf),
        outcome: 'fault',
        fault: fault.kind,
        status: fault.status,
        retryAfterMs: fault.retryAfterMs,
        ...(fault.retryAfterCappedFromMs !== undefined
          ? { retryAfterCappedFromMs: fault.retryAfterCappedFromMs }
          : {}),
        latencyMs: at - a.started,
      },
      'call',
    );
    if (fault.retryAfterCappedFromMs !== undefined)
      warnCapped(logger, cappedCall(a.input, a.engine), fault.retryAfterCappedFromMs);
    // What the call may have cost: a reported 0 when refused with a status, unknown (estimated) when cut after it
    // was sent: its prompt ÷ 4 read, the text it had written ÷ 4.
    const usage = faultUsage(fault, {
      inputTokens: Math.max(0, estimateRequestTokens(a.request) - a.request.maxTokens),
      outputTokens: estimateTokens(a.stream?.receivedChars ?? 0),
    });
    if (this.#heard())
      this.#parts.onCall!({
        ...callRecord(a.input, a.engine, a.wallStartedAt, a.started, 'fault', at, fault),
        ...(usage.source !== 'reported' ? { usage } : {}),
      });
    const partial = a.stream?.failed(fault);
    return partial ? { ok: false, fault, at, partial, usage } : { ok: false, fault, at, usage };
  }

  /**
   * Releases the token of a call we cut after {@link ABORT_SETTLE_MS}; its fault reaches the endpoint's health now.
   * The agent asks for its next token the moment the call is reported, and that request must find the endpoint
   * that just stalled cooling or open: recorded only with the release, the retry was granted on that endpoint
   * again while a spare token existed. The run's clock is held meanwhile (a real wait a virtual clock cannot see).
   */
  #releaseCut(leaseId: string, endpointId: string, settlement: CallSettlement): void {
    const { endpoints, clock, scheduler } = this.#parts;
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
  }
}
