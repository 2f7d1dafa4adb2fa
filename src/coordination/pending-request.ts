import type { Grant, TokenDecision, TokenRequest, TokenTicket } from '../scheduler/token-scheduler.ts';

/** A request granted by the local scheduler, waiting for a global token. */
export interface Pending {
  readonly request: TokenRequest | undefined;
  /**
   * Real time the backend first answered it with a grant it could not use (past its lease's or its permit's
   * deadline) since its latest local grant; `undefined` while tokens are only busy. Its max wait counts from here.
   */
  lateSince: number | undefined;
  /** Withdrawn or settled. */
  done: boolean;
  /** A probe holding the pool's probe claim of its endpoint. */
  probeClaimed: boolean;
  /** A probe's endpoint (set before its local grant exists). */
  readonly probeOf: string | undefined;
  /**
   * Why a parked probe waits: `claim` — another process holds the pool's probe (it looks again when that endpoint's
   * shared health changes, a claim is given back, or the claim's TTL ran out), holding no token meanwhile; `pace` —
   * its endpoint's shared window is full (it looks again on its timer only).
   */
  parkedFor: 'claim' | 'pace' | undefined;
  /** Real time (`now()`) its claim was last asked for (a probe that waited long claims again before it goes). */
  claimedAt: number;
  /** Real time it was parked (wake-ups look again at most every `MIN_RECLAIM_MS`, probe-parking.ts). */
  parkedAt: number;
  /** A probe's caller's signal (its claim is asked again with it). */
  readonly signal: AbortSignal | undefined;
  localTicket: TokenTicket | undefined;
  grant: Grant | undefined;
  resolve(d: TokenDecision | Grant): void;
  reject(e: unknown): void;
}

/** A new request, in no queue yet: a token request, or (without one) a probe of `probeOf` with its caller's signal. */
export function newPending(
  request: TokenRequest | undefined,
  probeOf: string | undefined,
  signal: AbortSignal | undefined,
  resolve: (d: TokenDecision | Grant) => void,
  reject: (e: unknown) => void,
): Pending {
  return {
    request,
    lateSince: undefined,
    done: false,
    probeClaimed: false,
    probeOf,
    parkedFor: undefined,
    claimedAt: 0,
    parkedAt: 0,
    signal,
    localTicket: undefined,
    grant: undefined,
    resolve,
    reject,
  };
}
