import type { ProviderKind } from './engine-types.ts';

/**
 * Every failure from every provider becomes one of these kinds.
 * - `rate_limited`: 429 that goes away by itself (honour `retryAfterMs`).
 * - `credit_exhausted`: the key's credit/quota/spend cap is gone; needs a human (or BYOK). Never retried like a 429.
 * - `overloaded`: provider-wide transient overload (529, 503, "server busy").
 * - `server_error`: 500/502/504 and friends.
 * - `network`: connection refused/reset/DNS.
 * - `timeout`: no headers before the deadline, or the body stalled past the idle timer.
 * - `auth`: bad or unauthorized key.
 * - `request_too_large`: the request needs more than this endpoint can ever take (OpenAI's 429 "Request too large
 *   … Limit X, Requested Y": more tokens than its per-minute limit). No retry there fixes it; another endpoint may
 *   take it, so the turn skips this one for the call and the endpoint's health is untouched.
 * - `bad_request`: the request itself is wrong; no engine swap fixes it.
 * - `cancelled`: the caller aborted.
 *
 * @example
 * ```ts
 * const capacity = (k: FaultKind) => k === 'rate_limited' || k === 'credit_exhausted';
 * ```
 */
export type FaultKind =
  | 'rate_limited'
  | 'credit_exhausted'
  | 'overloaded'
  | 'server_error'
  | 'network'
  | 'timeout'
  | 'auth'
  | 'request_too_large'
  | 'bad_request'
  | 'cancelled';

/** All fault kinds, in the classifier's evaluation order. */
export const FAULT_KINDS: readonly FaultKind[] = Object.freeze([
  'credit_exhausted',
  'rate_limited',
  'overloaded',
  'server_error',
  'network',
  'timeout',
  'auth',
  'request_too_large',
  'bad_request',
  'cancelled',
]);

/**
 * A classified failure. Plain data: safe to put in snapshots, logs and the database.
 *
 * @example
 * ```ts
 * for (const f of turn.faults) console.log(f.kind, f.endpointId, f.status, f.retryAfterMs);
 * ```
 */
export interface Fault {
  readonly kind: FaultKind;
  readonly provider: ProviderKind;
  /** HTTP status, when there was a response. */
  readonly status?: number;
  /**
   * When the provider said to come back, in ms from the moment of classification, on the run's clock.
   * Instants on the wire (reset times, HTTP dates) are read against wall time first. Never more than
   * the endpoint's `maxRetryAfterMs` (default 15 min): see {@link Fault.retryAfterCappedFromMs}.
   */
  readonly retryAfterMs?: number;
  /**
   * Set when the provider asked for a longer wait than the endpoint's `maxRetryAfterMs`: the wait it
   * asked for, in ms. `retryAfterMs` then holds the cap. The runtime logs it (an absurd header, a clock
   * skew, or a provider telling a client to go away for days all look the same from here).
   */
  readonly retryAfterCappedFromMs?: number;
  /**
   * How long the key should stay disabled, in ms from classification, when the provider's own window
   * says so (a `credit_exhausted` Gemini per-day quota: until the next midnight America/Los_Angeles).
   * When set, endpoint health disables the key for this long instead of its `creditCooldownMs`.
   */
  readonly disableForMs?: number;
  /**
   * Why the key is disabled for `disableForMs`, in a few words for the health views (`per-day quota … exhausted,
   * until Gemini's daily reset at 00:00 America/Los_Angeles`). Set with `disableForMs`.
   */
  readonly disableReason?: string;
  readonly requestId?: string;
  /** The provider's own error code/type (e.g. `insufficient_quota`, `overloaded_error`, `RESOURCE_EXHAUSTED`). */
  readonly code?: string;
  /** Human-readable, with every secret scrubbed. */
  readonly message: string;
  /** The endpoint id the call went to, when known. */
  readonly endpointId?: string;
}

/** Kinds that may succeed if the same endpoint is tried again later. */
export function isTransientFault(kind: FaultKind): boolean {
  return (
    kind === 'rate_limited' ||
    kind === 'overloaded' ||
    kind === 'server_error' ||
    kind === 'network' ||
    kind === 'timeout'
  );
}

/**
 * A stall: the call got no response (no headers before the deadline) or its body stopped coming (the idle
 * deadline), or it ran past its lease. Every call to a stalling endpoint costs a whole deadline, so the endpoint is
 * taken out of rotation at once until a probe finds it answering again. A 408 is an answer, not a stall.
 *
 * @example
 * ```ts
 * isStallFault({ kind: 'timeout', provider: 'openai', message: 'body idle for 2000 ms' }); // true
 * ```
 */
export function isStallFault(fault: Fault): boolean {
  return fault.kind === 'timeout' && fault.status === undefined;
}

/**
 * Kinds no engine swap fixes: a bad request fails on every engine, and a cancelled call was meant to stop.
 *
 * @example
 * ```ts
 * if (isFinalFault(fault.kind)) return failTurn(fault); // no other endpoint is tried
 * ```
 */
export function isFinalFault(kind: FaultKind): boolean {
  return kind === 'bad_request' || kind === 'cancelled';
}

/** Kinds that another engine may fix (everything but a {@link isFinalFault final} one). */
export function isSwappableFault(kind: FaultKind): boolean {
  return !isFinalFault(kind);
}

/**
 * Kinds that say the endpoint has no room for us (its rate limit, its credit, its key): trying another endpoint
 * after one is a fallback, not a retry.
 *
 * @example
 * ```ts
 * const retry = attempts > 0 && !isCapacityFault(last.kind);
 * ```
 */
export function isCapacityFault(kind: FaultKind): boolean {
  return kind === 'rate_limited' || kind === 'credit_exhausted' || kind === 'auth';
}

/**
 * Kinds that say the endpoint can never take this request (it is larger than the endpoint accepts): the step skips
 * that endpoint from then on.
 *
 * @example
 * ```ts
 * if (isUnfitFault(fault.kind)) skip.push(fault.endpointId);
 * ```
 */
export function isUnfitFault(kind: FaultKind): boolean {
  return kind === 'request_too_large';
}

/**
 * The error an {@link Engine} rejects with. It carries the classified {@link Fault}.
 *
 * @example
 * ```ts
 * try { await engine.call(req); }
 * catch (e) { if (isEngineFaultError(e) && e.fault.kind === 'rate_limited') wait(e.fault.retryAfterMs); }
 * ```
 */
export class EngineFaultError extends Error {
  readonly code = 'ENGINE_FAULT' as const;
  readonly fault: Fault;
  constructor(fault: Fault) {
    super(`${fault.kind}${fault.status ? ` (${fault.status})` : ''}: ${fault.message}`);
    this.name = 'EngineFaultError';
    this.fault = fault;
  }
}

/**
 * Type guard for {@link EngineFaultError}.
 *
 * @example
 * ```ts
 * try { await engine.call(request); } catch (e) { if (isEngineFaultError(e)) console.log(e.fault.kind); }
 * ```
 */
export function isEngineFaultError(e: unknown): e is EngineFaultError {
  return (
    e instanceof EngineFaultError ||
    (typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'ENGINE_FAULT')
  );
}
