import { resolveInstant } from '../clock/zoned-time.ts';
import type { ScenarioSpec } from '../scenarios/scenario-types.ts';
import { TURN_KEY_FORMAT, type TurnKeyFormat } from '../store/turn-key.ts';
import type { RunPolicy, RunScenarioOptions } from './run-scenario-options.ts';
import type { ProviderMode } from './run-timeline.ts';
import type { StoredWorkerCoordination } from './workers/worker-coordination.ts';

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

/** How a new run is stored: enough to resume it, report it and replay it on the same timeline. */
export function newRunConfig(
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
