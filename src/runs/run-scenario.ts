import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import type { VirtualClock } from '../clock/virtual-clock.ts';
import type { Emulator } from '../emulator/emulator-server.ts';
import { type AgentDefinition, isNoAgentDefinition } from '../runtime/agent-definition.ts';
import { defineConfig, type RuntimeConfigInput } from '../runtime/runtime-config.ts';
import { toRealProviders } from '../scenarios/real-providers.ts';
import type { ScenarioSpec } from '../scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../store/open-database.ts';
import { acquireRunLease, type RunLease } from '../store/run-lease.ts';
import { createRunStore } from '../store/run-store.ts';
import type { RunRecord } from '../store/store-types.ts';
import { driveRun } from './drive-run.ts';
import { loadRunRestore } from './run-restore.ts';
import type { RunPolicy, RunScenarioOptions, ScenarioRunResult } from './run-scenario-options.ts';
import { wireRunEndpoints } from './run-endpoints.ts';
import { type ProviderMode, runTimeline } from './run-timeline.ts';
import { newRunConfig, type StoredRunConfig } from './stored-run-config.ts';
import type { TurnExecutor } from './turn-executor.ts';

export type { ProviderMode } from './run-timeline.ts';
export type {
  RunPolicy,
  RunScenarioOptions,
  ScenarioRunContext,
  ScenarioRunResult,
} from './run-scenario-options.ts';
export {
  reportConfig,
  type StoredReportConfig,
  type StoredRunConfig,
  type StoredWorkersConfig,
} from './stored-run-config.ts';

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
