import type { CoordinationOptions } from '../../coordination/coordination-options.ts';
import type { Command } from 'commander';
import { Option } from 'commander';
import {
  type ByokConsole,
  type ByokConsoleInput,
  canReadCommands,
  startByokConsole,
} from '../../byok/byok-console.ts';
import { openCommandInput } from '../../byok/command-input.ts';
import { storableTextProblem, wireNameProblem } from '../../scenarios/scenario-text.ts';
import { createLiveView, type LiveView } from '../../live/live-view.ts';
import { createLogger } from '../../logging/logger.ts';
import { type MetricsServer, startMetricsServer } from '../../observability/metrics-server.ts';
import { type OtlpTracing, startOtlpTracing } from '../../observability/otlp-export.ts';
import { createBreakwaterMetrics } from '../../observability/prometheus-metrics.ts';
import { Registry } from 'prom-client';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';
import { formatRunReport } from '../../report/format-report.ts';
import { loadRunReport } from '../../report/load-run-report.ts';
import type { RunReport } from '../../report/report-types.ts';
import type { BreakwaterExecutor } from '../../runs/breakwater-executor.ts';
import {
  type ProviderMode,
  type RunPolicy,
  runScenario,
  type ScenarioRunContext,
} from '../../runs/run-scenario.ts';
import { loadScenario, resolveScenario } from '../../scenarios/load-scenario.ts';
import { findDatabaseUnavailable } from '../../store/database-unavailable-error.ts';
import { type BreakwaterDatabase, DEFAULT_DATA_DIR } from '../../store/open-database.ts';
import { createRunStore } from '../../store/run-store.ts';
import { startVizServer, type VizServer } from '../../viz/viz-server.ts';
import { createLiveSource, type LiveSource } from '../../viz/live-source.ts';
import { CliError } from '../cli-error.ts';
import { type Print, printToStdout } from '../cli-output.ts';
import { openCliDatabase, storeUrl } from '../cli-store.ts';
import { WorkersNeedPostgresError } from '../../runs/workers/start-worker-run.ts';
import { coordinationBackendOf, probeCoordination } from '../../runs/workers/worker-coordination.ts';
import { listenForStop, STOP_GRACE_MS } from '../stop-signal.ts';
import { checkVirtualTimeFlags, checkVirtualTimeScenario } from './virtual-time-check.ts';

/** The scenario `breakwater run` replays when none is named (seed 003). */
export const DEFAULT_SCENARIO = 'agent8-storm';

/** Options of {@link runRunCommand}. */
export interface RunCommandOptions {
  /** A scenario name under `scenarios/`, a folder, or a YAML/JSON file. Default {@link DEFAULT_SCENARIO}. */
  readonly scenario?: string;
  /** Resume this run instead of starting one. */
  readonly resumeRunId?: string;
  readonly runId?: string;
  /** Default `breakwater`. */
  readonly policy?: RunPolicy;
  /** `emulator` (default) or `real` (keys from ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY). */
  readonly providers?: ProviderMode;
  readonly json?: boolean;
  readonly databaseUrl?: string;
  readonly dataDir?: string;
  /** Control URL of a running emulator to use instead of an in-process one. */
  readonly emulatorUrl?: string;
  /** Share tokens and endpoint health with other processes: `postgres://…` or `redis://…`. Default: none. */
  readonly coordinationUrl?: string;
  /** Redis only: prefix of every key and channel of `coordinationUrl`. Default `breakwater:`. */
  readonly coordinationPrefix?: string;
  /** Serve the live state visualizer on 127.0.0.1 (0 = any free port). Default: off. */
  readonly vizPort?: number;
  /** Serve Prometheus metrics at `/metrics` on 127.0.0.1 (0 = any free port). Default: off. */
  readonly metricsPort?: number;
  /** Show the live view. Default true. */
  readonly live?: boolean;
  /** Stream every turn: the live view shows each agent's text as it grows; committed turns are the same. Default false. */
  readonly stream?: boolean;
  /** With `stream`: each agent's text of its running turn after every change (`''` when it ends). Default none. */
  readonly onText?: (agent: string, text: string) => void;
  /**
   * Read `/byok PROVIDER KEY` lines from stdin while the run goes (only when stdin is a terminal or a
   * pipe; never blocks the run). Default true; `--no-stdin` turns it off.
   */
  readonly stdin?: boolean;
  /** Where `/byok` lines come from instead of stdin (tests). Default: file descriptor 0, read as bytes. */
  readonly input?: ByokConsoleInput;
  readonly print?: Print;
  readonly signal?: AbortSignal;
  /**
   * Spread the run over this many local worker processes (`breakwater worker`) on one PostgreSQL store and one
   * coordination pool. Default: this process alone; a resumed run started with workers goes on with as many.
   */
  readonly workers?: number;
  /**
   * Run on a virtual clock instead of the scenario's scaled one: as fast as the CPU allows, the same timeline on a
   * fast, slow or loaded machine (`timeScale` ignored). Only for a new run whose endpoints are all the in-process
   * emulator's ({@link checkVirtualTimeFlags}). Default false.
   */
  readonly virtualTime?: boolean;
}

/**
 * Runs (or resumes) a scenario with the live view, commits every round, then prints the report (or its JSON).
 * Resolves with the report; a run that did not complete rejects with a CliError saying how to resume it.
 *
 * @example
 * ```ts
 * const report = await runRunCommand({ scenario: 'agent8-storm', dataDir: '.breakwater', json: true });
 * ```
 */
export async function runRunCommand(options: RunCommandOptions = {}): Promise<RunReport> {
  const print = options.print ?? printToStdout;
  if (options.resumeRunId !== undefined && options.resumeRunId.trim() === '')
    throw new CliError('resume needs the id of a run; `breakwater runs` lists them');
  if (options.virtualTime && options.workers !== undefined)
    throw new CliError(
      '--virtual-time does not go with --workers (worker processes share wall-time leases): a virtual clock is only for the in-process emulator; drop one',
    );
  if (options.workers !== undefined || (await isWorkersResume(options)))
    return runWorkersCommand(options, print);
  if (options.virtualTime) checkVirtualTimeFlags(options);
  if (options.emulatorUrl !== undefined) checkEmulatorUrl(options.emulatorUrl);
  // Checked and reached before anything is stored: a bad or unreachable backend is one line, and no run.
  const coordination =
    options.coordinationUrl !== undefined
      ? await checkCoordination(options.coordinationUrl, options.coordinationPrefix)
      : undefined;
  // Lines meant for the user while --json keeps stdout for the report alone.
  const note = (line: string) => {
    if (options.json) process.stderr.write(`${scrubSecrets(line)}\n`);
    else print(line);
  };
  // A new run's scenario is read and checked before the store opens: a scenario refused for its form or its bounds
  // costs no PGlite start (seconds of CPU) and leaves no data folder behind. A resumed run's is in the store.
  const freshSource =
    options.resumeRunId === undefined ? resolveScenario(options.scenario ?? DEFAULT_SCENARIO) : undefined;
  const freshScenario = freshSource !== undefined ? loadScenario(freshSource) : undefined;
  if (options.virtualTime) {
    if (!freshScenario)
      throw new CliError('--virtual-time is for a new run; resume continues on its own clock');
    checkVirtualTimeScenario(freshScenario);
  }
  const database: BreakwaterDatabase = await openCliDatabase({
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const store = createRunStore(database);
  let live: LiveView | undefined;
  let viz: VizServer | undefined;
  let vizSource: LiveSource | undefined;
  let runClock: { now(): number } | undefined;
  let metrics: MetricsServer | undefined;
  const metricsRegistry = new Registry();
  let byokConsole: ByokConsole | undefined;
  let started: { runId: string; rounds: number } | undefined;
  let committed = 0;
  try {
    let scenarioSource: string;
    let scenario: ReturnType<typeof loadScenario>;
    let policy = options.policy;
    if (freshSource !== undefined && freshScenario !== undefined) {
      scenarioSource = freshSource;
      scenario = freshScenario;
    } else {
      const resumeRunId = options.resumeRunId ?? '';
      const run = await store.getRun(resumeRunId);
      if (!run)
        throw new CliError(
          `no run "${resumeRunId}" in ${database.location}; list runs with \`breakwater runs\``,
        );
      const config = run.config as { scenarioSource?: string; policy?: RunPolicy } | null;
      if (!config?.scenarioSource)
        throw new CliError(`run "${run.runId}" does not say which scenario it ran; it cannot be resumed`);
      scenarioSource = config.scenarioSource;
      policy = policy ?? config.policy;
      scenario = loadScenario(scenarioSource);
    }
    // Bound before the run exists: a port in use stops the command before anything is stored.
    if (options.metricsPort !== undefined)
      metrics = await listenForMetrics(metricsRegistry, options.metricsPort);
    const showLive = options.live !== false && !options.json;
    const result = await runScenario({
      scenario,
      scenarioSource,
      database,
      ...(options.resumeRunId !== undefined
        ? { runId: options.resumeRunId, resume: true }
        : options.runId
          ? { runId: options.runId }
          : {}),
      ...(policy ? { policy } : {}),
      ...(options.providers ? { providers: options.providers } : {}),
      ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
      ...(options.virtualTime ? { virtualTime: true } : {}),
      ...(coordination ? { coordination } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      logger: createLogger(),
      onProgress: (p) => live?.setProgress(p),
      ...(options.stream
        ? {
            stream: true,
            onText: (agent: string, text: string) => {
              live?.setText(agent, text);
              options.onText?.(agent, text);
            },
          }
        : {}),
      onEvent: (e) => {
        // The run's own events are not the supervisor's: the visualizer's page gets them from here.
        if (e.type.startsWith('run.') || e.type.startsWith('round.')) vizSource?.publish(e);
        if (e.type === 'round.committed')
          committed = Number((e.data as { round?: unknown })?.round) || committed;
      },
      onStart: async (ctx: ScenarioRunContext) => {
        started = { runId: ctx.runId, rounds: ctx.rounds };
        if (showLive) {
          // Printed before the live frame exists, so the frame's redraws stay aligned on a terminal.
          print(
            `run ${ctx.runId}: scenario ${scenario.name}, policy ${ctx.policy}, ${ctx.rounds} rounds, ${database.backend} at ${database.location}`,
          );
          live = createLiveView({
            source: ctx.executor,
            agents: ctx.agents,
            clock: ctx.clock,
            title: `${scenario.name}  run ${ctx.runId}  policy ${ctx.policy}`,
          });
        }
        const supervisor = (ctx.executor as Partial<BreakwaterExecutor>).supervisor;
        runClock = ctx.clock;
        if (options.vizPort !== undefined && supervisor) {
          vizSource = createLiveSource(supervisor, { runId: ctx.runId, store });
          viz = await startVizServer({ port: options.vizPort, live: vizSource, store });
          if (live) live.log(`visualizer: ${viz.url}`);
          else note(`visualizer: ${viz.url}`);
        }
        if (metrics && supervisor) {
          createBreakwaterMetrics(supervisor, { registry: metricsRegistry });
          if (live) live.log(`metrics: ${metrics.url}`);
          else note(`metrics: ${metrics.url}`);
        }
        byokConsole = startStdinByok(options, supervisor, (line) => {
          // Above the live frame; on stderr when stdout carries the JSON report.
          if (live) live.log(line);
          else note(line);
        });
      },
    }).catch((e: unknown) => {
      const lost = findDatabaseUnavailable(e);
      if (lost) throw databaseLost(lost, started, committed);
      if (options.signal?.aborted) {
        throw new CliError(
          `run interrupted; continue it with \`breakwater resume <run-id>\` (\`breakwater runs\` lists them)`,
          { exitCode: 130 },
        );
      }
      throw e;
    });
    live?.stop();
    live = undefined;
    // The virtual clock's safety valve fired: its timeline then depended on the machine after all; say so.
    if (result.forcedClockJumps)
      note(
        `virtual clock: ${result.forcedClockJumps} forced jump(s) past work it could not see finish; this run's timeline depended on the machine`,
      );
    const report = await loadRunReport(store, result.runId);
    // The page shows the run's end with the report's verdicts before the server goes.
    vizSource?.publish({
      type: 'viz.report',
      at: runClock?.now() ?? Date.now(),
      data: {
        status: result.run.status,
        checks: report.checks.map((c) => ({
          id: c.id,
          name: c.name,
          value: c.value,
          unit: c.unit,
          op: c.op,
          threshold: c.threshold,
          pass: c.pass,
        })),
      },
    });
    if (options.json) print(JSON.stringify(report));
    else for (const line of formatRunReport(report)) print(line);
    if (result.run.status !== 'completed') {
      throw new CliError(
        `run ${result.runId} ended ${result.run.status}; continue it with \`breakwater resume ${result.runId}\``,
      );
    }
    return report;
  } finally {
    byokConsole?.stop();
    live?.stop();
    await viz?.close();
    vizSource?.close();
    await metrics?.close();
    await database.close();
  }
}

/** `run --workers N` (or `resume` of a run started so): what a spread run cannot do is refused in one line. */
async function runWorkersCommand(options: RunCommandOptions, print: Print): Promise<RunReport> {
  if (options.dataDir || !storeUrl({ ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) }))
    throw new CliError(new WorkersNeedPostgresError().message);
  const unsupported = [
    options.policy === 'status-quo' ? '--policy status-quo' : '',
    options.providers === 'real' ? '--providers real' : '',
  ].filter(Boolean);
  if (unsupported.length > 0)
    throw new CliError(
      `--workers does not go with ${unsupported.join(', ')} yet; drop it or run in one process`,
    );
  if (options.emulatorUrl !== undefined) checkEmulatorUrl(options.emulatorUrl);
  // Checked and reached before the run is stored, as for one process.
  const coordination =
    options.coordinationUrl !== undefined
      ? await checkCoordination(options.coordinationUrl, options.coordinationPrefix)
      : undefined;
  // Bound before the run exists: a port in use stops the command before anything is stored.
  const registry = new Registry();
  const metrics =
    options.metricsPort !== undefined ? await listenForMetrics(registry, options.metricsPort) : undefined;
  try {
    const { runWithWorkers } = await import('./run-workers.ts');
    return await runWithWorkers({
      ...(options.workers !== undefined ? { workers: options.workers } : {}),
      ...(options.resumeRunId !== undefined ? { resumeRunId: options.resumeRunId } : {}),
      ...(options.scenario ? { scenario: options.scenario } : {}),
      ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
      ...(options.runId ? { runId: options.runId } : {}),
      ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
      ...(coordination?.url
        ? {
            coordination: {
              url: coordination.url,
              ...(coordination.keyPrefix !== undefined ? { keyPrefix: coordination.keyPrefix } : {}),
            },
          }
        : {}),
      ...(options.json ? { json: true } : {}),
      ...(options.live === false ? { live: false } : {}),
      ...(options.stream ? { stream: true } : {}),
      ...(options.onText ? { onText: options.onText } : {}),
      ...(options.vizPort !== undefined ? { vizPort: options.vizPort } : {}),
      ...(metrics ? { metrics: { server: metrics, registry } } : {}),
      print,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } finally {
    await metrics?.close();
  }
}

/** Whether `resume <run-id>` names a run started with `--workers` (then it goes on with workers). */
async function isWorkersResume(options: RunCommandOptions): Promise<boolean> {
  if (options.resumeRunId === undefined || options.dataDir) return false;
  const url = storeUrl({ ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) });
  if (!url) return false;
  const database = await openCliDatabase({ databaseUrl: url });
  try {
    const { isWorkerRun } = await import('../../runs/workers/resume-worker-run.ts');
    return isWorkerRun(await createRunStore(database).getRun(options.resumeRunId));
  } finally {
    await database.close();
  }
}

/** The `/metrics` server of `--metrics-port`; a port in use is one line naming the flag. */
async function listenForMetrics(registry: Registry, port: number): Promise<MetricsServer> {
  try {
    return await startMetricsServer(registry, { port });
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    throw new CliError(
      code === 'EADDRINUSE'
        ? `--metrics-port ${port}: the port is in use on 127.0.0.1; give another, or 0 for any free port`
        : `--metrics-port ${port}: cannot listen (${String(code ?? (e as Error).message)})`,
    );
  }
}

/** An emulator needs no credentials: a URL carrying some is refused without echoing it. */
function checkEmulatorUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError('--emulator-url is not a URL; give its control URL, e.g. http://127.0.0.1:4000');
  }
  if (parsed.username || parsed.password)
    throw new CliError(
      '--emulator-url must not carry a user or password (the URL is not shown; the emulator needs none); give e.g. http://127.0.0.1:4000',
    );
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new CliError('--emulator-url must be an http:// URL, e.g. http://127.0.0.1:4000');
}

/** A run id is part of every call's idempotency key (a request header): refused here, not by every call. */
function checkRunId(runId: string): string {
  const problem = wireNameProblem(runId) ?? storableTextProblem(runId);
  if (problem) throw new CliError(`--run-id ${problem}`);
  return runId;
}

/** One line for a run whose database went away: what happened, where the run stands, how to go on. */
function databaseLost(
  lost: { location: string; problem: string },
  started: { runId: string; rounds: number } | undefined,
  committed: number,
): CliError {
  const what = `the database stopped answering (${lost.location}: ${lost.problem})`;
  if (!started) return new CliError(`${what}; no run was started`, { exitCode: 3 });
  const kept =
    committed > 1
      ? `rounds 1–${committed} of ${started.rounds} are committed`
      : committed === 1
        ? `round 1 of ${started.rounds} is committed`
        : 'no round is committed yet';
  return new CliError(
    `${what}; run ${started.runId} stopped: ${kept}, round ${committed + 1} was not committed; continue it with \`breakwater resume ${started.runId}\` once the database answers again`,
    { exitCode: 3 },
  );
}

/**
 * Starts reading `/byok` lines for session `default` when asked to and stdin is a terminal or a pipe.
 * The typed line is never printed: only the outcome (`openai key sk-…a1b2 active for session default`).
 */
function startStdinByok(
  options: RunCommandOptions,
  supervisor: Partial<BreakwaterExecutor>['supervisor'],
  say: (line: string) => void,
): ByokConsole | undefined {
  if (options.stdin === false) return undefined;
  if (!options.input && !canReadCommands(0)) return undefined;
  const input = options.input ?? openCommandInput(0);
  const byok = supervisor?.byok;
  const started = startByokConsole({
    input,
    byok,
    print: say,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (byok?.enabled) {
    const hidden = input.isTTY === true ? ' (what you type is not shown)' : '';
    say(
      `type /byok PROVIDER KEY and Enter to go on with your own key${hidden}; providers: ${byok.providers().join(', ')}`,
    );
  }
  return started;
}

/**
 * `--coordination-url` (and `--coordination-prefix`): the backend from its scheme, reached once (then closed) so a
 * bad or unreachable one is one line naming the flag, without its password.
 */
async function checkCoordination(url: string, keyPrefix: string | undefined): Promise<CoordinationOptions> {
  const backend = coordinationBackendOf(url);
  if (keyPrefix !== undefined && !/^[\w.:-]{1,64}$/.test(keyPrefix))
    throw new CliError('--coordination-prefix must be 1-64 letters, digits, _ . : - (e.g. myapp:)');
  const options: CoordinationOptions = {
    backend,
    url,
    ...(backend === 'redis' && keyPrefix !== undefined ? { keyPrefix } : {}),
  };
  try {
    await probeCoordination(options, '--coordination-url');
  } catch (e) {
    throw new CliError(e instanceof Error ? e.message : String(e));
  }
  return options;
}

interface RunFlags {
  policy?: RunPolicy;
  providers?: ProviderMode;
  json?: boolean;
  databaseUrl?: string;
  dataDir?: string;
  runId?: string;
  emulatorUrl?: string;
  coordinationUrl?: string;
  coordinationPrefix?: string;
  viz?: boolean;
  port?: string;
  metricsPort?: string;
  live?: boolean;
  stdin?: boolean;
  stream?: boolean;
  workers?: string;
  virtualTime?: boolean;
}

function workerCount(value: string): number {
  const n = Number(value);
  if (!/^\d{1,2}$/.test(value.trim()) || n < 1 || n > 64)
    throw new CliError(`--workers ${value} is not a worker count; give a whole number from 1 to 64`);
  return n;
}

function portNumber(flag: string, value: string): number {
  const port = Number(value);
  if (!/^\d{1,5}$/.test(value.trim()) || port > 65_535)
    throw new CliError(`${flag} ${value} is not a port; give 0–65535`);
  return port;
}

function vizPort(flags: RunFlags): number | undefined {
  if (!flags.viz) return undefined;
  return flags.port === undefined ? 0 : portNumber('--port', flags.port);
}

/** The options `run` and `resume` take alike. */
function sharedOptions(flags: RunFlags): RunCommandOptions {
  const port = vizPort(flags);
  return {
    json: flags.json === true,
    ...(flags.databaseUrl ? { databaseUrl: flags.databaseUrl } : {}),
    ...(flags.dataDir ? { dataDir: flags.dataDir } : {}),
    ...(flags.emulatorUrl ? { emulatorUrl: flags.emulatorUrl } : {}),
    ...(flags.coordinationUrl ? { coordinationUrl: flags.coordinationUrl } : {}),
    ...(flags.coordinationPrefix !== undefined ? { coordinationPrefix: flags.coordinationPrefix } : {}),
    ...(port !== undefined ? { vizPort: port } : {}),
    ...(flags.metricsPort !== undefined
      ? { metricsPort: portNumber('--metrics-port', flags.metricsPort) }
      : {}),
    live: flags.live !== false,
    stdin: flags.stdin !== false,
    ...(flags.stream ? { stream: true } : {}),
  };
}

/** How long the CLI waits for buffered spans to reach the collector before it exits anyway. */
const OTLP_FLUSH_MS = 5_000;

/** Sends the buffered spans, for at most OTLP_FLUSH_MS; says in one line when spans were lost, and never hangs. */
async function flushOtlp(otlp: OtlpTracing): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const flushed = await Promise.race([
    otlp.shutdown().then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), OTLP_FLUSH_MS);
    }),
  ]);
  clearTimeout(timer);
  const { count, first } = otlp.failures();
  if (!flushed || count > 0)
    process.stderr.write(
      `breakwater run: traces could not all be sent to ${otlp.origin} (${count > 0 ? `${count} failed exports, first: ${first}` : `no answer within ${OTLP_FLUSH_MS} ms`}); the run itself is unaffected\n`,
    );
  // A collector that never answers keeps sockets open: they must not keep the finished command alive.
  if (!flushed) setTimeout(() => process.exit(process.exitCode ?? 0), 100).unref();
}

async function act(options: RunCommandOptions): Promise<void> {
  const otlp = await startOtlpTracing(process.env).catch((e: unknown) => {
    throw new CliError(e instanceof Error ? e.message : String(e));
  });
  const stop = listenForStop({ forceExitAfterMs: STOP_GRACE_MS });
  try {
    await runRunCommand({ ...options, signal: stop.signal });
  } finally {
    stop.dispose();
    if (otlp) await flushOtlp(otlp);
  }
}

const storeFlags = (cmd: Command) =>
  cmd
    .option('--json', 'print one JSON object (the report) at the end instead of the live view and the table')
    .option(
      '--database-url <url>',
      'PostgreSQL connection string (default: env DATABASE_URL, else embedded PGlite)',
    )
    .option(
      '--data-dir <dir>',
      `PGlite data directory (default: env BREAKWATER_DATA_DIR, else ${DEFAULT_DATA_DIR}/)`,
    )
    .option(
      '--emulator-url <url>',
      'use a running emulator (its control URL) instead of starting one in-process',
    )
    .option(
      '--coordination-url <url>',
      'share the concurrency tokens and endpoint health with other processes: postgres://… or redis://… (with --workers: where the workers share them; default their store)',
    )
    .option(
      '--coordination-prefix <prefix>',
      'Redis only: prefix of every key and channel (default breakwater:)',
    )
    .option('--viz', 'serve the live state visualizer on 127.0.0.1 while the run goes')
    .option('--port <n>', 'visualizer port with --viz (default: any free port)')
    .option(
      '--metrics-port <n>',
      'serve Prometheus metrics at /metrics on 127.0.0.1 while the run goes (0: any free port)',
    )
    .option('--no-live', 'no live view; just the report at the end')
    .option('--stream', "stream every turn: the live view shows each agent's text as it grows")
    .option('--no-stdin', 'do not read /byok PROVIDER KEY lines from stdin while the run goes');

/**
 * Registers `breakwater run [scenario]` and `breakwater resume <run-id>`.
 *
 * @example
 * ```ts
 * registerRunCommand(new Command('breakwater'));
 * ```
 */
export function registerRunCommand(program: Command): Command {
  storeFlags(
    program
      .command('run')
      .description('Run a scenario (default: agent8-storm, the seed-003 incident) and print its report.')
      .argument(
        '[scenario]',
        'a scenario name under scenarios/, a folder, or a YAML/JSON file',
        DEFAULT_SCENARIO,
      )
      .addOption(
        new Option('--policy <policy>', 'who runs the turns')
          .choices(['breakwater', 'status-quo'])
          .default('breakwater'),
      )
      .addOption(
        new Option(
          '--providers <where>',
          'emulator: the built-in provider emulator; real: the real APIs, keys from ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY',
        )
          .choices(['emulator', 'real'])
          .default('emulator'),
      )
      .option('--run-id <id>', 'id of the new run (default: <scenario>-<timestamp>-<hex>)')
      .option(
        '--workers <n>',
        'spread the run over N local worker processes on one PostgreSQL store (needs --database-url)',
      )
      .option(
        '--virtual-time',
        'run on a virtual clock (timeScale ignored): as fast as the CPU allows, the same timeline on any machine; in-process emulator endpoints only',
      ),
  ).action(async (scenario: string, flags: RunFlags) => {
    await act({
      scenario,
      ...(flags.workers !== undefined ? { workers: workerCount(flags.workers) } : {}),
      ...(flags.virtualTime ? { virtualTime: true } : {}),
      ...(flags.policy ? { policy: flags.policy } : {}),
      ...(flags.providers ? { providers: flags.providers } : {}),
      ...(flags.runId !== undefined ? { runId: checkRunId(flags.runId) } : {}),
      ...sharedOptions(flags),
    });
  });
  return storeFlags(
    program
      .command('resume')
      .description(
        'Continue an interrupted run from its last committed round, with every agent’s memory, and print its report.',
      )
      .argument('<run-id>', 'the run (`breakwater runs` lists them)')
      .option(
        '--workers <n>',
        'a run started with --workers: how many worker processes go on with it (default: as many as it started with)',
      ),
  ).action(async (runId: string, flags: RunFlags) => {
    await act({
      resumeRunId: runId,
      ...(flags.workers !== undefined ? { workers: workerCount(flags.workers) } : {}),
      ...sharedOptions(flags),
    });
  });
}
