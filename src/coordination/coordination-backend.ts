/*
 * The contract every shared coordination backend keeps (PostgreSQL rows, Redis scripts). Times inside a backend
 * are the backend server's own (lease expiry); times handed out are durations, so no two clocks are compared.
 */

/** One global token held by this process: which slot, and the generation it was granted at (fencing). */
export interface GlobalLease {
  /** Backend-specific name of the token (a slot number, a set member). */
  readonly slot: string;
  /** Grows with every grant of the token: a release or renewal of an older generation is refused. */
  readonly generation: number;
}

/** The answer to one acquisition attempt. */
export type GlobalAcquireResult =
  | { readonly ok: true; readonly lease: GlobalLease }
  /** Every token is held; the earliest held lease expires in `retryInMs` (a dead holder's token comes back then). */
  | { readonly ok: false; readonly retryInMs: number | undefined };

/**
 * An endpoint's health as other processes should see it: deadlines as epoch ms of the wall clock (`Date.now()`),
 * so processes with different runtime clocks (a scaled scenario clock) agree on "how long from now".
 */
export interface SharedHealthFacts {
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason?: string;
  /** When the sender's breaker is OPEN: until when; else null. */
  readonly openUntil: number | null;
  /** With `openUntil`: the sender's failed probes since its breaker last closed (the pool backs off together). */
  readonly failedProbes?: number;
  /** The provider's latest rate-limit counts for this key as the sender saw them (`resetAt` wall-clock ms). */
  readonly requests?: SharedWindow;
  readonly tokens?: SharedWindow;
  /** When the counts were seen, wall-clock ms (old counts are not applied). */
  readonly observedAt?: number;
}

/** One rate-limit dimension in {@link SharedHealthFacts}. */
export interface SharedWindow {
  readonly limit?: number;
  readonly remaining?: number;
  readonly resetAt?: number;
}

/** A health change another process published. */
export interface SharedHealthMessage {
  readonly endpointId: string;
  readonly facts: SharedHealthFacts;
  /** The publishing process (its own messages come back to it and are ignored). */
  readonly from: string;
}

/**
 * What one call takes from an endpoint's shared RPM/TPM windows ({@link CoordinationBackend.takeRate}): the
 * pool's processes together never put more than `rpm` requests (or `tpm` tokens) in any window of `windowMs`.
 */
export interface RateAsk {
  /** The quota's name within the pool (the endpoint id). */
  readonly key: string;
  /** Length of the window, real ms (a scenario on a scaled clock shrinks its minute; every process must agree). */
  readonly windowMs: number;
  /** Requests per window; `undefined`: not limited. */
  readonly rpm: number | undefined;
  /** Tokens per window; `undefined`: not limited. */
  readonly tpm: number | undefined;
  /** This call's estimated tokens (clamped to `tpm`, so a large call waits for an empty window, never forever). */
  readonly tokens: number;
}

/** Units taken by one {@link RateAsk}: {@link CoordinationBackend.refundRate} gives them back if the call never went. */
export interface RatePermit {
  readonly key: string;
  readonly windowMs: number;
  /** The window slot the units were counted in (slots are 1/60 of the window). */
  readonly slot: number;
  readonly requests: number;
  readonly tokens: number;
}

/** The answer to {@link CoordinationBackend.takeRate}. */
export type RateTakeResult =
  | { readonly ok: true; readonly permit: RatePermit }
  /** The window is full: enough units leave it in `retryInMs` real ms. */
  | { readonly ok: false; readonly retryInMs: number };

/** Slots per shared window: a unit counts from its slot's start until one whole window after its slot's end. */
export const RATE_SLOTS = 60;

/**
 * A shared coordination backend: a counting semaphore of leased tokens with fencing, wake-ups when a token is
 * given back, and a channel of endpoint health. Every method may reject with a CoordinationUnavailableError.
 *
 * @example
 * ```ts
 * await backend.connect(signal);
 * const r = await backend.tryAcquire(3);
 * if (r.ok) { try { await call(); } finally { await backend.release(r.lease); } }
 * ```
 */
export interface CoordinationBackend {
  /** `PostgreSQL at …` / `Redis at …`, password removed. */
  readonly location: string;
  /** Connects, prepares the schema (PostgreSQL migrations) and subscribes to wake-ups and health. */
  connect(signal?: AbortSignal): Promise<void>;
  /** Takes one of `limit` tokens if one is free (or its lease expired), never more than `limit` at once. */
  tryAcquire(limit: number): Promise<GlobalAcquireResult>;
  /** Gives a token back and wakes the other processes' waiters. A stale generation does nothing. */
  release(lease: GlobalLease): Promise<void>;
  /** Pushes the expiry of these leases one TTL forward; returns the keys ({@link leaseKey}) it renewed. */
  renew(leases: readonly GlobalLease[]): Promise<Set<string>>;
  /**
   * Takes a call's units from an endpoint's shared sliding windows if every limited one has room (atomic across
   * processes; O(slots) = O(1) per call), else says how long until it would.
   */
  takeRate(ask: RateAsk): Promise<RateTakeResult>;
  /** Gives a permit's units back (the call never went); nothing if its slot has already left the window. */
  refundRate(permit: RatePermit): Promise<void>;
  /**
   * Claims the pool's one HALF-OPEN probe of an endpoint for `ttlMs` (real ms): true if this process may send it (a
   * claim it already holds is renewed). The pool probes a recovering endpoint once, not once per process.
   */
  claimProbe(endpointId: string, ttlMs: number): Promise<boolean>;
  /** Gives this process's probe claim back (its probe settled). */
  endProbe(endpointId: string): Promise<void>;
  /** Publishes an endpoint's health to every process of the pool (and keeps it for processes that join later). */
  publishHealth(endpointId: string, facts: SharedHealthFacts): Promise<void>;
  /** The health facts published so far (read once on joining). */
  loadHealth(): Promise<SharedHealthMessage[]>;
  /** Called when another process gave a token back. */
  onWake(listener: () => void): void;
  /** Called with every health message of the pool (this process's own included). */
  onHealth(listener: (message: SharedHealthMessage) => void): void;
  /** Called when the subscription connection was lost (wake-ups stop until it is back). */
  onLost(listener: (error: unknown) => void): void;
  close(): Promise<void>;
}

/**
 * The identity of a lease in {@link CoordinationBackend.renew}'s answer.
 *
 * @example
 * ```ts
 * if (!renewed.has(leaseKey(lease))) fence(lease);
 * ```
 */
export function leaseKey(lease: GlobalLease): string {
  return `${lease.slot}#${lease.generation}`;
}
