import { sql } from 'kysely';
import { createScaledClock, preciseWallNow } from '../../clock/scaled-clock.ts';
import { type Emulator, startEmulator } from '../../emulator/emulator-server.ts';
import type { StoredRunConfig, StoredWorkersConfig } from '../run-scenario.ts';
import { loadScenario } from '../../scenarios/load-scenario.ts';
import { planRounds } from '../../scenarios/round-planner.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { createRunStore } from '../../store/run-store.ts';
import type { RunRecord } from '../../store/store-types.ts';
import { notifyRound } from './round-wakeup.ts';
import { tokenLimitOf, type WorkerRun, WorkersNeedPostgresError } from './start-worker-run.ts';
import { createWorkerEventRecorder } from './worker-event-recorder.ts';

/** Options of {@link resumeWorkerRun}. */
export interface ResumeWorkerRunOptions {
  /** The run's PostgreSQL store. */
  readonly database: BreakwaterDatabase;
  /** A run that is not completed (interrupted, failed, or left running by workers that are gone). */
  readonly run: RunRecord;
  /** How many workers go on with it. Default: as many as it was started with. */
  readonly workers?: number;
  /** An emulator already running (its control URL). Default: the run's own, started again here on its clock. */
  readonly emulatorUrl?: string;
}

/**
 * Whether a stored run was started for workers (`run --workers N`): `resume` continues such a run with workers.
 *
 * @example
 * ```ts
 * if (isWorkerRun(await store.getRun(runId))) await resumeWorkerRun({ database, run, workers: 3 });
 * ```
 */
export function isWorkerRun(run: RunRecord | undefined): boolean {
  return (run?.config as StoredRunConfig | null)?.workers !== undefined;
}

/**
 * Sets a run spread over workers going again from its last committed round: its clock goes on from where the run
 * stopped (the later of its last event and the next round's first firing, so event times never go back), a new
 * emulator is started on it when the run had its own (the old one went with its parent), the new start is stored
 * for the workers to read, the run is `running` again, and its log says it resumed. Parts of the next round staged
 * before the stop are kept; parts claimed by the workers that are gone are taken over once their leases run out.
 *
 * @throws {WorkersNeedPostgresError} on a PGlite store
 * @example
 * ```ts
 * const resumed = await resumeWorkerRun({ database, run, workers: 2 });
 * // then start `breakwater worker --run-id ${resumed.runId}` processes
 * ```
 */
export async function resumeWorkerRun(options: ResumeWorkerRunOptions): Promise<WorkerRun> {
  const { database, run } = options;
  if (database.backend !== 'postgres') throw new WorkersNeedPostgresError();
  const config = run.config as StoredRunConfig | null;
  const stored = config?.workers;
  if (!config?.scenarioSource || !stored)
    throw new Error(`run "${run.runId}" was not started for workers (\`breakwater run --workers N\`)`);
  const spec = loadScenario(config.scenarioSource);
  const plans = planRounds(spec, { origin: config.origin });
  const next = plans.find((p) => p.round > run.currentRound);
  const firstAt = next?.turns.reduce(
    (m, t) => (t.at !== undefined ? Math.min(m, t.at) : m),
    Number.POSITIVE_INFINITY,
  );
  const lastAt = await lastEventAt(database, run.runId);
  const resumeAt = Math.max(
    lastAt ?? config.origin,
    Number.isFinite(firstAt) ? (firstAt as number) : config.origin,
  );
  const wallStart = Date.now();
  const scale = spec.timeScale ?? 1;
  const clock = createScaledClock({ origin: resumeAt, realStart: wallStart, realNow: preciseWallNow, scale });
  let emulator: Emulator | undefined;
  let emulatorUrl = options.emulatorUrl;
  // An emulator given by URL at the start is still the user's to run; the run's own went with its parent.
  if (!emulatorUrl && stored.emulatorUrl && stored.emulatorOnRunClock === false)
    emulatorUrl = stored.emulatorUrl;
  if (!emulatorUrl && stored.emulatorUrl) {
    emulator = await startEmulator({ profile: { ...(spec.emulator ?? {}), timeScale: 1 }, clock });
    emulatorUrl = emulator.controlURL;
  }
  const workers: StoredWorkersConfig = {
    ...stored,
    count: options.workers ?? stored.count,
    wallStart,
    clockOrigin: resumeAt,
    ...(emulatorUrl
      ? { emulatorUrl, emulatorOnRunClock: emulator !== undefined || stored.emulatorOnRunClock !== false }
      : {}),
  };
  try {
    await database.db
      .updateTable('runs')
      .set({ config: JSON.stringify({ ...config, workers }) as never })
      .where('run_id', '=', run.runId)
      .execute();
    await createRunStore(database).setRunStatus(run.runId, 'running');
    const recorder = createWorkerEventRecorder(database, run.runId);
    // As a one-process resume says it: the live view and the visualizer read the agents from here.
    const started = (await createRunStore(database).readEvents(run.runId, { limit: 1 }))[0];
    recorder.listener({
      type: 'run.started',
      at: clock.now(),
      data: {
        ...((started?.type === 'run.started' ? started.data : {}) as object),
        runId: run.runId,
        scenario: spec.name,
        rounds: plans.length,
        resumedFrom: run.currentRound,
      },
    } as Parameters<typeof recorder.listener>[0]);
    await recorder.flush();
  } catch (e) {
    await emulator?.close();
    throw e;
  }
  await notifyRound(database, run.runId);
  return {
    runId: run.runId,
    rounds: plans.length,
    workers,
    turnsPerRound: plans.map((p) => p.turns.length),
    clock,
    scenario: spec.name,
    tokenLimit: tokenLimitOf(spec),
    resumedFrom: run.currentRound,
    ...(emulator ? { emulator } : {}),
  };
}

async function lastEventAt(database: BreakwaterDatabase, runId: string): Promise<number | undefined> {
  const { rows } = await sql<{ at: string | number | null }>`
    select max(at) as at from events where run_id = ${runId}
  `.execute(database.db);
  const at = rows[0]?.at;
  return at === null || at === undefined ? undefined : Number(at);
}
