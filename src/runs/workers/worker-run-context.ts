import { createScaledClock, preciseWallNow, type ScaledClock } from '../../clock/scaled-clock.ts';
import type { CoordinationOptions } from '../../coordination/coordination-options.ts';
import type { AgentDefinition } from '../../runtime/agent-definition.ts';
import { loadScenario } from '../../scenarios/load-scenario.ts';
import { planRounds } from '../../scenarios/round-planner.ts';
import { scenarioRuntimeConfig } from '../../scenarios/scenario-endpoints.ts';
import { scenarioAgents } from '../../scenarios/scenario-tools.ts';
import type { RoundPlan, ScenarioSpec } from '../../scenarios/scenario-types.ts';
import type { RunRecord } from '../../store/store-types.ts';
import { emulatorBaseURLs } from '../run-endpoints.ts';
import type { StoredRunConfig, StoredWorkersConfig } from '../run-scenario.ts';
import { type WireTimeEngines, wireTimeEngines } from '../wire-time-engines.ts';
import type { RunWorkerOptions } from './run-worker-options.ts';
import { planWorkerCoordination, probeCoordination } from './worker-coordination.ts';
import { createWorkerEventRecorder, type WorkerEventRecorder } from './worker-event-recorder.ts';

/** A joined run: its scenario, plans, runtime and clock, built once per worker. */
export interface RunContext {
  readonly run: RunRecord;
  readonly workers: StoredWorkersConfig;
  readonly spec: ScenarioSpec;
  readonly plans: readonly RoundPlan[];
  readonly definitions: readonly AgentDefinition[];
  readonly clock: ScaledClock;
  /** The engine factories reading wall-time endpoints' (and BYOK keys') waits onto the run's clock. */
  readonly wire: WireTimeEngines;
  readonly recorder: WorkerEventRecorder;
  /** Where this worker shares the run's tokens and endpoint health (URL with its credentials). */
  readonly coordination: CoordinationOptions;
  /** The endpoints' health as this worker last saw it (committed with the rounds it commits). */
  health?: unknown;
  /**
   * This worker's answered calls of the round it last worked, kept across its claims of that round (work-parts.ts
   * says why).
   */
  answered?: { readonly round: number; readonly calls: Map<string, unknown> };
}

/** Joins a run spread over workers: its scenario loaded, its coordination reached, its clock and engines built. */
export async function joinRun(
  options: Pick<RunWorkerOptions, 'database' | 'databaseUrl' | 'coordinationUrl'>,
  run: RunRecord,
): Promise<RunContext> {
  const database = options.database;
  const config = run.config as StoredRunConfig | null;
  const workers = config?.workers;
  if (!config?.scenarioSource || !workers)
    throw new Error(`run "${run.runId}" was not started for workers (\`breakwater run --workers N\`)`);
  const coordination = planWorkerCoordination({
    runId: run.runId,
    stored: workers.coordination,
    databaseUrl: options.databaseUrl,
    override: options.coordinationUrl,
  });
  // Reached once before any part is claimed: an unreachable backend is one line, not a run of degraded turns.
  await probeCoordination(
    { ...coordination.options, pool: workers.pool },
    options.coordinationUrl !== undefined ? '--coordination-url' : `run ${run.runId}'s coordination`,
  );
  const scenario = loadScenario(config.scenarioSource);
  const scale = scenario.timeScale ?? 1;
  // Every worker's clock reads the run's origin at the same wall instant, so scheduled firings agree.
  const clock = createScaledClock({
    origin: workers.clockOrigin ?? config.origin,
    realStart: workers.wallStart,
    realNow: preciseWallNow,
    scale,
  });
  const baseURLs = await emulatorBaseURLs(
    scenario,
    workers.emulatorUrl ? { emulatorUrl: workers.emulatorUrl } : {},
    clock,
    () => {
      throw new Error(`run "${run.runId}" needs an emulator but stored none for its workers`);
    },
  );
  const runtime = scenarioRuntimeConfig(scenario, {
    baseURL: (flavor) => {
      const url = baseURLs[flavor];
      if (!url) throw new Error(`the emulator does not serve flavor "${flavor}"`);
      return url;
    },
  });
  const spec: ScenarioSpec = { ...scenario, runtime: runtime as ScenarioSpec['runtime'] };
  return {
    run,
    workers,
    spec,
    plans: planRounds(scenario, { origin: config.origin }),
    definitions: scenarioAgents(spec),
    clock,
    wire: wireTimeEngines(scenario.runtime, {
      clock,
      timeScale: scale,
      emulatorOnRunClock: workers.emulatorOnRunClock ?? true,
    }),
    recorder: createWorkerEventRecorder(database, run.runId),
    coordination: coordination.options,
  };
}
