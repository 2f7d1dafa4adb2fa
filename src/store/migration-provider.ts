import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from '../../migrations/0001-initial.ts';
import * as m0002 from '../../migrations/0002-durable-state-v2.ts';
import * as m0003 from '../../migrations/0003-coordination.ts';
import * as m0004 from '../../migrations/0004-round-parts.ts';
import * as m0005 from '../../migrations/0005-rate-windows.ts';
import * as m0006 from '../../migrations/0006-coordination-sweep.ts';
import * as m0007 from '../../migrations/0007-committed-events.ts';

/**
 * Every migration in `migrations/`, by name. A static import map instead of reading the folder at
 * run time: it works the same under tsx, vitest and a bundler, and a missing file fails at import.
 * Add each new migration file here; names sort in the order they must run.
 */
const MIGRATIONS: Readonly<Record<string, Migration>> = Object.freeze({
  '0001-initial': m0001,
  '0002-durable-state-v2': m0002,
  '0003-coordination': m0003,
  '0004-round-parts': m0004,
  '0005-rate-windows': m0005,
  '0006-coordination-sweep': m0006,
  '0007-committed-events': m0007,
});

/**
 * The kysely {@link MigrationProvider} for breakwater's schema.
 *
 * @example
 * ```ts
 * const migrator = new Migrator({ db, provider: breakwaterMigrationProvider });
 * await migrator.migrateToLatest();
 * ```
 */
export const breakwaterMigrationProvider: MigrationProvider = Object.freeze({
  getMigrations: async () => ({ ...MIGRATIONS }),
});

/**
 * Names of all known migrations, oldest first.
 *
 * @example
 * ```ts
 * const pending = MIGRATION_NAMES.filter((n) => !applied.includes(n));
 * ```
 */
export const MIGRATION_NAMES: readonly string[] = Object.freeze(Object.keys(MIGRATIONS).sort());
