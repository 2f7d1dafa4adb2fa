import type { Clock } from '../clock/clock.ts';
import { createScaledClock } from '../clock/scaled-clock.ts';
import { createVirtualClock } from '../clock/virtual-clock.ts';
import { planRounds } from '../scenarios/round-planner.ts';
import { scenarioOrigin } from '../scenarios/scenario-endpoints.ts';
import type { RoundPlan, ScenarioSpec } from '../scenarios/scenario-types.ts';

/** Whether `emulator:` endpoints talk to the emulator or to the real providers. */
export type ProviderMode = 'emulator' | 'real';

/** Where a run stands in time: its rounds' plans on the run's clock, and that clock. */
export interface RunTimeline {
  readonly clock: Clock;
  /** The run clock's start (a resumed run: where it left off). */
  readonly origin: number;
  /** The scenario's own start, before any shift onto the wall. */
  readonly scenarioStart: number;
  /** How far a real-provider run moved the scenario's timeline onto the wall, ms (0 on the emulator). */
  readonly wallShiftMs: number;
  readonly plans: readonly RoundPlan[];
  readonly timeScale: number;
}

/** What a run's timeline is made from: the scenario, the run as stored (resumed), and the moment it starts. */
export interface RunTimelineInput {
  readonly spec: ScenarioSpec;
  readonly providers: ProviderMode;
  readonly virtualTime: boolean;
  /** Real ms since the epoch when the command started. */
  readonly realStart: number;
  /** The stored run being resumed, if any. */
  readonly existing: { readonly currentRound: number; readonly wallShiftMs: number | undefined } | undefined;
  /** The last event recorded by the stored run, on its clock. */
  readonly lastEventAt: (() => Promise<number | undefined>) | undefined;
}

/** The plans with every scheduled firing moved by `ms` (a real run's timeline starts at the wall's now). */
function shiftPlans(plans: readonly RoundPlan[], ms: number): readonly RoundPlan[] {
  if (ms === 0) return plans;
  return plans.map((p) => ({
    ...p,
    turns: p.turns.map((t) => (t.at !== undefined ? { ...t, at: t.at + ms } : t)),
  }));
}

/**
 * The run's clock and plans. Real providers live on the wall clock: their reset instants, their quotas' days and
 * their latencies are real, so a real run starts at the wall's now and the scenario's timeline (a past `start:`, a
 * morning's crons) is moved onto it whole, keeping every firing's offset from the start. A resumed run continues
 * its timeline: from the later of its last recorded event and (scheduled work) the first firing of the next round,
 * so event times never go back.
 */
export async function runTimeline(input: RunTimelineInput): Promise<RunTimeline> {
  const { spec, providers, realStart, existing } = input;
  if (input.virtualTime && providers === 'real')
    throw new Error('virtualTime needs simulated providers: real providers answer in wall time; drop one');
  const timeScale = spec.timeScale ?? 1;
  const scenarioStart = scenarioOrigin(spec, realStart);
  const wallShiftMs = providers === 'real' ? (existing?.wallShiftMs ?? realStart - scenarioStart) : 0;
  const plans = shiftPlans(planRounds(spec, { origin: scenarioStart }), wallShiftMs);
  const next = plans.find((p) => p.round > (existing?.currentRound ?? 0));
  const firstAt = next?.turns.reduce(
    (m, t) => (t.at !== undefined ? Math.min(m, t.at) : m),
    Number.POSITIVE_INFINITY,
  );
  const lastAt = existing && input.lastEventAt ? await input.lastEventAt() : undefined;
  const resumeAt = Math.max(
    lastAt ?? Number.NEGATIVE_INFINITY,
    Number.isFinite(firstAt) ? (firstAt as number) : Number.NEGATIVE_INFINITY,
  );
  const origin =
    providers === 'real'
      ? realStart
      : existing && Number.isFinite(resumeAt)
        ? resumeAt
        : scenarioStart + wallShiftMs;
  const clock: Clock = input.virtualTime
    ? createVirtualClock({ origin })
    : createScaledClock({ origin, scale: timeScale });
  return { clock, origin, scenarioStart, wallShiftMs, plans, timeScale };
}
