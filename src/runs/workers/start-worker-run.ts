import { randomBytes } from 'node:crypto';
import { AGENT_MACHINE_VERSION } from '../../../machines/agent.machine.ts';
import type { Clock } from '../../clock/clock.ts';
import { createScaledClock, preciseWallNow } from '../../clock/scaled-clock.ts';
import { type Emulator, startEmulator } from '../../emulator/emulator-server.ts';
import {
  defaultRunId,
  reportConfig,
  type StoredRunConfig,
  type StoredWorkersConfig,
} from '../run-scenario.ts';
import type { AgentInfo } from '../../core/runtime-event.ts';
import { isNoAgentDefinition } from '../../runtime/agent-definition.ts';
import { scenarioAgents } from '../../scenarios/scenario-tools.ts';
import { planRounds } from '../../scenarios/round-planner.ts';
import { scenarioOrigin } from '../../scenarios/scenario-endpoints.ts';
import type { ScenarioSpec } from '../../scenarios/scenario-types.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { createRunStore } from '../../store/run-store.ts';
import { TURN_KEY_FORMAT } from '../../store/turn-key.ts';
import { createLiveEventLog } from '../../store/event-log.ts';
import { notifyRound } from './round-wakeup.ts';
import { storeWorkerCoordination } from './worker-coordination.ts';

/** Why a run cannot be spread over workers on this store (a PGlite data folder is one process's). */
export class WorkersNeedPostgresError extends Error {
  readonly code = 'WORKERS_NEED_POSTGRES' as const;
  constructor() {
    super(
      'workers need a PostgreSQL store: the embedded one (PGlite) is opened by one process at a time; pass --database-url postgres://…',
    );
    this.name = 'WorkersNeedPostgresError';
  }
}

/**
 * Type guard for {@link WorkersNeedPostgresError}.
 *
 * @example
 * ```ts
 * if (isWorkersNeedPostgresError(e)) console.error(e.message);
 * ```
 */
export function isWorkersNeedPostgresError(e: unknown): e is WorkersNeedPostgresError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'WORKERS_NEED_POSTGRES';
}

/** Options of {@link startWorkerRun}. */
export interface StartWorkerRunOptions {
  readonly scenario: ScenarioSpec;
  /** Where the scenario was loaded from: every worker loads it from there. */
  readonly scenarioSource: string;
  /** A PostgreSQL store (PGlite is refused). */
  readonly database: BreakwaterDatabase;
  /** How many workers will share the run (each claims about its share of a round's agents). */
  readonly workers: number;
  /** Default `<scenario>-<UTC timestamp>-<4 hex>`. */
  readonly runId?: string;
  /** An emulator already running (its control URL). Default: one is started here, on the run's clock. */
  readonly emulatorUrl?: string;
  /**
   * Lease of a claimed agent part and of a global token, ms (a killed worker's agents are taken over after it, its
   * tokens come back within it). Default 5 000.
   */
  readonly leaseTtlMs?: number;
  /**
   * Where the workers share the run's global tokens and endpoint health: a `postgres://…` or `redis://…` URL
   * (stored without its secrets), and for Redis the prefix of its keys. Default: the run's own PostgreSQL store.
   */
  readonly coordination?: { readonly url: string; readonly keyPrefix?: string };
}

/** A run created for workers. */
export interface WorkerRun {
  readonly runId: string;
  readonly rounds: number;
  /** The emulator started for the run (close it when the run is over), if one was. */
  readonly emulator?: Emulator;
  /** How the workers share it (as stored with the run). */
  readonly workers: StoredWorkersConfig;
  /** How many turns each round has (index 0: round 1), for progress. */
  readonly turnsPerRound: readonly number[];
  /** The run's clock as every worker reads it (for countdowns shown by the parent). */
  readonly clock: Clock;
  /** The scenario's name. */
  readonly scenario: string;
  /** The scenario's global token limit. */
  readonly tokenLimit: number;
  /** Set when the run was resumed: the last round committed before. */
  readonly resumedFrom?: number;
}

/**
 * Creates a run to be driven by worker processes (`breakwater worker`): stores the scenario's source, the
 * clock's origin and the wall instant it maps to (so every worker's clock agrees), the emulator's control URL
 * (one emulator, one record of calls, started here on the run's clock unless given) and the coordination pool
 * of the run's global tokens. Workers then join it by themselves.
 *
 * @throws {WorkersNeedPostgresError} on a PGlite store
 * @example
 * ```ts
 * const { runId, emulator } = await startWorkerRun({ scenario, scenarioSource, database, workers: 3 });
 * ```
 */
export async function startWorkerRun(options: StartWorkerRunOptions): Promise<WorkerRun> {
  if (options.database.backend !== 'postgres') throw new WorkersNeedPostgresError();
  const spec = options.scenario;
  const runId = options.runId ?? defaultRunId(spec.name);
  const wallStart = Date.now();
  const origin = scenarioOrigin(spec, wallStart);
  const scale = spec.timeScale ?? 1;
  const plans = planRounds(spec, { origin });
  let emulator: Emulator | undefined;
  let emulatorUrl = options.emulatorUrl;
  const templates = Object.values(
    (spec.runtime as { byok?: { templates?: Record<string, { emulator?: string }> } }).byok?.templates ?? {},
  );
  const needsEmulator = spec.runtime.endpoints.some((e) => e.emulator) || templates.some((t) => t.emulator);
  // The run's clock, as the workers read it.
  const clock = createScaledClock({ origin, realStart: wallStart, realNow: preciseWallNow, scale });
  if (needsEmulator && !emulatorUrl) {
    // On the run's clock, as the workers' clocks: the emulator's windows and the scenario's firings agree.
    emulator = await startEmulator({ profile: { ...(spec.emulator ?? {}), timeScale: 1 }, clock });
    emulatorUrl = emulator.controlURL;
  }
  const workers: StoredWorkersConfig = {
    count: options.workers,
    wallStart,
    ...(emulatorUrl ? { emulatorUrl, emulatorOnRunClock: emulator !== undefined } : {}),
    pool: `run:${runId}:${randomBytes(2).toString('hex')}`,
    leaseTtlMs: options.leaseTtlMs ?? 5_000,
    ...(options.coordination
      ? { coordination: storeWorkerCoordination(options.coordination.url, options.coordination.keyPrefix) }
      : {}),
  };
  const config: StoredRunConfig = {
    policy: 'breakwater',
    providers: 'emulator',
    report: reportConfig(spec, spec, origin, 0),
    scenarioSource: options.scenarioSource,
    timeScale: scale,
    origin,
    workers,
    keyFormat: TURN_KEY_FORMAT,
  };
  try {
    await createRunStore(options.database).createRun({
      runId,
      scenario: spec.name,
      config,
      totalRounds: plans.length,
      machineVersion: AGENT_MACHINE_VERSION,
    });
    const agents: AgentInfo[] = scenarioAgents(spec).map((d) => ({
      name: d.name,
      tier: d.tier ?? spec.runtime.tiers?.[spec.runtime.tiers.length - 1] ?? 'ops',
      ...(isNoAgentDefinition(d) ? { noAgent: true } : { chain: d.chain }),
    }));
    // The run's first event, as a single-process run writes it: the report and the live view read the agents here
    // (the report from the committed log, the live view of `run --workers` from the live stream).
    const first = {
      at: origin,
      type: 'run.started',
      agent: null,
      endpoint: null,
      data: {
        runId,
        scenario: spec.name,
        rounds: plans.length,
        agents,
        endpoints: spec.runtime.endpoints.map((e) => e.id),
      },
    };
    await createRunStore(options.database).appendRunEvents(runId, [first]);
    await createLiveEventLog(options.database).append(runId, [first]);
  } catch (e) {
    await emulator?.close();
    throw e;
  }
  // Workers idle on any run go on now rather than at their next poll.
  await notifyRound(options.database, runId);
  return {
    runId,
    rounds: plans.length,
    workers,
    turnsPerRound: plans.map((p) => p.turns.length),
    clock,
    scenario: spec.name,
    tokenLimit: tokenLimitOf(spec),
    ...(emulator ? { emulator } : {}),
  };
}

/**
 * The global token limit a scenario's runtime declares (`concurrency.limit`), when it does.
 *
 * @example
 * ```ts
 * tokenLimitOf(loadScenario('morning-peak')); // 3
 * ```
 */
export function tokenLimitOf(spec: ScenarioSpec): number {
  const limit = (spec.runtime as { concurrency?: { limit?: unknown } }).concurrency?.limit;
  // The runtime config's own default (`concurrency.limit` in runtime-config.ts).
  return typeof limit === 'number' ? limit : 3;
}
