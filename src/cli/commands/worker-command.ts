import type { Command } from 'commander';
import { createLogger } from '../../logging/logger.ts';
import { WorkersNeedPostgresError } from '../../runs/workers/start-worker-run.ts';
import { runWorker, type WorkerSummary } from '../../runs/workers/run-worker.ts';
import { COORDINATION_URL_ENV, isWorkerCoordinationError } from '../../runs/workers/worker-coordination.ts';
import { CliError } from '../cli-error.ts';
import { type Print, printToStdout } from '../cli-output.ts';
import { isSet, openCliDatabase, storeUrl } from '../cli-store.ts';
import { listenForStop, STOP_GRACE_MS } from '../stop-signal.ts';
import { WORKER_STORE_POOL_SIZE } from '../../runs/workers/worker-store-pool.ts';

/** Options of {@link runWorkerCommand}. */
export interface WorkerCommandOptions {
  /** The PostgreSQL store (default: env `DATABASE_URL`). PGlite is refused: it is one process's. */
  readonly databaseUrl?: string;
  /** Work on this run only and exit once it is over. Default: any run started with `--workers`, until stopped. */
  readonly runId?: string;
  /**
   * This worker's URL of its runs' coordination backend, to bring its password (a run stores its URL without
   * one); it must name the server the run coordinates on. Default: env `BREAKWATER_COORDINATION_URL`, else the
   * URL stored with the run.
   */
  readonly coordinationUrl?: string;
  /** Environment read for `BREAKWATER_COORDINATION_URL`. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** One JSON line per staged turn instead of a text line. Default false. */
  readonly json?: boolean;
  /**
   * Stream every turn this worker asks; with `json`, one line per change of an agent's text
   * (`{"type":"text","agent":…,"add":…}` appends to it, `"text":…` replaces it, `""` when the turn ends): what
   * `run --workers N --stream` relays to its live view. Default false.
   */
  readonly stream?: boolean;
  readonly print?: Print;
  readonly signal?: AbortSignal;
}

/**
 * `breakwater worker`: joins the runs spread over workers on a PostgreSQL store, asks the turns of the agents it
 * claims, commits each round once every agent's part is in, and says which worker did what, one line a turn.
 *
 * @example
 * ```ts
 * await runWorkerCommand({ databaseUrl: 'postgres://127.0.0.1/breakwater', runId });
 * ```
 */
export async function runWorkerCommand(options: WorkerCommandOptions = {}): Promise<WorkerSummary> {
  const print = options.print ?? printToStdout;
  const url = storeUrl({ ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) });
  if (!url) throw new CliError(new WorkersNeedPostgresError().message);
  const env = options.env ?? process.env;
  const coordinationUrl = isSet(options.coordinationUrl)
    ? options.coordinationUrl
    : isSet(env[COORDINATION_URL_ENV])
      ? env[COORDINATION_URL_ENV]
      : undefined;
  if (coordinationUrl !== undefined) {
    try {
      new URL(coordinationUrl);
    } catch {
      throw new CliError(
        `--coordination-url does not parse as a URL; give postgres://… or redis://… (the URL is not shown)`,
      );
    }
  }
  const database = await openCliDatabase({ databaseUrl: url, poolSize: WORKER_STORE_POOL_SIZE });
  const shown = new Map<string, string>();
  // Only what changed goes on the wire: a growing text costs its deltas, not its square.
  const onText = (agent: string, text: string) => {
    const before = shown.get(agent) ?? '';
    shown.set(agent, text);
    print(
      JSON.stringify(
        text.startsWith(before) && before !== ''
          ? { type: 'text', agent, add: text.slice(before.length) }
          : { type: 'text', agent, text },
      ),
    );
  };
  try {
    return await runWorker({
      database,
      databaseUrl: url,
      ...(coordinationUrl !== undefined ? { coordinationUrl } : {}),
      ...(options.runId ? { runId: options.runId } : {}),
      logger: createLogger(),
      onTurn: (t) =>
        print(
          options.json
            ? JSON.stringify({ type: 'turn', ...t })
            : `worker ${t.worker}  run ${t.runId}  round ${t.round}  ${t.itemId}  ${t.agent}  ${t.outcome}`,
        ),
      onCommit: (runId, round) =>
        print(
          options.json
            ? JSON.stringify({ type: 'commit', runId, round })
            : `committed round ${round} of ${runId}`,
        ),
      onJoin: (runId, holder) =>
        print(
          options.json
            ? JSON.stringify({ type: 'joined', runId, worker: holder })
            : `worker ${holder} joined run ${runId}`,
        ),
      ...(options.stream ? { stream: true, ...(options.json ? { onText } : {}) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    }).catch((e: unknown) => {
      if (options.signal?.aborted) throw new CliError('worker stopped', { exitCode: 130 });
      if (isWorkerCoordinationError(e)) throw new CliError(e.message);
      throw e;
    });
  } finally {
    await database.close();
  }
}

/**
 * Registers `breakwater worker`.
 *
 * @example
 * ```ts
 * registerWorkerCommand(new Command('breakwater'));
 * ```
 */
export function registerWorkerCommand(program: Command): Command {
  return program
    .command('worker')
    .description(
      'Join runs spread over worker processes (`breakwater run --workers N`) on a PostgreSQL store and work their agents.',
    )
    .option('--database-url <url>', 'PostgreSQL connection string (default: env DATABASE_URL)')
    .option('--run-id <id>', 'work on this run only, and exit when it is over')
    .option(
      '--coordination-url <url>',
      `the run's coordination backend with its password (a run stores its URL without one); must name the server the run coordinates on (default: env ${COORDINATION_URL_ENV})`,
    )
    .option('--json', 'one JSON line per staged turn and per committed round')
    .option('--stream', "stream every turn; with --json, one line per change of an agent's text")
    .action(
      async (flags: {
        databaseUrl?: string;
        runId?: string;
        coordinationUrl?: string;
        json?: boolean;
        stream?: boolean;
      }) => {
        const stop = listenForStop({ forceExitAfterMs: STOP_GRACE_MS });
        try {
          await runWorkerCommand({
            ...(flags.databaseUrl ? { databaseUrl: flags.databaseUrl } : {}),
            ...(flags.runId ? { runId: flags.runId } : {}),
            ...(flags.coordinationUrl ? { coordinationUrl: flags.coordinationUrl } : {}),
            ...(flags.json ? { json: true } : {}),
            ...(flags.stream ? { stream: true } : {}),
            signal: stop.signal,
          });
        } finally {
          stop.dispose();
        }
      },
    );
}
