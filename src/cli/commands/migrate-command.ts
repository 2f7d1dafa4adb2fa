import type { Command } from 'commander';
import { MIGRATION_NAMES } from '../../store/migration-provider.ts';
import { type DatabaseBackend, DEFAULT_DATA_DIR } from '../../store/open-database.ts';
import { openCliDatabase } from '../cli-store.ts';
import { alignRows, type Print, printToStdout } from '../cli-output.ts';

/** Options of {@link runMigrateCommand}. */
export interface MigrateCommandOptions {
  /** PostgreSQL connection string. Default: none (then `dataDir`, env `DATABASE_URL`, else PGlite). */
  readonly databaseUrl?: string;
  /** PGlite data directory. Default: env `BREAKWATER_DATA_DIR`, else `.breakwater/`. */
  readonly dataDir?: string;
  /** Where the report goes. Default: stdout. */
  readonly print?: Print;
  /** Environment read for `DATABASE_URL` / `BREAKWATER_DATA_DIR` (to say why a backend was chosen). Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Aborts the open (before connecting and before migrating). */
  readonly signal?: AbortSignal;
}

/** What {@link runMigrateCommand} did. */
export interface MigrateReport {
  readonly backend: DatabaseBackend;
  /** The PGlite directory, or the server URL without its password. */
  readonly location: string;
  /** Which input chose the backend: `--database-url`, `--data-dir`, `DATABASE_URL`, `BREAKWATER_DATA_DIR` or `default`. */
  readonly chosenBy: string;
  /** Migrations this run applied (empty when the schema was already current). */
  readonly applied: readonly string[];
  /** Every migration the schema now has, oldest first. */
  readonly current: readonly string[];
}

const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

function chosenBy(options: MigrateCommandOptions, env: Readonly<Record<string, string | undefined>>): string {
  if (set(options.databaseUrl)) return '--database-url';
  if (set(options.dataDir)) return '--data-dir';
  if (set(env.DATABASE_URL)) return 'DATABASE_URL';
  if (set(env.BREAKWATER_DATA_DIR)) return 'BREAKWATER_DATA_DIR';
  return `default (${DEFAULT_DATA_DIR}/)`;
}

/**
 * Opens the store (PGlite or PostgreSQL, as `openDatabase` chooses), brings its schema to the latest
 * migration, prints the backend and the migrations, and closes it.
 *
 * @throws {CliError} when both a URL and a data dir are given, or the server cannot be reached
 * @throws {MigrationError} when a migration fails
 * @example
 * ```ts
 * const report = await runMigrateCommand({ dataDir: '.breakwater' });
 * report.applied; // ['0001-initial', '0002-durable-state-v2'] on a fresh directory, [] after
 * ```
 */
export async function runMigrateCommand(options: MigrateCommandOptions = {}): Promise<MigrateReport> {
  const print = options.print ?? printToStdout;
  const env = options.env ?? process.env;
  const database = await openCliDatabase({ ...options, env });
  try {
    const report: MigrateReport = Object.freeze({
      backend: database.backend,
      location: database.location,
      chosenBy: chosenBy(options, env),
      applied: [...database.migrated],
      current: [...MIGRATION_NAMES],
    });
    const rows: Array<[string, string]> = [
      ['backend', `${report.backend} (chosen by ${report.chosenBy})`],
      ['location', report.location],
      ['applied', report.applied.length > 0 ? report.applied.join(', ') : 'none (already up to date)'],
      ['schema', `up to date: ${report.current.join(', ')}`],
    ];
    for (const line of alignRows(rows)) print(line);
    return report;
  } finally {
    await database.close();
  }
}

/**
 * Registers `breakwater migrate [--database-url URL] [--data-dir DIR]`.
 *
 * @example
 * ```ts
 * registerMigrateCommand(new Command('breakwater'));
 * ```
 */
export function registerMigrateCommand(program: Command): Command {
  return program
    .command('migrate')
    .description('Bring the durable store (embedded PGlite, or PostgreSQL) to the latest schema.')
    .option('--database-url <url>', 'PostgreSQL connection string (default: env DATABASE_URL)')
    .option(
      '--data-dir <dir>',
      `PGlite data directory (default: env BREAKWATER_DATA_DIR, else ${DEFAULT_DATA_DIR}/ in the current directory)`,
    )
    .addHelpText(
      'after',
      '\nBackend: --database-url, else --data-dir, else env DATABASE_URL, else embedded PGlite.\n' +
        'Safe to run again and from several processes: applied migrations are kept and skipped.',
    )
    .action(async (opts: { databaseUrl?: string; dataDir?: string }) => {
      await runMigrateCommand({
        ...(opts.databaseUrl !== undefined ? { databaseUrl: opts.databaseUrl } : {}),
        ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
      });
    });
}
