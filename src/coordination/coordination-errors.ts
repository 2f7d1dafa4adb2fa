/**
 * The coordination backend cannot be used (unreachable at start, or lost mid-run). The process stops sending
 * (fail closed): no new token is granted and held calls are cancelled before their leases could be reissued.
 * The message is one line naming the option (`coordination.url`) and never holds a password.
 *
 * @example
 * ```ts
 * if (isCoordinationUnavailableError(e)) console.error(e.message);
 * ```
 */
export class CoordinationUnavailableError extends Error {
  readonly code = 'COORDINATION_UNAVAILABLE' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CoordinationUnavailableError';
  }
}

/**
 * Type guard for {@link CoordinationUnavailableError}.
 *
 * @example
 * ```ts
 * try { await backend.connect(signal); } catch (e) { if (isCoordinationUnavailableError(e)) process.exitCode = 2; }
 * ```
 */
export function isCoordinationUnavailableError(e: unknown): e is CoordinationUnavailableError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'COORDINATION_UNAVAILABLE';
}

/**
 * A global token's lease could not be renewed in time: the call holding it was cancelled so it stops before
 * another process could be handed the same token (fencing).
 *
 * @example
 * ```ts
 * if (isLeaseFencedError(grant.signal.reason)) log.warn('lease lost: call cancelled');
 * ```
 */
export class LeaseFencedError extends Error {
  readonly code = 'LEASE_FENCED' as const;
  constructor(message = 'the global token lease could not be renewed in time; the call was cancelled') {
    super(message);
    this.name = 'LeaseFencedError';
  }
}

/**
 * Type guard for {@link LeaseFencedError}.
 *
 * @example
 * ```ts
 * if (isLeaseFencedError(reason)) return;
 * ```
 */
export function isLeaseFencedError(e: unknown): e is LeaseFencedError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'LEASE_FENCED';
}
