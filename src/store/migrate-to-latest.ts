import { type Kysely, Migrator } from 'kysely';
import { breakwaterMigrationProvider } from './migration-provider.ts';
import { findDatabaseUnavailable } from './database-unavailable-error.ts';
import { MigrationError } from './store-errors.ts';

/**
 * kysely's bookkeeping table, named for breakwater so it never clashes with another app's.
 *
 * @example
 * ```ts
 * await sql`select name from ${sql.table(MIGRATION_TABLE)}`.execute(db);
 * ```
 */
export const MIGRATION_TABLE = 'breakwater_migration';
/**
 * The lock table kysely uses to serialize concurrent migrators.
 *
 * @example
 * ```ts
 * new Migrator({ db, provider: breakwaterMigrationProvider, migrationTableName: MIGRATION_TABLE, migrationLockTableName: MIGRATION_LOCK_TABLE });
 * ```
 */
export const MIGRATION_LOCK_TABLE = 'breakwater_migration_lock';

/**
 * Options of {@link migrateToLatest}.
 *
 * @example
 * ```ts
 * await migrateToLatest(db, { signal: AbortSignal.timeout(30_000) });
 * ```
 */
export interface MigrateOptions {
  /** Checked before migrating; a migration already running finishes (it is one transaction). */
  readonly signal?: AbortSignal;
}

/**
 * Brings the schema to the latest migration in `migrations/`. Safe to call on every start and from
 * several processes at once: kysely takes an advisory lock and each migration runs in its own
 * transaction, so a second call is a no-op.
 *
 * @returns the names of the migrations this call applied (empty when already up to date)
 * @throws {MigrationError} naming the migration that failed
 * @throws {DatabaseUnavailableError} when the server could not be used at all
 *
 * @example
 * ```ts
 * const applied = await migrateToLatest(db); // ['0001-initial'] on a fresh database, [] after
 * ```
 */
export async function migrateToLatest(db: Kysely<unknown>, options: MigrateOptions = {}): Promise<string[]> {
  options.signal?.throwIfAborted();
  const migrator = new Migrator({
    db,
    provider: breakwaterMigrationProvider,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    // A server that cannot be reached is not a failed migration: say so, not "run migrate again".
    const lost = findDatabaseUnavailable(error);
    if (lost) throw lost;
    const failed = results.find((r) => r.status === 'Error');
    throw new MigrationError(failed?.migrationName, error);
  }
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
