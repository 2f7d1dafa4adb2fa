/**
 * Errors of the durable store other than the two a runtime branches on (round commit conflicts and
 * snapshot restore failures have their own files). Each carries a `code` and has a guard.
 */

function hasCode(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/**
 * A store call was given data it cannot store: a duplicate turn key inside one round, a round
 * number below 1, a non-JSON value, an identifier that contains a registered secret.
 *
 * @example
 * ```ts
 * try { await store.commitRound(input); }
 * catch (e) { if (isStoreInputError(e)) console.error(e.field, e.message); }
 * ```
 */
export class StoreInputError extends Error {
  readonly code = 'STORE_INPUT_INVALID' as const;
  /** Path of the offending field, e.g. `turns[2].agent`. */
  readonly field: string;
  constructor(opts: { operation: string; field: string; message: string }) {
    super(`${opts.operation}: ${opts.field}: ${opts.message}`);
    this.name = 'StoreInputError';
    this.field = opts.field;
  }
}

/**
 * Type guard for {@link StoreInputError} (also matches by `code`, across module copies).
 *
 * @example
 * ```ts
 * if (isStoreInputError(e)) console.error(`bad ${e.field}`);
 * ```
 */
export function isStoreInputError(e: unknown): e is StoreInputError {
  return hasCode(e, 'STORE_INPUT_INVALID');
}

/**
 * The run named does not exist.
 *
 * @example
 * ```ts
 * try { await store.setRunStatus('nope', 'completed'); }
 * catch (e) { if (isRunNotFoundError(e)) console.error(`no run ${e.runId}`); }
 * ```
 */
export class RunNotFoundError extends Error {
  readonly code = 'RUN_NOT_FOUND' as const;
  readonly runId: string;
  constructor(runId: string) {
    super(`run "${runId}" does not exist; check the run id (listRuns() shows the stored runs)`);
    this.name = 'RunNotFoundError';
    this.runId = runId;
  }
}

/**
 * Type guard for {@link RunNotFoundError} (also matches by `code`, across module copies).
 *
 * @example
 * ```ts
 * if (isRunNotFoundError(e)) return undefined;
 * ```
 */
export function isRunNotFoundError(e: unknown): e is RunNotFoundError {
  return hasCode(e, 'RUN_NOT_FOUND');
}

/**
 * `createRun` was given a run id that is already taken.
 *
 * @example
 * ```ts
 * try { await store.createRun(input); }
 * catch (e) { if (isRunExistsError(e)) await resume(e.runId); }
 * ```
 */
export class RunExistsError extends Error {
  readonly code = 'RUN_EXISTS' as const;
  readonly runId: string;
  constructor(runId: string) {
    super(`run "${runId}" already exists; resume it, or pick another run id`);
    this.name = 'RunExistsError';
    this.runId = runId;
  }
}

/**
 * Type guard for {@link RunExistsError} (also matches by `code`, across module copies).
 *
 * @example
 * ```ts
 * if (isRunExistsError(e)) runId = `${runId}-2`;
 * ```
 */
export function isRunExistsError(e: unknown): e is RunExistsError {
  return hasCode(e, 'RUN_EXISTS');
}

/**
 * A schema migration failed; the database is left at the last migration that succeeded (each
 * migration runs in a transaction).
 *
 * @example
 * ```ts
 * try { await migrateToLatest(db); }
 * catch (e) { if (isMigrationError(e)) console.error(`migration ${e.migration} failed`, e.cause); }
 * ```
 */
export class MigrationError extends Error {
  readonly code = 'MIGRATION_FAILED' as const;
  /** Name of the migration that failed, when kysely reported one. */
  readonly migration: string | undefined;
  constructor(migration: string | undefined, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      `database migration ${migration ? `"${migration}" ` : ''}failed: ${why}; ` +
        'fix the cause and run `breakwater migrate` again (applied migrations are kept)',
      { cause },
    );
    this.name = 'MigrationError';
    this.migration = migration;
  }
}

/**
 * Type guard for {@link MigrationError} (also matches by `code`, across module copies).
 *
 * @example
 * ```ts
 * if (isMigrationError(e)) process.exitCode = 2;
 * ```
 */
export function isMigrationError(e: unknown): e is MigrationError {
  return hasCode(e, 'MIGRATION_FAILED');
}
