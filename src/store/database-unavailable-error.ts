/**
 * The database could not be used: the connection was refused, closed, timed out, or the server answered
 * something that is not PostgreSQL. Nothing after the last committed round was written. The message names
 * the server without its password and says what happened; the driver's error is the `cause`.
 *
 * @example
 * ```ts
 * try { await store.commitRound(input); }
 * catch (e) { if (isDatabaseUnavailableError(e)) console.error(`${e.message}; resume the run later`); }
 * ```
 */
export class DatabaseUnavailableError extends Error {
  readonly code = 'DATABASE_UNAVAILABLE' as const;
  /** Where: `PostgreSQL at postgres://user@host:5432/db` (never a password). */
  readonly location: string;
  /** What happened, in a few words (`no answer within 10000 ms`, `the server closed the connection`). */
  readonly problem: string;
  constructor(opts: { location: string; problem: string; cause?: unknown }) {
    super(`${opts.location}: ${opts.problem}`, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'DatabaseUnavailableError';
    this.location = opts.location;
    this.problem = opts.problem;
  }
}

/**
 * Type guard for {@link DatabaseUnavailableError}; also finds one in an error's `cause` chain (a failed
 * migration or transaction wraps it).
 *
 * @example
 * ```ts
 * const lost = findDatabaseUnavailable(e);
 * if (lost) console.error(lost.message);
 * ```
 */
export function isDatabaseUnavailableError(e: unknown): e is DatabaseUnavailableError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'DATABASE_UNAVAILABLE';
}

/**
 * The first {@link DatabaseUnavailableError} in `e` or its `cause` chain, or undefined.
 *
 * @example
 * ```ts
 * findDatabaseUnavailable(new Error('commit failed', { cause: lost })) === lost; // true
 * ```
 */
export function findDatabaseUnavailable(e: unknown): DatabaseUnavailableError | undefined {
  const seen = new Set<unknown>();
  for (
    let at = e;
    at !== null && typeof at === 'object' && !seen.has(at);
    at = (at as { cause?: unknown }).cause
  ) {
    seen.add(at);
    if (isDatabaseUnavailableError(at)) return at;
  }
  return undefined;
}
