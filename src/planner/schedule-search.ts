import { type Demand, evaluateDemand, type JobState } from './demand-model.ts';
import { type PlanContext, type PreparedJob, shiftedCron } from './plan-jobs.ts';

/**
 * Finds a small set of moves that makes a schedule fit. Three passes, each deterministic:
 * 1. greedy: repeatedly take the one move that lowers the excess most (ties: fewer predicted fallbacks,
 *    then the smaller move, then file order) until the schedule fits or no move helps;
 * 2. when the greedy pass is stuck, an exhaustive search by the number of jobs changed (1, 2, …) over
 *    every job's every option, bounded by a budget of evaluations — complete for small schedules, so a
 *    fitting schedule within the windows is found whenever one exists and the budget allows;
 * 3. pruning: a move whose undoing keeps the fit is undone, and each shift is made as short as it can be.
 */

/** Default number of schedules the exhaustive pass may evaluate. */
export const DEFAULT_SEARCH_BUDGET = 50_000;

/** What the search found. */
export interface SearchResult {
  readonly states: readonly JobState[];
  readonly demand: Demand;
  readonly evaluated: number;
  /** Set when no fitting schedule was found. */
  readonly note?: string;
}

/** Moves between a job's original state and `s`. */
function moveCount(initial: JobState, s: JobState): number {
  if (s.chain === null) return initial.chain === null ? 0 : 1;
  return (s.offset !== 0 ? 1 : 0) + (s.chain !== initial.chain ? 1 : 0);
}

/** Offsets a job may take, shortest first (earlier before later at the same length). */
function offsets(job: PreparedJob): number[] {
  const out: number[] = [];
  for (let d = -job.flex.earlier; d <= job.flex.later; d++) if (shiftedCron(job, d) !== null) out.push(d);
  return out.sort((a, b) => Math.abs(a) - Math.abs(b) || a - b);
}

/** Every state a job may be in (its original one first). */
function options(ctx: PlanContext, job: PreparedJob): JobState[] {
  const initial: JobState = { offset: 0, chain: job.chain };
  if (job.chain === null) return [initial];
  const chains = [job.chain];
  if (job.operational && ctx.lightChain !== null && job.chain !== ctx.lightChain) chains.push(ctx.lightChain);
  const out: JobState[] = [];
  for (const chain of chains) for (const offset of offsets(job)) out.push({ offset, chain });
  if (!job.needsLlm) out.push({ offset: 0, chain: null });
  return out.sort((a, b) => moveCount(initial, a) - moveCount(initial, b));
}

/** Whether a job's firings touch the window at all under some offset (else no move of it can help). */
function inWindow(ctx: PlanContext, job: PreparedJob): boolean {
  return job.firings.some((t) => t >= ctx.from && t < ctx.to);
}

interface Counter {
  evaluated: number;
}

function evaluate(ctx: PlanContext, states: readonly JobState[], counter: Counter): Demand {
  counter.evaluated++;
  return evaluateDemand(ctx, states);
}

function greedy(
  ctx: PlanContext,
  initial: readonly JobState[],
  movable: readonly PreparedJob[],
  all: ReadonlyMap<number, JobState[]>,
  counter: Counter,
): { states: JobState[]; demand: Demand } {
  const states = [...initial];
  let demand = evaluate(ctx, states, counter);
  const maxSteps = movable.length * 3;
  for (let step = 0; step < maxSteps && !demand.fits; step++) {
    let best: { j: number; s: JobState; d: Demand; cost: number } | undefined;
    for (const job of movable) {
      const current = states[job.index]!;
      for (const s of all.get(job.index)!) {
        if (s.offset === current.offset && s.chain === current.chain) continue;
        const trial = [...states];
        trial[job.index] = s;
        const d = evaluate(ctx, trial, counter);
        // A job that needs no LLM is best run without one: at equal effect, noAgent beats the light chain.
        const cost =
          moveCount(initial[job.index]!, s) * 1_000 + Math.abs(s.offset) - (s.chain === null ? 500 : 0);
        if (
          !best ||
          d.score < best.d.score - 1e-12 ||
          (Math.abs(d.score - best.d.score) <= 1e-12 &&
            (d.spilled < best.d.spilled || (d.spilled === best.d.spilled && cost < best.cost)))
        )
          best = { j: job.index, s, d, cost };
      }
    }
    if (!best || best.d.score >= demand.score - 1e-12) break;
    states[best.j] = best.s;
    demand = best.d;
  }
  return { states, demand };
}

function exhaustive(
  ctx: PlanContext,
  initial: readonly JobState[],
  movable: readonly PreparedJob[],
  all: ReadonlyMap<number, JobState[]>,
  counter: Counter,
  budget: number,
): { states: JobState[]; demand: Demand } | 'budget' | undefined {
  const start = counter.evaluated;
  const states = [...initial];
  const choices = movable.map((job) => all.get(job.index)!.slice(1));
  let found: { states: JobState[]; demand: Demand } | undefined;
  let outOfBudget = false;
  const visit = (from: number, left: number): void => {
    if (found || outOfBudget) return;
    for (let i = from; i < movable.length; i++) {
      const job = movable[i]!;
      for (const s of choices[i]!) {
        states[job.index] = s;
        if (left === 1) {
          if (counter.evaluated - start >= budget) {
            outOfBudget = true;
            states[job.index] = initial[job.index]!;
            return;
          }
          const d = evaluate(ctx, states, counter);
          if (d.fits) {
            found = { states: [...states], demand: d };
            return;
          }
        } else visit(i + 1, left - 1);
        if (found || outOfBudget) return;
      }
      states[job.index] = initial[job.index]!;
    }
  };
  for (let k = 1; k <= movable.length && !found && !outOfBudget; k++) visit(0, k);
  if (found) return found;
  return outOfBudget ? 'budget' : undefined;
}

/** Undoes what is not needed, then shortens every shift, keeping the fit. */
function prune(ctx: PlanContext, initial: readonly JobState[], states: JobState[], counter: Counter): Demand {
  for (let j = states.length - 1; j >= 0; j--) {
    const s = states[j]!;
    const o = initial[j]!;
    if (s.offset === o.offset && s.chain === o.chain) continue;
    const trial = [...states];
    trial[j] = o;
    if (evaluate(ctx, trial, counter).fits) {
      states[j] = o;
      continue;
    }
    // Keep the chain move or the shift alone when one of them is enough.
    if (s.chain !== null && s.chain !== o.chain && s.offset !== 0) {
      for (const half of [
        { offset: 0, chain: s.chain },
        { offset: s.offset, chain: o.chain },
      ]) {
        const t2 = [...states];
        t2[j] = half;
        if (evaluate(ctx, t2, counter).fits) {
          states[j] = half;
          break;
        }
      }
    }
  }
  for (let j = 0; j < states.length; j++) {
    const s = states[j]!;
    if (s.chain === null || s.offset === 0) continue;
    const job = ctx.jobs[j]!;
    for (const d of offsets(job)) {
      if (Math.abs(d) >= Math.abs(s.offset)) break;
      const trial = [...states];
      trial[j] = { offset: d, chain: s.chain };
      if (evaluate(ctx, trial, counter).fits) {
        states[j] = trial[j]!;
        break;
      }
    }
  }
  return evaluate(ctx, states, counter);
}

/**
 * The smallest set of moves this search finds that makes the schedule of `ctx` fit (see the module note).
 *
 * @example
 * ```ts
 * const found = searchSchedule(ctx);
 * found.demand.fits; // true when a fitting schedule was found
 * ```
 */
export function searchSchedule(ctx: PlanContext, budget = DEFAULT_SEARCH_BUDGET): SearchResult {
  const counter: Counter = { evaluated: 0 };
  const initial: JobState[] = ctx.jobs.map((j) => ({ offset: 0, chain: j.chain }));
  const start = evaluate(ctx, initial, counter);
  if (start.fits) return { states: initial, demand: start, evaluated: counter.evaluated };
  const all = new Map(ctx.jobs.map((j) => [j.index, options(ctx, j)]));
  const movable = ctx.jobs.filter((j) => all.get(j.index)!.length > 1 && inWindow(ctx, j));
  const first = greedy(ctx, initial, movable, all, counter);
  const found = first.demand.fits ? first : exhaustive(ctx, initial, movable, all, counter, budget);
  if (found === undefined || found === 'budget') {
    const why =
      found === 'budget'
        ? `no fitting schedule found within ${budget.toLocaleString('en-US')} schedules searched; widen some jobs' flex, allow the light chain or noAgent, or raise the limits`
        : 'no schedule within the jobs’ flex windows fits the limits; widen some jobs’ flex, allow the light chain or noAgent, or raise the limits';
    // The best the greedy pass reached is still worth showing.
    return { states: first.states, demand: first.demand, evaluated: counter.evaluated, note: why };
  }
  const states = [...found.states];
  const demand = prune(ctx, initial, states, counter);
  return { states, demand, evaluated: counter.evaluated };
}
