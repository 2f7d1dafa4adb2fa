import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_DATA_DIR } from '../../store/open-database.ts';
import type { RunStatus } from '../../store/store-schema.ts';
import type { RunRecord } from '../../store/store-types.ts';
import { type Print, printToStdout } from '../cli-output.ts';
import { openStoreForCli, parseTimeZone, type StoreCliOptions } from './report-command.ts';
import { formatZonedDateTime } from '../../clock/format-time.ts';

const RUN_STATUSES: readonly RunStatus[] = ['running', 'completed', 'failed', 'interrupted'];

/**
 * One line of `breakwater runs --json`.
 *
 * @example
 * ```ts
 * const resumable = (JSON.parse(stdout) as RunSummary[]).filter((r) => r.status === 'interrupted');
 * ```
 */
export interface RunSummary {
  readonly runId: string;
  readonly scenario: string;
  readonly status: RunStatus;
  /** `run.config.policy`, else `breakwater`. */
  readonly policy: string;
  /** Rounds committed so far. */
  readonly roundsCommitted: number;
  readonly totalRounds: number;
  /** Epoch ms (the store's clock). */
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly finishedAt: number | null;
}

/** Options of {@link runRunsCommand}. */
export interface RunsCommandOptions extends StoreCliOptions {
  /** Print a JSON array instead of the table. Default false. */
  readonly json?: boolean;
  /** Only runs with this status. Default: all. */
  readonly status?: RunStatus;
  /** At most this many, newest first. Default: all. */
  readonly limit?: number;
  /** Zone the table prints times in. Default: the system's zone. */
  readonly timeZone?: string;
  /** Where the lines go. Default: stdout. */
  readonly print?: Print;
}

function summarize(run: RunRecord): RunSummary {
  const config = run.config && typeof run.config === 'object' ? (run.config as { policy?: unknown }) : {};
  return {
    runId: run.runId,
    scenario: run.scenario,
    status: run.status,
    policy: typeof config.policy === 'string' ? config.policy : 'breakwater',
    roundsCommitted: run.currentRound,
    totalRounds: run.totalRounds,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    finishedAt: run.finishedAt,
  };
}

/**
 * Lists the stored runs, newest first: id, scenario, status, rounds committed/total, policy, created.
 * A store that does not exist yet has no runs (nothing is created).
 *
 * @example
 * ```ts
 * const runs = await runRunsCommand({ dataDir: '.breakwater', status: 'interrupted', json: true });
 * ```
 */
export async function runRunsCommand(options: RunsCommandOptions = {}): Promise<RunSummary[]> {
  const print = options.print ?? printToStdout;
  const opened = await openStoreForCli(options);
  let runs: RunSummary[] = [];
  let location: string;
  if (opened.kind === 'open') {
    location = opened.database.location;
    try {
      runs = (
        await opened.store.listRuns({
          ...(options.status ? { status: options.status } : {}),
          ...(options.limit !== undefined ? { limit: options.limit } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        })
      ).map(summarize);
    } finally {
      await opened.database.close();
    }
  } else location = `${opened.location} (no store there yet)`;
  if (options.json) {
    print(JSON.stringify(runs, null, 2));
    return runs;
  }
  if (runs.length === 0) {
    print(`no runs${options.status ? ` with status ${options.status}` : ''} in ${location}`);
    return runs;
  }
  const zone = options.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const rows = [
    ['run', 'scenario', 'status', 'rounds', 'policy', `created (${zone})`],
    ...runs.map((r) => [
      r.runId,
      r.scenario,
      r.status,
      `${r.roundsCommitted}/${r.totalRounds}`,
      r.policy,
      formatZonedDateTime(r.createdAt, zone),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows)
    print(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  return runs;
}

function parseLimit(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

/**
 * Registers `breakwater runs [--json] [--status S] [--limit N] [--database-url URL] [--data-dir DIR]`.
 *
 * @example
 * ```ts
 * registerRunsCommand(new Command('breakwater'));
 * ```
 */
export function registerRunsCommand(program: Command): Command {
  return program
    .command('runs')
    .description('List the stored runs, newest first: id, scenario, status, rounds committed/total.')
    .option(
      '--json',
      'print a JSON array of {runId, status, scenario, policy, roundsCommitted, totalRounds, …}',
    )
    .addOption(new Option('--status <status>', 'only runs with this status').choices(RUN_STATUSES))
    .option('--limit <n>', 'at most this many runs', parseLimit)
    .option('--database-url <url>', 'PostgreSQL connection string (default: env DATABASE_URL)')
    .option(
      '--data-dir <dir>',
      `PGlite data directory (default: env BREAKWATER_DATA_DIR, else ${DEFAULT_DATA_DIR}/ in the current directory)`,
    )
    .option('--time-zone <zone>', 'IANA zone for the created times (default: the system’s)', parseTimeZone)
    .addHelpText(
      'after',
      '\nResume an interrupted run with `breakwater resume <run-id>`; read one with `breakwater report <run-id>`.',
    )
    .action(
      async (flags: {
        json?: boolean;
        status?: RunStatus;
        limit?: number;
        databaseUrl?: string;
        dataDir?: string;
        timeZone?: string;
      }) => {
        await runRunsCommand({
          ...(flags.json ? { json: true } : {}),
          ...(flags.status ? { status: flags.status } : {}),
          ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
          ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}),
          ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
          ...(flags.timeZone ? { timeZone: flags.timeZone } : {}),
        });
      },
    );
}
