import type { TokenBucketExport } from '../resilience/token-bucket.ts';
import type { EndpointDescriptor, EngineResult } from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';

/*
 * The plain-data views of endpoint health that the public API hands out, apart from the classes that keep it (which
 * carry XState's types along).
 */

/** A circuit breaker's state: CLOSED lets calls through, OPEN sends nothing, HALF-OPEN lets one probe through. */
export type BreakerState = 'closed' | 'open' | 'halfOpen';

/** Why an endpoint cannot take a call right now. */
export type WaitCause = 'pacing' | 'concurrency' | 'cooldown' | 'open' | 'disabled';

/**
 * Plain-data view of one endpoint's health, for the live view and the visualizer.
 *
 * @example
 * ```ts
 * for (const h of supervisor.health()) console.log(h.id, h.breaker, h.cooldownUntil, h.inFlight);
 * ```
 */
export interface EndpointHealth {
  readonly id: string;
  readonly descriptor: EndpointDescriptor;
  readonly breaker: BreakerState;
  readonly openUntil: number | null;
  /** Failed HALF-OPEN probes since the breaker last closed (each one after the first doubles OPEN's length). */
  readonly failedProbes?: number;
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason?: string;
  readonly inFlight: number;
  readonly concurrencyLimit?: number;
  readonly rpm?: { readonly capacity?: number; readonly available?: number };
  readonly tpm?: { readonly capacity?: number; readonly available?: number };
}

/** How a call (or a probe) that held the endpoint ended. */
export type CallSettlement =
  | { readonly kind: 'success'; readonly result: EngineResult }
  | {
      readonly kind: 'fault';
      readonly fault: Fault;
      /**
       * The endpoint's health recorded this fault already, the moment the call ended
       * (`EndpointHealthTracker.noteFault`), while its slot stayed held for the cut connection to go: the settlement
       * only frees the slot. Default: not recorded yet (the settlement records it).
       */
      readonly noted?: true;
    }
  /** Granted, but nothing went upstream (a memoized answer, a holder that left first): the room is given back. */
  | { readonly kind: 'unused' };

/**
 * What an endpoint's health holds, as plain data: committed with every round and put back on resume, so an OPEN
 * breaker stays OPEN until its time, a key without credit stays disabled, and pacing goes on where it was.
 */
export interface EndpointHealthExport {
  /** `BREAKER_MACHINE_VERSION` of the breaker snapshot; another version is not restored (the breaker starts closed). */
  readonly breakerVersion: number;
  /** The breaker's XState persisted snapshot (state, window of outcomes, `openUntil`). */
  readonly breaker: unknown;
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason?: string;
  readonly consecutiveFaults: number;
  readonly rpm: TokenBucketExport;
  readonly tpm: TokenBucketExport;
  /** The AIMD limiter's adapted value, when adaptive. */
  readonly aimd?: number;
  /**
   * The clock's time of the export (absent in documents of older releases): a resumed run whose new clock starts
   * earlier moves every deadline back by the difference (see `rebaseHealth`).
   */
  readonly exportedAt?: number;
}
