import type { CallSettlement, WaitCause } from '../health/endpoint-health-view.ts';

/** What an agent asks the scheduler for: a concurrency token and an endpoint of its chain to spend it on. */
export interface TokenRequest {
  /** Who asks: the agent's name. */
  readonly holder: string;
  /** Priority tier (earlier tiers in the config are served first; FIFO inside a tier). */
  readonly tier: string;
  /** Name of the agent's chain; the scheduler resolves it to endpoint ids (plus session-bound BYOK keys). */
  readonly chain: string;
  /** The BYOK session whose keys come after the chain. Default: none. */
  readonly session?: string;
  /** Tokens the call is estimated to use (input + max output), for TPM pacing. */
  readonly estimatedTokens: number;
  /** Longest the agent may wait for an endpoint before it answers degraded, ms (counted from its last call). */
  readonly maxWaitMs: number;
  /**
   * How long this request already cooled since its last call (or its ask), ms: it may wait `maxWaitMs` minus this
   * more. Default 0.
   */
  readonly cooledMs?: number;
  /**
   * A re-attempt, charged to the retry budget when it is granted on an endpoint it was `tried` on (with no `tried`
   * list: wherever it is granted). The budget limits retries, not fallbacks: with the budget spent, the request
   * may still go to an endpoint it has not tried, and is denied only when none is left.
   */
  readonly retry: boolean;
  /** Upstream attempts already made for this engine call (0 = first). */
  readonly attempt: number;
  /** Endpoints this engine call already failed on. Default: none known. */
  readonly tried?: readonly string[];
  /**
   * Endpoints this call must not go to: they cannot take it (a request too large for them), or its retries are
   * spent and only endpoints it never tried are left. Default none.
   */
  readonly skip?: readonly string[];
  /**
   * Asks its holder has left to run one after another, this one included (an agent's queue of asks), a whole
   * number ≥ 1. The `slack` tier policy starts the longest chains early enough that they do not outlast the rest.
   * Default: unknown (the request is served in tier order).
   */
  readonly workLeft?: number;
}

/**
 * A granted token, bound to one endpoint. `signal` aborts when the lease is taken back (the holder overran
 * `leaseMs`) or the scheduler closes: the holder's call must stop then, so the cap on calls in flight holds.
 */
export interface Grant {
  readonly leaseId: string;
  readonly holder: string;
  readonly tier: string;
  readonly endpointId: string;
  /** Position of the endpoint in the request's chain: 0 = primary, more = fallback. */
  readonly index: number;
  readonly grantedAt: number;
  readonly leaseUntil: number;
  readonly estimatedTokens: number;
  readonly probe: boolean;
  readonly signal: AbortSignal;
}

/** The scheduler's answer to a {@link TokenRequest}. */
export type TokenDecision =
  | { readonly kind: 'granted'; readonly grant: Grant }
  /** Every usable endpoint is cooling (cooldown, open breaker, disabled key): wait without a token until `until`. */
  | {
      readonly kind: 'cool';
      readonly endpointId: string;
      readonly until: number;
      readonly cause: WaitCause;
      readonly at: number;
    }
  /** No endpoint can answer within the agent's max wait, or the retry budget is spent: answer degraded. */
  | { readonly kind: 'denied'; readonly reason: string; readonly at: number };

/** A request in the scheduler, withdrawn by hand. */
export interface TokenTicket {
  readonly decision: Promise<TokenDecision>;
  withdraw(reason?: unknown): void;
}

/**
 * The token state at a glance.
 *
 * @example
 * ```ts
 * const { limit, held, waiting } = supervisor.tokens();
 * ```
 */
export interface TokenView {
  readonly limit: number;
  readonly held: number;
  readonly holders: readonly {
    readonly holder: string;
    readonly endpointId: string;
    readonly tier: string;
  }[];
  /** Waiting requests in the order they would be served (tier, then arrival). */
  readonly queue: readonly { readonly agent: string; readonly tier: string }[];
}

/** A decision or a state change the scheduler reports (the event log and the visualizer are built from them). */
export type SchedulerReport =
  | {
      type: 'token.granted';
      at: number;
      agent: string;
      tier: string;
      endpointId: string;
      leaseId: string;
      waitedMs: number;
      held: number;
    }
  | { type: 'token.released'; at: number; agent: string; endpointId: string; leaseId: string; held: number }
  | { type: 'token.reclaimed'; at: number; holder: string; endpointId: string; leaseId: string }
  | { type: 'token.wait'; at: number; agent: string; endpointId: string; until: number; cause: string }
  | { type: 'token.denied'; at: number; agent: string; reason: string }
  /** Wait or switch: `agent` waits for `endpointId` rather than take `insteadOf`, which is ready (see RuntimeEvent). */
  | {
      type: 'route.wait';
      at: number;
      agent: string;
      endpointId: string;
      until: number;
      insteadOf: string;
      expectedMs: number;
      insteadExpectedMs: number;
    }
  | { type: 'probe.started'; at: number; endpointId: string; leaseId: string };

/**
 * The grant path, behind an interface so the same contract can live in memory (one process) or in a shared
 * store (several processes on one quota). Contract:
 * - `acquire` settles exactly once: granted, cool, denied; or rejects with the signal's reason when the
 *   signal aborts first (the request is withdrawn at once, nothing is held).
 * - At most `limit` grants are held at any instant; a grant is held from `acquire` until `release`.
 * - A grant that is not released within `leaseMs` has its `signal` aborted; its token comes back when the
 *   holder releases it (or after a grace period if the holder ignores the abort).
 * - `release` of an unknown or already released lease does nothing.
 *
 * @example
 * ```ts
 * const d = await scheduler.acquire({ holder: 'Kai', tier: 'analysis', chain: 'premium', estimatedTokens: 900,
 *   maxWaitMs: 10_000, retry: false, attempt: 0 }, signal);
 * if (d.kind === 'granted') {
 *   try { result = await engine.call({ ...request, signal: d.grant.signal }); outcome = { kind: 'success', result }; }
 *   finally { scheduler.release(d.grant.leaseId, outcome); }
 * }
 * ```
 */
export interface TokenScheduler {
  acquire(request: TokenRequest, signal?: AbortSignal): Promise<TokenDecision>;
  /**
   * `acquire` without a signal, for callers that withdraw by hand (the agent's callback actor does, when its
   * state is left): `withdraw` before the decision rejects it with `reason`; after, it does nothing.
   */
  request(request: TokenRequest): TokenTicket;
  /**
   * A grant now, or `undefined` with nothing changed: only when a token is free, nobody waits ahead (no request,
   * no probe) and an endpoint of the chain is ready. A first attempt only (`retry: false`; a retry goes through
   * {@link TokenScheduler.request}, which charges the budget). It lets an agent go from idle straight to calling
   * in one step. Optional: a scheduler that cannot decide synchronously (a shared store) leaves it out.
   */
  tryGrant?(request: TokenRequest): Grant | undefined;
  /** A token for a HALF-OPEN probe of `endpointId`: served before every tier. */
  acquireProbe(endpointId: string, signal?: AbortSignal): Promise<Grant>;
  /**
   * The holder takes up its grant (returns it), or `undefined` when it is gone (released, reclaimed, unknown).
   * `onReclaim` is called (besides `signal` aborting) if the lease runs out: the holder must stop its call.
   */
  claim(leaseId: string, onReclaim?: (reason: unknown) => void): Grant | undefined;
  /** Gives a token back with how its call ended (the endpoint's health records it). */
  release(leaseId: string, outcome: CallSettlement): void;
  /** Gives back a grant nobody claimed (its holder left before calling). Does nothing once claimed. */
  releaseUnclaimed(leaseId: string): void;
  /** Changes the number of tokens (at least 1). */
  setLimit(limit: number): void;
  /** An endpoint may be ready sooner than it said: look at its waiters again. */
  wake(endpointId: string): void;
  /** The set of endpoints changed (a BYOK key came or went): look at every waiter again. */
  rescan(): void;
  view(): TokenView;
  /**
   * Refuses new requests, rejects the waiting ones and aborts every held grant. Releases still come in (the
   * aborted calls end) and are recorded.
   */
  close(reason?: unknown): void;
  /** Resolves once no grant is held (every call granted so far has ended), or when `signal` aborts. */
  whenIdle(signal?: AbortSignal): Promise<void>;
}

/**
 * The scheduler was closed (the runtime stopped) before the request was served.
 *
 * @example
 * ```ts
 * try { await scheduler.acquire(request); } catch (e) { if (isSchedulerClosedError(e)) return; throw e; }
 * ```
 */
export class SchedulerClosedError extends Error {
  readonly code = 'SCHEDULER_CLOSED' as const;
  constructor(message = 'the token scheduler is closed (the runtime stopped)') {
    super(message);
    this.name = 'SchedulerClosedError';
  }
}

/** Type guard for {@link SchedulerClosedError}. */
export function isSchedulerClosedError(e: unknown): e is SchedulerClosedError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'SCHEDULER_CLOSED';
}

/**
 * A lease ran past `leaseMs`: its token is being taken back and the holder's call is cancelled. This is the
 * reason of the aborted {@link Grant.signal}.
 *
 * @example
 * ```ts
 * if (isLeaseExpiredError(grant.signal.reason)) fault = { kind: 'timeout', ... };
 * ```
 */
export class LeaseExpiredError extends Error {
  readonly code = 'LEASE_EXPIRED' as const;
  readonly leaseMs: number;
  constructor(leaseMs: number) {
    super(`the call held its concurrency token longer than the lease (${leaseMs} ms); it was cancelled`);
    this.name = 'LeaseExpiredError';
    this.leaseMs = leaseMs;
  }
}

/** Type guard for {@link LeaseExpiredError}. */
export function isLeaseExpiredError(e: unknown): e is LeaseExpiredError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'LEASE_EXPIRED';
}

/**
 * `TokenScheduler.acquire` in terms of `request`: one ticket, withdrawn if `signal` aborts before its decision.
 * Shared by every scheduler, so a refused-when-closed or pre-aborted ask behaves the same on each.
 *
 * @example
 * ```ts
 * acquire(request, signal) { return acquireTicket(this.#closed, () => this.request(request), signal); }
 * ```
 */
export function acquireTicket(
  closed: boolean,
  request: () => TokenTicket,
  signal?: AbortSignal,
): Promise<TokenDecision> {
  if (closed) return Promise.reject(new SchedulerClosedError());
  if (signal?.aborted) return Promise.reject(signal.reason);
  const ticket = request();
  if (signal) {
    const onAbort = () => ticket.withdraw(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const off = () => signal.removeEventListener('abort', onAbort);
    ticket.decision.then(off, off);
  }
  return ticket.decision;
}
