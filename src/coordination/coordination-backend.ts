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
