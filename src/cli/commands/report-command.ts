import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { formatRunReport } from '../../report/format-report.ts';
import { loadRunReport } from '../../report/load-run-report.ts';
import type { RunReport } from '../../report/report-types.ts';
import { type BreakwaterDatabase, DEFAULT_DATA_DIR, IN_MEMORY } from '../../store/open-database.ts';
import { createRunStore, type RunStore } from '../../store/run-store.ts';
import { isRunNotFoundError } from '../../store/store-errors.ts';
import { CliError } from '../cli-error.ts';
import { isSet, openCliDatabase, type StoreCliOptions, storeUrl } from '../cli-store.ts';
import { type Print, printToStdout } from '../cli-output.ts';

/**
 * Where a read-only command finds the store: the same choice `breakwater migrate` and `run` make.
 *
 * @example
 * ```ts
 * const where: StoreCliOptions = { dataDir: '.breakwater' };
 * ```
 */
export type { StoreCliOptions } from '../cli-store.ts';

/** An open store, or where it would have been when there is none yet. */
export type CliStore =
  | { readonly kind: 'open'; readonly database: BreakwaterDatabase; readonly store: RunStore }
  | { readonly kind: 'absent'; readonly location: string };

/**
 * Opens the store for a command that only reads it. A PGlite directory that does not exist is not
 * created: the result says it is absent, so the command can say there are no runs there.
 *
 * @throws {CliError} when both a URL and a data dir are given, or the server cannot be reached
 * @example
 * ```ts
 * const opened = await openStoreForCli({ dataDir: '.breakwater' });
 * if (opened.kind === 'open') try { await opened.store.listRuns(); } finally { await opened.database.close(); }
 * ```
 */
export async function openStoreForCli(options: StoreCliOptions = {}): Promise<CliStore> {
  const env = options.env ?? process.env;
  if (!storeUrl({ ...options, env })) {
    const dataDir = isSet(options.dataDir) ? options.dataDir : (env.BREAKWATER_DATA_DIR ?? DEFAULT_DATA_DIR);
    const dir = resolve(process.cwd(), dataDir.trim());
    if (dataDir.trim() !== IN_MEMORY && !existsSync(dir)) return { kind: 'absent', location: dir };
  }
  const database = await openCliDatabase({ ...options, env });
  return { kind: 'open', database, store: createRunStore(database) };
}

/**
 * Parses a time option: ISO 8601 (`2026-08-17T07:00:00+09:00`) or epoch milliseconds.
 *
 * @example
 * ```ts
 * parseTime('2026-08-17T07:00:00+09:00'); // 1786917600000
 * ```
 */
export function parseTime(value: string): number {
  const t = /^\d+$/.test(value.trim()) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(t))
    throw new InvalidArgumentError('must be an ISO 8601 time (e.g. 2026-08-17T07:00:00+09:00) or epoch ms');
  return t;
}

/**
 * Parses `--time-zone`: an IANA zone name.
 *
 * @example
 * ```ts
 * parseTimeZone('Asia/Seoul'); // 'Asia/Seoul'
 * ```
 */
export function parseTimeZone(value: string): string {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return value;
  } catch {
    throw new InvalidArgumentError('must be an IANA time zone, e.g. UTC or Asia/Seoul');
  }
}

/** Options of {@link runReportCommand}. */
export interface ReportCommandOptions extends StoreCliOptions {
  readonly runId: string;
  /** Print the report as one JSON object instead of the table. Default false. */
  readonly json?: boolean;
  /** The checks' window (run clock, epoch ms). Default: the run's stored peak, else the whole run. */
  readonly peak?: { readonly from: number; readonly to: number };
  /** Tiers counted as analysis agents. Default: the run's stored list, else `['analysis']`. */
  readonly analysisTiers?: readonly string[];
  /** Zone the table prints times in. Default: the system's zone. */
  readonly timeZone?: string;
  /** Where the lines go. Default: stdout. */
  readonly print?: Print;
}

/**
 * Prints the report of a stored run: seed 000's checks with thresholds and PASS/FAIL, turn counts,
 * per-tier statistics and calls per model — as a table, or as one JSON object with `json`.
 *
 * @throws {CliError} when the store has no such run
 * @example
 * ```ts
 * const report = await runReportCommand({ runId: 'r-1', dataDir: '.breakwater', json: true });
 * ```
 */
export async function runReportCommand(options: ReportCommandOptions): Promise<RunReport> {
  const print = options.print ?? printToStdout;
  const opened = await openStoreForCli(options);
  const unknown = (where: string) =>
    new CliError(
      `no run "${options.runId}" in ${where}; \`breakwater runs\` lists the stored runs ` +
        '(choose the store with --data-dir or --database-url)',
    );
  if (opened.kind === 'absent') throw unknown(`${opened.location} (no store there)`);
  try {
    const report = await loadRunReport(opened.store, options.runId, {
      ...(options.peak ? { peak: options.peak } : {}),
      ...(options.analysisTiers ? { analysisTiers: options.analysisTiers } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (options.json) print(JSON.stringify(report, null, 2));
    else {
      const timeZone = options.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
      for (const line of formatRunReport(report, { timeZone })) print(line);
    }
    return report;
  } catch (e) {
    if (isRunNotFoundError(e)) throw unknown(opened.database.location);
    throw e;
  } finally {
    await opened.database.close();
  }
}

interface ReportFlags {
  json?: boolean;
  databaseUrl?: string;
  dataDir?: string;
  peakFrom?: number;
  peakTo?: number;
  analysisTiers?: string;
  timeZone?: string;
}

/**
 * Registers `breakwater report <run-id> [--json] [--database-url URL] [--data-dir DIR] [--peak-from T
 * --peak-to T] [--analysis-tiers a,b] [--time-zone Z]`.
 *
 * @example
 * ```ts
 * registerReportCommand(new Command('breakwater'));
 * ```
 */
export function registerReportCommand(program: Command): Command {
  return program
    .command('report')
    .description(
      "Print a run's report: seed 000's checks (PASS/FAIL), turn counts, per-tier and per-model numbers.",
    )
    .argument('<run-id>', 'the run (`breakwater runs` lists them)')
    .option('--json', 'print one JSON object instead of the table')
    .option('--database-url <url>', 'PostgreSQL connection string (default: env DATABASE_URL)')
    .option(
      '--data-dir <dir>',
      `PGlite data directory (default: env BREAKWATER_DATA_DIR, else ${DEFAULT_DATA_DIR}/ in the current directory)`,
    )
    .option(
      '--peak-from <time>',
      'start of the checks window, ISO 8601 or epoch ms (default: the whole run)',
      parseTime,
    )
    .option('--peak-to <time>', 'end of the checks window, ISO 8601 or epoch ms', parseTime)
    .option(
      '--analysis-tiers <tiers>',
      'comma-separated tiers counted as analysis agents (default: analysis)',
    )
    .option('--time-zone <zone>', "IANA zone for the table's times (default: the system's)", parseTimeZone)
    .addHelpText(
      'after',
      '\nTimes are on the run clock (simulated time for a time-scaled scenario). Exit 0 once the report is\n' +
        'printed, whatever the checks say; read `allPassed` in --json output to act on them.',
    )
    .action(async (runId: string, flags: ReportFlags) => {
      if ((flags.peakFrom === undefined) !== (flags.peakTo === undefined))
        throw new CliError('give both --peak-from and --peak-to, or neither (the whole run)');
      if (flags.peakFrom !== undefined && flags.peakTo !== undefined && flags.peakTo < flags.peakFrom)
        throw new CliError('--peak-to is before --peak-from; give the window start first');
      const tiers = flags.analysisTiers
        ?.split(',')
        .map((t) => t.trim())
        .filter(Boolean);
      await runReportCommand({
        runId,
        ...(flags.json ? { json: true } : {}),
        ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}),
        ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
        ...(flags.peakFrom !== undefined && flags.peakTo !== undefined
          ? { peak: { from: flags.peakFrom, to: flags.peakTo } }
          : {}),
        ...(tiers && tiers.length > 0 ? { analysisTiers: tiers } : {}),
        ...(flags.timeZone ? { timeZone: flags.timeZone } : {}),
      });
    });
}
