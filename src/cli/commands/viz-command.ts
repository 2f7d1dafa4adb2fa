import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_DATA_DIR } from '../../store/open-database.ts';
import { createRunStore } from '../../store/run-store.ts';
import type { RunRecord } from '../../store/store-types.ts';
import { startVizServer } from '../../viz/viz-server.ts';
import { CliError } from '../cli-error.ts';
import { alignRows, type Print, printToStdout } from '../cli-output.ts';
import { openCliDatabase } from '../cli-store.ts';
import { listenForStop, whenAborted } from '../stop-signal.ts';

/** Options of {@link runVizCommand}. */
export interface VizCommandOptions {
  /**
   * The run to replay. Default none: list the runs, then (with a `signal`) serve the runs page, which
   * links each run to its replay; without a `signal`, list them and return.
   */
  readonly run?: string;
  /** Port on 127.0.0.1; 0 = a free port. Default 0. */
  readonly port?: number;
  /** PostgreSQL connection string. Default: none (then `dataDir`, env `DATABASE_URL`, else PGlite). */
  readonly databaseUrl?: string;
  /** PGlite data directory. Default: env `BREAKWATER_DATA_DIR`, else `.breakwater/`. */
  readonly dataDir?: string;
  /** Stops the server (replay mode). Required for a replay: without it the server would never stop. */
  readonly signal?: AbortSignal;
  /** Where the lines go. Default: stdout. */
  readonly print?: Print;
  /** Environment read for `DATABASE_URL`. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Called with the server's URL once it listens (tests, embedding). Default none. */
  readonly onListening?: (url: string) => void;
}

const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/**
 * Parses `--port`: an integer from 0 (a free port) to 65 535.
 *
 * @example
 * ```ts
 * parseVizPort('8080'); // 8080
 * ```
 */
export function parseVizPort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65_535)
    throw new InvalidArgumentError('must be an integer from 0 (a free port) to 65535');
  return port;
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/**
 * The runs as aligned lines (id, status, rounds, created, scenario), in the order given.
 *
 * @example
 * ```ts
 * for (const line of describeRuns(await store.listRuns())) console.log(line);
 * ```
 */
export function describeRuns(runs: readonly RunRecord[]): string[] {
  const rows: Array<[string, string]> = runs.map((r) => [
    r.runId,
    `${r.status.padEnd(11)} round ${r.currentRound}/${r.totalRounds}  ${when(r.createdAt)}  ${r.scenario}`,
  ]);
  return alignRows(rows, '  ');
}

/**
 * `breakwater viz`: without `run`, lists the store's runs and serves the runs page (status, scenario,
 * start, duration, result, a link to each replay); with `run`, serves the replay page of that run (a time
 * scrubber over its event log). Either on 127.0.0.1 until `signal` aborts.
 *
 * @throws {CliError} when both a URL and a data dir are given, the run does not exist, or the port is taken
 * @example
 * ```ts
 * await runVizCommand({ dataDir: '.breakwater' }); // lists runs
 * const stop = new AbortController();
 * void runVizCommand({ run: 'r-1', port: 0, signal: stop.signal, onListening: (url) => console.log(url) });
 * ```
 */
export async function runVizCommand(options: VizCommandOptions = {}): Promise<void> {
  const print = options.print ?? printToStdout;
  const env = options.env ?? process.env;
  const database = await openCliDatabase({ ...options, env });
  try {
    const store = createRunStore(database);
    if (!set(options.run)) {
      const runs = await store.listRuns();
      if (runs.length === 0) {
        print(`no runs in ${database.location} (${database.backend}); \`breakwater run\` records one`);
        return;
      }
      print(`${runs.length} run(s) in ${database.location} (${database.backend}), newest first:`);
      for (const line of describeRuns(runs)) print(line);
      print('replay one with: breakwater viz --run <id>');
      if (!options.signal) return;
      const server = await listen(store, undefined, options.port);
      try {
        print(`breakwater viz: the runs page at ${server.url}/ (each run links to its replay)`);
        print('Ctrl+C (SIGINT) or SIGTERM stops it.');
        options.onListening?.(`${server.url}/`);
        await whenAborted(options.signal);
      } finally {
        await server.close();
      }
      return;
    }
    const run = await store.getRun(options.run);
    if (!run)
      throw new CliError(
        `no run "${options.run}" in ${database.location}; \`breakwater viz\` without --run lists the runs`,
      );
    if (!options.signal) throw new CliError('a replay server needs a stop signal');
    const server = await listen(store, run.runId, options.port);
    try {
      const page = `${server.url}/?run=${encodeURIComponent(run.runId)}`;
      print(`breakwater viz: replay of run ${run.runId} (${run.scenario}, ${run.status}) at ${page}`);
      print('Ctrl+C (SIGINT) or SIGTERM stops it.');
      options.onListening?.(page);
      await whenAborted(options.signal);
    } finally {
      await server.close();
    }
  } finally {
    await database.close();
  }
}

/** The replay server on 127.0.0.1; a port in use is one line naming the flag. */
async function listen(
  store: ReturnType<typeof createRunStore>,
  runId: string | undefined,
  port: number | undefined,
): Promise<Awaited<ReturnType<typeof startVizServer>>> {
  try {
    return await startVizServer({ store, ...(runId !== undefined ? { runId } : {}), port: port ?? 0 });
  } catch (e) {
    if ((e as { code?: unknown }).code === 'EADDRINUSE')
      throw new CliError(`port ${port} is already in use; pick another --port, or --port 0`, { cause: e });
    throw e;
  }
}

/**
 * Registers `breakwater viz [--run ID] [--port N] [--database-url URL] [--data-dir DIR]`.
 *
 * @example
 * ```ts
 * registerVizCommand(new Command('breakwater'));
 * ```
 */
export function registerVizCommand(program: Command): Command {
  return program
    .command('viz')
    .description(
      'State visualizer: the recorded runs in the browser (a runs page), or the replay of one (--run) with a time scrubber over its event log.',
    )
    .option('--run <id>', 'the run to replay (default: list the runs and serve the runs page)')
    .addOption(
      new Option('--port <n>', 'port on 127.0.0.1; 0 = a free port').argParser(parseVizPort).default(0),
    )
    .option('--database-url <url>', 'PostgreSQL connection string (default: env DATABASE_URL)')
    .option(
      '--data-dir <dir>',
      `PGlite data directory (default: env BREAKWATER_DATA_DIR, else ${DEFAULT_DATA_DIR}/ in the current directory)`,
    )
    .addHelpText(
      'after',
      '\nThe live view of a running scenario is served by `breakwater run --viz`.\n' +
        'Nothing is loaded from the network: the page, its script and its data come from this server only.',
    )
    .action(async (opts: { run?: string; port: number; databaseUrl?: string; dataDir?: string }) => {
      const stop = listenForStop();
      try {
        await runVizCommand({
          port: opts.port,
          signal: stop.signal,
          ...(opts.run !== undefined ? { run: opts.run } : {}),
          ...(opts.databaseUrl !== undefined ? { databaseUrl: opts.databaseUrl } : {}),
          ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
        });
      } finally {
        stop.dispose();
      }
    });
}
