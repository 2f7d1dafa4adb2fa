import type { ScenarioSpec } from '../scenarios/scenario-types.ts';
import { evaluateDemand, type JobState } from './demand-model.ts';
import { summarizeDemand } from './demand-summary.ts';
import { formatFlex } from '../scenarios/flex-window.ts';
import { expandCron, type PlanContext, preparePlan, shiftedCron } from './plan-jobs.ts';
import type { PlanInput, PlanMove, PlanOptions, PlanResult } from './plan-types.ts';
import { scenarioPlanInput } from './scenario-plan-input.ts';
import { DEFAULT_SEARCH_BUDGET, searchSchedule } from './schedule-search.ts';

const MINUTE_MS = 60_000;

function isScenario(input: PlanInput | ScenarioSpec): input is ScenarioSpec {
  return 'runtime' in input && 'agents' in input;
}

function movesOf(ctx: PlanContext, states: readonly JobState[]): PlanMove[] {
  const moves: PlanMove[] = [];
  ctx.jobs.forEach((job, j) => {
    const s = states[j]!;
    if (s.chain === null && job.chain !== null) {
      moves.push({ job: job.name, kind: 'noAgent', from: 'false', to: 'true' });
      return;
    }
    if (s.offset !== 0) {
      const cron = shiftedCron(job, s.offset);
      if (cron === null)
        throw new Error(`planner bug: the search moved ${job.name} by ${s.offset} min without a cron for it`);
      moves.push({ job: job.name, kind: 'shift', minutes: s.offset, from: job.cron, to: cron });
    }
    if (s.chain !== null && s.chain !== job.chain)
      moves.push({ job: job.name, kind: 'chain', from: job.chain ?? 'none', to: s.chain });
  });
  return moves;
}

/** A rewritten cron must fire exactly where the moved firings are, inside the window. */
function checkShifts(ctx: PlanContext, moves: readonly PlanMove[]): void {
  for (const m of moves) {
    if (m.kind !== 'shift') continue;
    const job = ctx.jobs.find((j) => j.name === m.job)!;
    const want = job.firings
      .map((t) => t + m.minutes! * MINUTE_MS)
      .filter((t) => t >= ctx.from && t < ctx.to);
    const got = expandCron(m.to, ctx.timezone, ctx.from, ctx.to);
    if (want.length !== got.length || want.some((t, i) => t !== got[i]))
      throw new Error(
        `planner bug: the cron written for ${m.job} (${m.to}) does not fire where the moved job does`,
      );
  }
}

/**
 * Plans a cron schedule against its quotas before it runs: expands every job over the window (croner,
 * in the schedule's zone), estimates each firing's LLM calls and tokens, and computes per minute and
 * per clock hour the demand on every endpoint against its limits (RPM, TPM), on the global concurrency
 * tokens (calls × mean call length), and on every per-model hourly budget (seed 000's sonnet ≤ 20/h):
 * where demand exceeds supply, by how much, and which jobs make the peak. Then proposes the smallest set
 * of moves this search finds that makes it fit — shift a job within its `flex`, move an operational job
 * to the light chain, mark a job that needs no LLM `noAgent` — and the demand after them. Pinned jobs
 * (no `flex`, or `flex: 0`) never move. Deterministic: the same input gives the same plan.
 *
 * Takes a loaded scenario (`loadScenario`, see {@link scenarioPlanInput} for what it reads) or the plain
 * form ({@link PlanInput}: cron lines with per-job estimates, for crons kept elsewhere). Bad input is
 * one `ConfigError` naming the source, the field and what to do.
 *
 * @example
 * ```ts
 * const plan = planSchedule({
 *   from: '2026-08-17T07:00:00+09:00', to: '2026-08-17T08:00:00+09:00', timezone: 'Asia/Seoul',
 *   endpoints: [{ id: 'sonnet', model: 'claude-sonnet-4-6', rpm: 2 }],
 *   chains: { premium: ['sonnet'] },
 *   jobs: [
 *     { name: 'brief-a', cron: '30 7 * * *', chain: 'premium' },
 *     { name: 'brief-b', cron: '30 7 * * *', chain: 'premium' },
 *     { name: 'brief-c', cron: '30 7 * * *', chain: 'premium', flex: '15m' },
 *   ],
 * });
 * plan.before.fits; // false: 3 calls at 07:30 against 2 RPM
 * plan.proposal.moves; // [{ job: 'brief-c', kind: 'shift', minutes: -1, from: '30 7 * * *', to: '29 7 * * *' }]
 * ```
 */
export function planSchedule(input: PlanInput | ScenarioSpec, options: PlanOptions = {}): PlanResult {
  const plain = isScenario(input) ? scenarioPlanInput(input) : input;
  const ctx = preparePlan(plain);
  const initial: JobState[] = ctx.jobs.map((j) => ({ offset: 0, chain: j.chain }));
  const beforeDemand = evaluateDemand(ctx, initial);
  const before = summarizeDemand(ctx, initial, beforeDemand);
  const found = options.analyseOnly
    ? { states: initial, demand: beforeDemand, evaluated: 0 }
    : searchSchedule(ctx, options.searchBudget ?? DEFAULT_SEARCH_BUDGET);
  const moves = movesOf(ctx, found.states);
  checkShifts(ctx, moves);
  return {
    window: { from: ctx.from, to: ctx.to, timezone: ctx.timezone },
    jobs: ctx.jobs.map((j) => ({
      name: j.name,
      cron: j.cron,
      chain: j.chain,
      flex: formatFlex(j.flex),
      firings: j.firings.filter((t) => t >= ctx.from && t < ctx.to).length,
      callsPerFiring: j.calls,
      tokensPerCall: j.tokens,
    })),
    before,
    after: summarizeDemand(ctx, found.states, found.demand),
    proposal: {
      fits: found.demand.fits,
      moves,
      evaluated: found.evaluated,
      ...('note' in found && found.note ? { note: found.note } : {}),
    },
  };
}
