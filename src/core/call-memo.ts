import type { Usage } from './engine-types.ts';
import type { Fault } from './fault.ts';

/**
 * A memo of finished calls keyed by idempotency key. The durable store implements it, so a call whose
 * result was committed is read back instead of being asked again (XState re-runs an invoked promise
 * that was in flight when the process died).
 */
export interface CallMemo {
  recall(key: string): Promise<unknown | undefined>;
  /**
   * Writes a finished call's result durably. The runtime gives the concurrency token back first, then waits for
   * this write before it reports the call (and so the turn) done.
   */
  remember(key: string, value: unknown): Promise<void>;
  /** Resolves when every write started so far has landed. */
  settle?(): Promise<void>;
}

/** One upstream attempt, as the runtime reports it. */
export interface CallRecordEvent {
  /** The agent whose call it was; absent for a HALF-OPEN probe. */
  readonly agent?: string;
  /** The turn whose call it was; absent for a probe. */
  readonly turnId?: string;
  /** The endpoint's place in the agent's chain (0 = primary); absent for a probe. */
  readonly chainPosition?: number;
  /** Wall-clock start (`Date.now()`), whatever clock the run is on: traces are on wall time. */
  readonly wallStartedAt?: number;
  readonly tier: string;
  readonly endpointId: string;
  readonly provider: string;
  /** The model that answered (on success) or the endpoint's model. */
  readonly model: string;
  /** The model the request named (the endpoint's). */
  readonly requestModel?: string;
  readonly outcome: 'ok' | 'fault';
  /** Tokens the provider counted, on success (a count it did not report is `null`, its estimate apart). */
  readonly usage?: Usage;
  readonly startedAt: number;
  readonly at: number;
  readonly fault?: Fault;
  /** On success: the longest wait the rate-limit headers asked for, when `maxRetryAfterMs` cut it. */
  readonly resetCappedFromMs?: number;
  readonly memoized?: boolean;
  /** A HALF-OPEN health probe (an upstream call no agent asked for). */
  readonly probe?: boolean;
}
