import type { CallEngineInput } from '../../machines/agent.machine.ts';
import type { CallCancel } from '../core/call-abort.ts';
import type { CallRecordEvent } from '../core/call-memo.ts';
import type { Engine, EngineRequest, EngineResult } from '../core/engine-types.ts';
import { type Fault, isEngineFaultError } from '../core/fault.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { isLeaseExpiredError } from '../scheduler/token-scheduler.ts';
import type { CappedWaitCall } from './capped-wait-warning.ts';
import type { StreamAttempt } from './stream-attempt.ts';

/*
 * The pieces of one upstream attempt that need nothing of the agent's runtime: its record for the call log, its log
 * line, its cancellation as the engine takes it, the streamed form of the call, and the fault it ended with.
 */

/** A thrown error that is not an engine fault (a bug), as the fault its turn records. */
export function internalFault(e: unknown, endpointId: string): Fault {
  const message = scrubSecrets(e instanceof Error ? e.message : String(e));
  return { kind: 'bad_request', provider: 'openai', message: `internal error: ${message}`, endpointId };
}

/** The call log's record of one attempt (built only when someone hears it: a call on the hot path makes none). */
export function callRecord(
  input: CallEngineInput,
  engine: Engine,
  wallStartedAt: number,
  startedAt: number,
  outcome: 'ok' | 'fault',
  at: number,
  fault?: Fault,
): CallRecordEvent {
  return {
    agent: input.agent,
    turnId: input.turnId,
    chainPosition: input.chainPosition,
    wallStartedAt,
    tier: input.tier,
    endpointId: input.endpointId,
    provider: engine.endpoint.provider,
    model: engine.endpoint.model,
    outcome,
    startedAt,
    at,
    ...(fault ? { fault } : {}),
  };
}

/** Who made a call, for {@link warnCapped}. */
export function cappedCall(input: CallEngineInput, engine: Engine): CappedWaitCall {
  return { agent: input.agent, endpoint: input.endpointId, provider: engine.endpoint.provider };
}

/** The fields every `call` log line starts with. */
export function logLine(
  input: CallEngineInput,
  traceIdsOf: ((turnId: string) => { trace_id: string; span_id: string } | undefined) | undefined,
): Record<string, unknown> {
  return {
    agent: input.agent,
    tier: input.tier,
    endpoint: input.endpointId,
    waitMs: input.waitMs,
    ...traceIdsOf?.(input.turnId),
  };
}

/** One streamed call: the engine's own stream, or (an engine without one) the whole answer as one delta. */
export async function streamCall(
  engine: Engine,
  request: Omit<EngineRequest, 'signal'>,
  cancel: CallCancel,
  attempt: StreamAttempt,
): Promise<EngineResult> {
  // A continuation's budget is what is left of the step's: the kept prefix already spent part of it.
  const req: EngineRequest = attempt.prefill
    ? withCancel(
        engine,
        {
          ...request,
          prefill: attempt.prefill,
          maxTokens: Math.max(1, request.maxTokens - attempt.prefixTokens),
        },
        cancel,
      )
    : withCancel(engine, request, cancel);
  if (engine.stream) return engine.stream(req, attempt.sink);
  const result = await engine.call(req);
  if (result.text) attempt.sink.text(result.text);
  return result;
}

/**
 * `request` with the call's cancellation: `abort` for an engine that takes it (no AbortSignal made), else a
 * `signal` (made now, aborting with the call).
 */
export function withCancel(
  engine: Engine,
  request: Omit<EngineRequest, 'signal'>,
  cancel: CallCancel,
): EngineRequest {
  return engine.takesCallAbort ? { ...request, abort: cancel } : { ...request, signal: cancel.signal };
}

/** The call's fault; a call cancelled because its lease ran out is a `timeout` of that endpoint. */
export function faultOf(
  e: unknown,
  endpointId: string,
  lease: CallCancel,
  provider: Fault['provider'],
): Fault {
  if (lease.aborted && isLeaseExpiredError(lease.reason)) {
    return { kind: 'timeout', provider, code: 'lease_expired', message: lease.reason.message, endpointId };
  }
  if (!isEngineFaultError(e)) return internalFault(e, endpointId);
  // The turn tells its endpoints apart by the faults' endpoint ids (what it tried, what cannot take its request).
  return e.fault.endpointId === undefined ? { ...e.fault, endpointId } : e.fault;
}
