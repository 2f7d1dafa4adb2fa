import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { EmulatorStats } from '../../src/emulator/emulator-types.ts';
import { type RunPolicy, runScenario } from '../../src/runs/run-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';

/** How a `runScenario` policy is run by the goodput bench. */
export interface PolicyRunOptions {
  /** On a virtual clock, with the in-process emulator on it (the emulator cannot live elsewhere then). */
  readonly virtual: boolean;
  readonly jitterSeed?: number;
  /** Scaled clock: the emulator in its own process (`startBaselineEmulator`), read for the stats at the end. */
  readonly emulator?: { readonly controlURL: string; stats(): Promise<EmulatorStats> };
}

/**
 * Runs agent8-storm's rounds with `runScenario` under `policy` (breakwater, or seed 000's status-quo worker), and
 * returns the emulator's stats, the run's events and its turns' outcomes. Makespan: run.started → run.finished on
 * the run clock (simulated ms).
 */
export async function runPolicy(
  spec: ScenarioSpec,
  policy: RunPolicy,
  database: BreakwaterDatabase,
  o: PolicyRunOptions,
) {
  let startedAt = Number.NaN;
  let finishedAt = Number.NaN;
  const events: RuntimeEvent[] = [];
  const runId = `bench-goodput-${policy}-${Date.now().toString(36)}`;
  const result = await runScenario({
    scenario: spec,
    scenarioSource: 'scenarios/agent8-storm',
    runId,
    policy,
    database,
    ...(o.virtual ? { virtualTime: true } : {}),
    ...(o.virtual && o.jitterSeed !== undefined ? { jitterSeed: o.jitterSeed } : {}),
    ...(o.emulator ? { emulatorUrl: o.emulator.controlURL } : {}),
    onEvent: (e) => {
      events.push(e);
      if (e.type === 'run.started') startedAt = e.at;
      if (e.type === 'run.finished') finishedAt = e.at;
    },
  });
  if (result.run.status !== 'completed') throw new Error(`${policy} run ended ${result.run.status}`);
  const turns = await createRunStore(database).listTurns(runId);
  const stats = o.emulator ? await o.emulator.stats() : result.emulatorStats;
  if (!stats) throw new Error('runScenario returned no emulator stats');
  return {
    stats,
    events,
    forcedClockJumps: result.forcedClockJumps,
    run: {
      makespanMs: finishedAt - startedAt,
      turns: turns.length,
      failedTurns: turns.filter((t) => t.outcome === 'failed').length,
      degradedTurns: turns.filter((t) => t.degraded).length,
      realMs: result.realMs,
    },
  };
}
