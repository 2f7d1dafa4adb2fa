import { Cron } from 'croner';
import { ConfigError } from '../core/errors/config-error.ts';
import type { PlannedTurn, RoundPlan, ScenarioSpec, ScheduleSpec } from './scenario-types.ts';
import { formatClock, formatDate, resolveInstant } from '../clock/zoned-time.ts';

/** Default length of one scheduled round, simulated minutes. */
export const DEFAULT_SLICE_MINUTES = 10;

/** Most firings one schedule may expand to (a `* * * * * *` over a week would be millions). */
export const MAX_FIRINGS = 100_000;

/** Options of {@link planRounds}. */
export interface PlanOptions {
  /**
   * Simulated epoch ms the run starts at. Only scheduled work reads it: a `from`/`to` written as a time
   * of day (`06:00`) is taken on origin's calendar day in the schedule's zone (a `to` not after `from`
   * is on the next day). Default: `Date.parse(spec.start)`, else the real now.
   */
  readonly origin?: number;
}

/** One firing of a cron job inside the window. */
export interface Firing {
  readonly job: string;
  readonly agent: string;
  readonly at: number;
  readonly prompt: string;
}

/**
 * The window of a schedule as epoch ms, `[from, to)`.
 *
 * @example
 * ```ts
 * scheduleWindow(spec.schedule!, origin); // { from: Date.parse('2026-08-17T06:00:00+09:00'), to: … 08:30 }
 * ```
 */
export function scheduleWindow(schedule: ScheduleSpec, origin: number): { from: number; to: number } {
  const from = resolveInstant(schedule.from, schedule.timezone, origin);
  let to = resolveInstant(schedule.to, schedule.timezone, origin);
  if (to <= from && !/T/.test(schedule.to)) to += 24 * 3_600_000;
  return { from, to };
}

/**
 * Every firing of every job over `[from, to)`, expanded by croner in the schedule's zone, sorted by time
 * (jobs in file order within the same instant).
 *
 * @example
 * ```ts
 * expandSchedule(spec.schedule!, Date.parse(spec.start!)).filter((f) => f.job === 'telegram-outbox-flusher').length; // 75
 * ```
 */
export function expandSchedule(schedule: ScheduleSpec, origin: number): Firing[] {
  const { from, to } = scheduleWindow(schedule, origin);
  const firings: Firing[] = [];
  schedule.jobs.forEach((job) => {
    const cron = new Cron(job.cron, { timezone: schedule.timezone, mode: '5-or-6-parts' });
    // nextRun is strictly after its argument and works in whole seconds.
    let next = cron.nextRun(new Date(Math.floor(from / 1000) * 1000 - 1000));
    while (next && next.getTime() < to) {
      const at = next.getTime();
      if (at >= from) firings.push({ job: job.name, agent: job.agent, at, prompt: job.prompt ?? job.name });
      if (firings.length > MAX_FIRINGS) {
        throw new ConfigError({
          source: 'schedule',
          path: 'jobs',
          message: `expands to more than ${MAX_FIRINGS} firings between ${schedule.from} and ${schedule.to}; shorten the window or thin the crons`,
        });
      }
      next = cron.nextRun(next);
    }
  });
  // Array.prototype.sort is stable: same-instant firings keep the jobs' file order.
  return firings.sort((a, b) => a.at - b.at);
}

function planScheduled(schedule: ScheduleSpec, origin: number): RoundPlan[] {
  const { from, to } = scheduleWindow(schedule, origin);
  const slice = (schedule.sliceMinutes ?? DEFAULT_SLICE_MINUTES) * 60_000;
  const count = Math.max(1, Math.ceil((to - from) / slice));
  const multiDay = to - from > 24 * 3_600_000;
  const buckets: PlannedTurn[][] = Array.from({ length: count }, () => []);
  for (const f of expandSchedule(schedule, origin)) {
    const clock = formatClock(f.at, schedule.timezone);
    const when = multiDay ? `${formatDate(f.at, schedule.timezone)}T${clock}` : clock;
    const turn: PlannedTurn = { itemId: `${f.job}@${when}`, agent: f.agent, at: f.at, prompt: f.prompt };
    buckets[Math.min(count - 1, Math.floor((f.at - from) / slice))]!.push(turn);
  }
  return buckets.map((turns, i) => ({ round: i + 1, turns }));
}

function planRoundWork(spec: ScenarioSpec): RoundPlan[] {
  const rounds = spec.rounds!;
  const agents = rounds.agents ?? spec.agents.filter((a) => !a.noAgent).map((a) => a.name);
  const turns: PlannedTurn[] = [];
  for (const item of rounds.items) {
    for (const agent of agents) turns.push({ itemId: item.id, agent, item });
  }
  return Array.from({ length: rounds.count }, (_, i) => ({ round: i + 1, turns }));
}

/**
 * Plans a scenario's work as rounds (numbered from 1, as the store commits them).
 *
 * - `rounds`: round r has one turn per (item, participating agent), items in file order and, within an
 *   item, agents in `rounds.agents` order (default: every LLM agent in file order). No `at`: round work
 *   runs as soon as it can.
 * - `schedule`: every job's cron is expanded with croner over `[from, to)` in the schedule's zone; one
 *   turn per firing with `at` (simulated epoch ms), `prompt` (the job's prompt, default its name) and
 *   `itemId` = `<job>@<HH:MM>` (`HH:MM:SS` for a firing off the minute; the date is prefixed when the
 *   window is longer than a day). Round r holds the firings of the r-th `sliceMinutes` slice of the
 *   window, sorted by time; every slice is a round, even an empty one, so a firing's round depends only
 *   on its time.
 *
 * @example
 * ```ts
 * const plan = planRounds(loadScenario('agent8-storm'), { origin: Date.now() });
 * plan.length; // 3
 * plan[0]!.turns.length; // 35 items × 8 agents = 280
 * ```
 */
export function planRounds(spec: ScenarioSpec, options: PlanOptions = {}): RoundPlan[] {
  const origin = options.origin ?? (spec.start ? Date.parse(spec.start) : Date.now());
  if (spec.schedule) return planScheduled(spec.schedule, origin);
  if (spec.rounds) return planRoundWork(spec);
  throw new ConfigError({
    source: `scenario "${spec.name}"`,
    path: '',
    message: 'has no work; add rounds: or schedule:',
  });
}
