import type { StoredWorkerCoordination } from './workers/worker-coordination.ts';
import type { CoordinationOptions } from '../coordination/coordination-options.ts';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { InspectionEvent } from 'xstate';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { VirtualClock } from '../clock/virtual-clock.ts';
import type { Emulator } from '../emulator/emulator-server.ts';
import type { EmulatorStats } from '../emulator/emulator-types.ts';
import { createSeededRandom, hash32 } from '../core/seeded-random.ts';
import type { AgentInfo, RuntimeEventListener } from '../core/runtime-event.ts';
import { createStatusQuoExecutor } from './policies/status-quo-worker.ts';
import { type AgentDefinition, isNoAgentDefinition } from '../runtime/agent-definition.ts';
import { defineConfig, type RuntimeConfigInput } from '../runtime/runtime-config.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { toRealProviders } from '../scenarios/real-providers.ts';
import { resolveInstant } from '../clock/zoned-time.ts';
import type { RoundPlan, ScenarioSpec } from '../scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../store/open-database.ts';
import { acquireRunLease, type RunLease, type RunLeaseOptions } from '../store/run-lease.ts';
import { createRunStore, type RunStore } from '../store/run-store.ts';
import type { RunRecord } from '../store/store-types.ts';
import { createBreakwaterExecutor } from './breakwater-executor.ts';
import { createEventRecorder } from './event-recorder.ts';
import { type RoundProgress, runRounds } from './round-runner.ts';
import { applyRunRestore, loadRunRestore, type RunRestore } from './run-restore.ts';
import type { WireTimeEngines } from './wire-time-engines.ts';
import type { CallMemo } from '../core/call-memo.ts';
import { storeCallMemo } from './store-call-memo.ts';
import { crashPoint } from '../store/crash-point.ts';
import { keyFormatOf, TURN_KEY_FORMAT, type TurnKeyFormat } from '../store/turn-key.ts';
import type { TurnExecutor } from './turn-executor.ts';
import { wireRunEndpoints } from './run-endpoints.ts';
import { type ProviderMode, runTimeline } from './run-timeline.ts';

/** Which policy runs the turns. */
export type RunPolicy = 'breakwater' | 'status-quo';

export type { ProviderMode } from './run-timeline.ts';

/** Options of {@link runScenario}. */
export interface RunScenarioOptions {
  readonly scenario: ScenarioSpec;
  /** Where the scenario was loaded from; stored with the run so `resume` can load it again. */
  readonly scenarioSource?: string;
  /** Run id. Default: `<scenario>-<UTC timestamp>-<4 hex>`. */
  readonly runId?: string;
  /** Continue the run `runId` from its last committed round. Default false. */
  readonly resume?: boolean;
  /** Default `breakwater`. `status-quo` replays seed 000's worker as it was. */
  readonly policy?: RunPolicy;
  /** An open database (not closed by the run). Default: opened from `databaseUrl` / `dataDir` and closed at the end. */
  readonly database?: BreakwaterDatabase;
  readonly databaseUrl?: string;
  readonly dataDir?: string;
  /**
   * Control URL of an already running emulator to use instead of an in-process one (crash tests). It runs on its
   * own wall clock: on a time-scaled run its endpoints' waits are scaled like a real server's.
   */
  readonly emulatorUrl?: string;
  /**
   * `emulator` (default): `emulator:` endpoints talk to the provider emulator. `real`: the same scenario against
   * the real APIs, keys from the environment (see `toRealProviders`). A resumed run keeps the mode it started with.
   */
  readonly providers?: ProviderMode;
  /**
   * Run on a virtual clock (`createVirtualClock`): simulated time stands still while real work runs and
   * jumps to the next timer when only timers are left, so the scenario runs as fast as the machine
   * allows and its timeline does not depend on the machine's speed or load (tests, quick what-ifs).
   * `timeScale` is then ignored. Not with `providers: 'real'` (real providers live in wall time).
   * Default false.
   */
  readonly virtualTime?: boolean;
  /**
   * With `virtualTime`: the seed of the breakwater policy's backoff jitter (Math.random otherwise), so a run
   * replays identically and another seed shows how much a figure owes to the draw. Default: the scenario's
   * emulator seed.
   */
  readonly jitterSeed?: number;
  /** Environment read for real-provider keys and base URLs. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly logger?: Logger;
  readonly signal?: AbortSignal;
  /** Every runtime event of the run (live view, visualizer). */
  readonly onEvent?: RuntimeEventListener;
  readonly onProgress?: (progress: RoundProgress) => void;
  /** XState inspection events of the breakwater policy's actors. */
  readonly inspect?: (event: InspectionEvent) => void;
  /** The run lease's timing (tests shorten it). Default: 15 s, renewed every 5 s. */
  readonly lease?: RunLeaseOptions;
  /**
   * Share the concurrency tokens and endpoint health with other processes (another run, a service) through
   * PostgreSQL or Redis. Default: this process alone.
   */
  readonly coordination?: CoordinationOptions;
  /** Called once everything is set up, before the first turn (attach a live view or a visualizer here). */
  readonly onStart?: (context: ScenarioRunContext) => void | Promise<void>;
  /**
   * The breakwater policy streams every turn: committed turns are the same, and `onText` sees each agent's text
   * grow (the live view shows it). Default false.
   */
  readonly stream?: boolean;
  /** With `stream`: an agent's current text, after every change; `''` when its turn ended. Default none. */
  readonly onText?: (agent: string, text: string) => void;
}

/** What a starting run exposes to its observers. */
export interface ScenarioRunContext {
  readonly runId: string;
  readonly policy: RunPolicy;
  readonly executor: TurnExecutor;
  readonly store: RunStore;
  /** The run's clock: time-scaled (default) or virtual (`virtualTime`). */
  readonly clock: Clock;
  readonly agents: readonly AgentInfo[];
  readonly rounds: number;
  readonly emulator?: Emulator;
}

/** The outcome of {@link runScenario}. */
export interface ScenarioRunResult {
  readonly runId: string;
  readonly run: RunRecord;
  /** The in-process emulator's stats at the end (absent for real providers or an external emulator). */
  readonly emulatorStats?: EmulatorStats;
  /** How long the run took in real time, ms. */
  readonly realMs: number;
  /**
   * On a virtual clock (`virtualTime`): how many times it jumped past real work it could not see finish (its
   * 30 s safety valve). 0 means the timeline did not depend on the machine's speed.
   */
  readonly forcedClockJumps?: number;
}

/** What is stored with a run so it can be resumed (and, for a run spread over workers, joined). */
export interface StoredRunConfig {
  readonly policy: RunPolicy;
  readonly providers?: ProviderMode;
  readonly scenarioSource?: string;
  readonly timeScale: number;
  readonly origin: number;
  /** Real providers: ms the scenario's timeline was moved by to start at the wall's now (kept for resume). */
  readonly wallShiftMs?: number;
  /** The report's settings, times resolved to epoch ms (read by `buildRunReport`). */
  readonly report?: StoredReportConfig;
  /** A run spread over worker processes (`breakwater worker`): how they share it. Absent otherwise. */
  readonly workers?: StoredWorkersConfig;
  /** How the run's turn and call keys are spelled (`turn-key.ts`). Absent: runs stored before it, format 1. */
  readonly keyFormat?: TurnKeyFormat;
}

/** How the worker processes of a run share it (stored with the run). */
export interface StoredWorkersConfig {
  /** How many workers the run was started with: each claims about its share of a round's agents at once. */
  readonly count: number;
  /** Epoch ms of the wall clock at which the scenario clock read `clockOrigin`: every worker's clock agrees. */
  readonly wallStart: number;
  /** The run-clock instant `wallStart` maps to. Absent: the run's `origin` (a resumed run goes on from later). */
  readonly clockOrigin?: number;
  /** Control URL of the emulator every worker talks to (one emulator, one record of calls). */
  readonly emulatorUrl?: string;
  /**
   * Whether that emulator runs on the run's clock (started with the run: its waits are run-clock ms) rather than
   * its own wall clock (one given by URL: its waits are real ms, scaled like a real server's). Absent: true.
   */
  readonly emulatorOnRunClock?: boolean;
  /** The coordination pool of the run's global tokens and endpoint health. */
  readonly pool: string;
  /**
   * Where the pool lives (`run --workers N --coordination-url …`), its URL without secrets. Absent: on the run's
   * own PostgreSQL store.
   */
  readonly coordination?: StoredWorkerCoordination;
  /** Lease of a claimed agent part, ms: a dead worker's agents are taken over after it. */
  readonly leaseTtlMs: number;
}

/** The report's settings as stored with a run. */
export interface StoredReportConfig {
  readonly peak?: { readonly from: number; readonly to: number };
  readonly timeZone?: string;
  readonly analysisTiers?: readonly string[];
  readonly thresholds?: Readonly<Record<string, number | null>>;
  /** The runtime's `concurrency.limit`: the default threshold of the in-flight check. */
  readonly concurrencyLimit?: number;
}

/**
 * The report's settings of a run, times resolved to epoch ms.
 *
 * @example
 * ```ts
 * const report = reportConfig(spec, resolved, origin, 0);
 * ```
 */
export function reportConfig(
  spec: ScenarioSpec,
  resolved: ScenarioSpec,
  origin: number,
  shiftMs: number,
): StoredReportConfig {
  const r = spec.report;
  const zone = r?.timezone ?? 'UTC';
  const limit = (resolved.runtime as { concurrency?: { limit?: unknown } }).concurrency?.limit;
  return {
    ...(r?.peak
      ? {
          peak: {
            from: resolveInstant(r.peak.from, zone, origin) + shiftMs,
            to: resolveInstant(r.peak.to, zone, origin) + shiftMs,
          },
        }
      : {}),
    ...(r?.timezone ? { timeZone: r.timezone } : {}),
    ...(r?.analysisTiers ? { analysisTiers: r.analysisTiers } : {}),
    ...(r?.thresholds ? { thresholds: r.thresholds } : {}),
    ...(typeof limit === 'number' ? { concurrencyLimit: limit } : {}),
  };
}

/**
 * Runs a scenario end to end: starts the emulator when the scenario has one (on the same time-scaled clock as
 * the runtime), opens the database (PGlite by default), builds the policy's executor, records every event, and
 * runs the rounds, committing each one exactly once. With `resume`, it continues a run from its last committed
 * round with every agent rebuilt from its snapshot. An interrupted run (signal) is marked `interrupted`.
 *
 * @example
 * ```ts
 * const result = await runScenario({ scenario: loadScenario('scenarios/agent8-storm'), dataDir: '.breakwater' });
 * console.log(result.runId, result.run.status);
 * ```
 */
export async function runScenario(options: RunScenarioOptions): Promise<ScenarioRunResult> {
  const realStart = Date.now();
  const scenarioName = options.scenario.name;
  const database = options.database ?? (await openDatabase(databaseOptions(options)));
  const store = createRunStore(database);
  const owned: { close(): Promise<void> }[] = options.database ? [] : [database];
  let executor: TurnExecutor | undefined;
  let emulator: Emulator | undefined;
  let lease: RunLease | undefined;
  const runId = options.runId ?? defaultRunId(scenarioName);
  try {
    const existing = checkedResume(await store.getRun(runId), runId, options.resume === true);
    if (existing?.status === 'completed') return { runId, run: existing, realMs: Date.now() - realStart };
    // One process drives a run at a time: a second `resume` stops here with one line naming the holder.
    if (existing) lease = await acquireRunLease(database, runId, options.lease);

    const stored = existing?.config as StoredRunConfig | undefined;
    const policy: RunPolicy = options.policy ?? stored?.policy ?? 'breakwater';
    const providers: ProviderMode = options.providers ?? stored?.providers ?? 'emulator';
    const spec =
      providers === 'real' ? toRealProviders(options.scenario, options.env ?? process.env) : options.scenario;
    const { clock, origin, scenarioStart, wallShiftMs, plans, timeScale } = await runTimeline({
      spec,
      providers,
      virtualTime: options.virtualTime === true,
      realStart,
      existing: existing
        ? { currentRound: existing.currentRound, wallShiftMs: stored?.wallShiftMs }
        : undefined,
      lastEventAt: () => lastEventAt(database, runId),
    });
    if (options.virtualTime) owned.push({ close: async () => (clock as VirtualClock).stop() });

    const { resolved, wire, definitions, agents } = await wireRunEndpoints(spec, options, clock, timeScale, {
      emulatorStarted: (e) => {
        emulator = e;
        owned.unshift(e);
      },
      proxiesStarted: (proxies) => owned.unshift(...proxies),
    });

    // Restore before touching the run: a corrupt state or a machine-version mismatch must change nothing.
    const restore = existing
      ? await loadRunRestore(store, runId, definitions, historyTurnsOf(resolved))
      : undefined;
    if (!existing) {
      await store.createRun({
        runId,
        scenario: spec.name,
        config: newRunConfig(options, {
          policy,
          providers,
          spec,
          resolved,
          scenarioStart,
          wallShiftMs,
          timeScale,
          origin,
        }),
        totalRounds: plans.length,
        machineVersion: AGENT_MACHINE_VERSION,
      });
      lease = await acquireRunLease(database, runId, options.lease);
    }

    const run = await driveRun({
      options,
      store,
      runId,
      existing,
      policy,
      spec,
      resolved,
      definitions,
      agents,
      wire,
      clock,
      restore,
      plans,
      emulator,
      started: (e) => {
        executor = e;
      },
    });
    const stats = emulator?.stats();
    return {
      runId,
      run,
      ...(stats ? { emulatorStats: stats } : {}),
      realMs: Date.now() - realStart,
      ...(options.virtualTime ? { forcedClockJumps: (clock as VirtualClock).forcedJumps } : {}),
    };
  } finally {
    await executor?.stop().catch(() => {});
    await lease?.release().catch(() => {});
    for (const o of owned) await o.close().catch(() => {});
  }
}

/** The stored run to resume, if any: a resume needs one, a new run must not find one. */
function checkedResume(
  existing: RunRecord | undefined,
  runId: string,
  resume: boolean,
): RunRecord | undefined {
  if (resume && !existing) throw new Error(`no run "${runId}" to resume; list runs with \`breakwater runs\``);
  if (!resume && existing)
    throw new Error(`run "${runId}" exists already; resume it with \`breakwater resume ${runId}\``);
  return existing;
}

/** A stored run, its executor's parts and its timeline: what {@link driveRun} runs. */
interface DriveParts extends Omit<ExecutorParts, 'memo'> {
  readonly store: RunStore;
  readonly runId: string;
  readonly existing: RunRecord | undefined;
  readonly policy: RunPolicy;
  readonly agents: AgentInfo[];
  readonly plans: readonly RoundPlan[];
  readonly emulator: Emulator | undefined;
  /** The executor, once built: the caller stops it whatever happens. */
  readonly started: (executor: TurnExecutor) => void;
}

/**
 * Runs the rounds of a stored run, its events recorded with them. From here on the run exists: whatever fails
 * marks it (failed, with the reason; interrupted when aborted).
 */
async function driveRun(d: DriveParts): Promise<RunRecord> {
  const { options, store, runId, existing, clock, plans, agents } = d;
  let unsubscribe: (() => void) | undefined;
  let recorder: ReturnType<typeof createEventRecorder> | undefined;
  let emit: RuntimeEventListener | undefined;
  try {
    if (existing) await store.setRunStatus(runId, 'running');
    const memo = await storeCallMemo(store, runId, (existing?.currentRound ?? 0) + 1, clock, {
      keyFormat: existing ? keyFormatOf(existing.config) : TURN_KEY_FORMAT,
    });
    const executor = policyExecutor(d.policy, { ...d, memo });
    d.started(executor);
    if (existing) crashPoint('restore');
    const rec = createEventRecorder(store, runId);
    recorder = rec;
    const send: RuntimeEventListener = (e) => {
      rec.listener(e);
      options.onEvent?.(e);
    };
    emit = send;
    unsubscribe = executor.subscribeEvents(send);
    await options.onStart?.({
      runId,
      policy: d.policy,
      executor,
      store,
      clock,
      agents,
      rounds: plans.length,
      ...(d.emulator ? { emulator: d.emulator } : {}),
    });
    send({
      type: 'run.started',
      at: clock.now(),
      data: {
        runId,
        scenario: d.spec.name,
        rounds: plans.length,
        agents,
        endpoints: d.resolved.runtime.endpoints.map((e) => e.id),
        ...(existing ? { resumedFrom: existing.currentRound } : {}),
      },
    });
    const run = await runRounds({
      runId,
      spec: d.resolved,
      plans,
      executor,
      store,
      clock,
      agents: agents.filter((a) => !a.noAgent).map((a) => a.name),
      machineVersion: AGENT_MACHINE_VERSION,
      emit: send,
      journal: rec,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    send({ type: 'run.finished', at: clock.now(), data: { runId, status: run.status } });
    unsubscribe();
    // Every round is committed: what was heard after the last commit belongs to no round.
    await rec.flush({ afterLastCommit: true });
    return run;
  } catch (e) {
    const status = options.signal?.aborted ? 'interrupted' : 'failed';
    emit?.({ type: 'run.finished', at: clock.now(), data: { runId, status } });
    unsubscribe?.();
    // The round in progress is not committed: its events are dropped (it records them when it is asked again).
    await recorder?.flush().catch(() => {});
    await store
      .setRunStatus(runId, status, status === 'failed' ? { failure: failureLine(e) } : {})
      .catch(() => {});
    throw e;
  }
}

/** How a new run is stored: enough to resume it, report it and replay it on the same timeline. */
function newRunConfig(
  options: RunScenarioOptions,
  run: {
    readonly policy: RunPolicy;
    readonly providers: ProviderMode;
    readonly spec: ScenarioSpec;
    readonly resolved: ScenarioSpec;
    readonly scenarioStart: number;
    readonly wallShiftMs: number;
    readonly timeScale: number;
    readonly origin: number;
  },
): StoredRunConfig {
  const { wallShiftMs } = run;
  return {
    policy: run.policy,
    providers: run.providers,
    ...(wallShiftMs !== 0 ? { wallShiftMs } : {}),
    report: reportConfig(run.spec, run.resolved, run.scenarioStart, wallShiftMs),
    ...(options.scenarioSource ? { scenarioSource: options.scenarioSource } : {}),
    timeScale: run.timeScale,
    origin: run.origin,
    keyFormat: TURN_KEY_FORMAT,
  };
}

/** What the run's executor is built from. */
interface ExecutorParts {
  readonly options: RunScenarioOptions;
  readonly spec: ScenarioSpec;
  readonly resolved: ScenarioSpec;
  readonly definitions: AgentDefinition[];
  readonly wire: WireTimeEngines;
  readonly clock: Clock;
  readonly memo: CallMemo;
  readonly restore: RunRestore | undefined;
}

/** The policy's executor: breakwater's runtime (its agents restored from the last commit), or seed 000's old worker. */
function policyExecutor(policy: RunPolicy, parts: ExecutorParts): TurnExecutor {
  const { options, wire, clock, restore } = parts;
  const { createEngine: buildEngine, byokWire } = wire;
  if (policy === 'status-quo')
    return createStatusQuoExecutor(parts.resolved, {
      clock,
      ...(options.logger ? { logger: options.logger } : {}),
      ...(buildEngine ? { createEngine: buildEngine } : {}),
    });
  const breakwater = createBreakwaterExecutor({
    config: wire.withLease(parts.resolved.runtime) as RuntimeConfigInput,
    agents: parts.definitions,
    clock,
    memo: parts.memo,
    ...(restore ? { restored: restore.agents } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(options.coordination ? { coordination: options.coordination } : {}),
    ...(options.stream ? { stream: true } : {}),
    ...(options.onText ? { onText: options.onText } : {}),
    // On a virtual clock the timeline must not depend on anything but the scenario: backoff
    // jitter comes from the scenario's seed instead of Math.random.
    ...(options.virtualTime ? { random: jitterRandom(parts.spec, options.jitterSeed) } : {}),
    ...(buildEngine ? { createEngine: buildEngine } : {}),
    ...(byokWire ? { byokWire } : {}),
  });
  if (restore) applyRunRestore(breakwater.supervisor, restore);
  return breakwater;
}

function databaseOptions(o: RunScenarioOptions): { url?: string; dataDir?: string } {
  if (o.databaseUrl) return { url: o.databaseUrl };
  if (o.dataDir) return { dataDir: o.dataDir };
  return {};
}

/**
 * A new run's id: `<scenario>-<UTC timestamp>-<4 hex>`.
 *
 * @example
 * ```ts
 * const runId = defaultRunId('morning-peak');
 * ```
 */
export function defaultRunId(scenario: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `${scenario}-${stamp}-${randomBytes(2).toString('hex')}`;
}

async function lastEventAt(database: BreakwaterDatabase, runId: string): Promise<number | undefined> {
  const row = await database.db
    .selectFrom('events')
    .select(sql<string | number | null>`max(at)`.as('at'))
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return row?.at === null || row?.at === undefined ? undefined : Number(row.at);
}

/**
 * Each agent's prompt window (`historyTurns`): its own setting, else the runtime's default.
 *
 * @example
 * ```ts
 * await loadRunRestore(store, runId, definitions, historyTurnsOf(spec));
 * ```
 */
export function historyTurnsOf(spec: ScenarioSpec): (d: AgentDefinition) => number {
  const fallback = defineConfig(spec.runtime as RuntimeConfigInput).agentDefaults.historyTurns;
  return (d) => (isNoAgentDefinition(d) ? 0 : (d.historyTurns ?? fallback));
}

/** Why a run failed, in one line, as stored with it (text from outside is sanitized where it enters). */
function failureLine(e: unknown): string {
  const text = e instanceof Error ? `${e.name === 'Error' ? '' : `${e.name}: `}${e.message}` : String(e);
  return scrubSecrets(text.split('\n')[0] ?? '').slice(0, 500);
}

/** Backoff jitter from `seed`, else the scenario's emulator seed: a run on a virtual clock replays identically. */
function jitterRandom(spec: ScenarioSpec, seed: number | undefined): () => number {
  return createSeededRandom(hash32('breakwater backoff jitter', seed ?? spec.emulator?.seed ?? 1)).next;
}
