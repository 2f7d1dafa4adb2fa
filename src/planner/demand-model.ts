import type { PlanContext } from './plan-jobs.ts';

/**
 * The demand model: which endpoint each predicted call lands on, per clock minute, and by how much the
 * schedule goes over each limit. Calls of one minute are served in priority order (analysis tiers
 * first), each on the first endpoint of its chain with room left that minute (RPM and TPM), as the
 * runtime's pacing would send it; a call with no room anywhere on its chain is counted on the chain's
 * last endpoint, over its limit. So a call that is not on its chain's first endpoint is a predicted
 * fallback, and a per-model hourly budget counts what spilled onto that model.
 */

const MINUTE_MS = 60_000;
const HOUR_MINUTES = 60;
/** Float tolerance of the occupancy comparison. */
const EPSILON = 1e-9;

/** What the search changes on a job: how far it moved, and the chain it uses (`null`: plain code). */
export interface JobState {
  readonly offset: number;
  readonly chain: string | null;
}

/** The raw per-minute demand of one schedule. */
export interface Demand {
  readonly callsByEndpoint: readonly Float64Array[];
  readonly tokensByEndpoint: readonly Float64Array[];
  readonly callsByMinute: Float64Array;
  readonly budgetByMinute: readonly Float64Array[];
  /** Sum of relative excess over every limit: 0 when the schedule fits. */
  readonly score: number;
  readonly fits: boolean;
  /** Calls not on their chain's first endpoint. */
  readonly spilled: number;
  readonly calls: number;
}

/** The jobs in serving order (priority, then file order), computed once per context. */
const orderMemo = new WeakMap<PlanContext, readonly number[]>();
function servingOrder(ctx: PlanContext): readonly number[] {
  let order = orderMemo.get(ctx);
  if (!order) {
    order = ctx.jobs
      .map((j) => j.index)
      .sort((a, b) => ctx.jobs[a]!.priority - ctx.jobs[b]!.priority || a - b);
    orderMemo.set(ctx, order);
  }
  return order;
}

/** The firings of every LLM job, bucketed by minute in serving order. */
function bucket(ctx: PlanContext, states: readonly JobState[]): number[][] {
  const buckets: number[][] = Array.from({ length: ctx.minutes }, () => []);
  for (const j of servingOrder(ctx)) {
    const job = ctx.jobs[j]!;
    const state = states[j]!;
    if (state.chain === null) continue;
    const shift = state.offset * MINUTE_MS;
    for (const t of job.firings) {
      const at = t + shift;
      if (at < ctx.from || at >= ctx.to) continue;
      buckets[Math.floor((at - ctx.from) / MINUTE_MS)]!.push(j);
    }
  }
  return buckets;
}

/** The most calls in any 60 consecutive minutes (all of them when the window is shorter), and where. */
export function slidingHour(perMinute: ArrayLike<number>): { max: number; at: number; sums: number[] } {
  const n = perMinute.length;
  const span = Math.min(HOUR_MINUTES, n);
  const sums: number[] = [];
  let sum = 0;
  for (let i = 0; i < span; i++) sum += perMinute[i]!;
  sums.push(sum);
  for (let i = span; i < n; i++) {
    sum += perMinute[i]! - perMinute[i - span]!;
    sums.push(sum);
  }
  let max = 0;
  let at = 0;
  sums.forEach((s, i) => {
    if (s > max) {
      max = s;
      at = i;
    }
  });
  return { max, at, sums };
}

/**
 * The demand of the schedule `states` (one per job of `ctx`) against every limit.
 *
 * @example
 * ```ts
 * const d = evaluateDemand(ctx, ctx.jobs.map((j) => ({ offset: 0, chain: j.chain })));
 * d.fits; // false on seed 000's morning
 * ```
 */
export function evaluateDemand(ctx: PlanContext, states: readonly JobState[]): Demand {
  const E = ctx.endpoints.length;
  const M = ctx.minutes;
  const calls = Array.from({ length: E }, () => new Float64Array(M));
  const tokens = Array.from({ length: E }, () => new Float64Array(M));
  const callsByMinute = new Float64Array(M);
  const byChain = new Map<string, Float64Array>();
  for (const name of ctx.chains.keys()) byChain.set(name, new Float64Array(M));
  let spilled = 0;
  let total = 0;
  let score = 0;
  const buckets = bucket(ctx, states);
  for (let m = 0; m < M; m++) {
    for (const j of buckets[m]!) {
      const job = ctx.jobs[j]!;
      const chainName = states[j]!.chain!;
      const chain = ctx.chains.get(chainName)!;
      byChain.get(chainName)![m]! += job.calls;
      // A measured cost can be fractional (1.2 calls a turn): the last unit is a part of a call.
      for (let left = job.calls; left > EPSILON; left -= 1) {
        const w = Math.min(1, left);
        let placed = -1;
        for (const e of chain) {
          const ep = ctx.endpoints[e]!;
          if (ep.rpm !== null && calls[e]![m]! + w > ep.rpm + EPSILON) continue;
          if (ep.tpm !== null && tokens[e]![m]! + w * job.tokens > ep.tpm + EPSILON) continue;
          placed = e;
          break;
        }
        const e = placed >= 0 ? placed : chain[chain.length - 1]!;
        if (e !== chain[0]) spilled += w;
        calls[e]![m]! += w;
        tokens[e]![m]! += w * job.tokens;
        callsByMinute[m]! += w;
        total += w;
      }
    }
  }
  for (let e = 0; e < E; e++) {
    const ep = ctx.endpoints[e]!;
    for (let m = 0; m < M; m++) {
      if (ep.rpm !== null && calls[e]![m]! > ep.rpm + EPSILON) score += (calls[e]![m]! - ep.rpm) / ep.rpm;
      if (ep.tpm !== null && tokens[e]![m]! > ep.tpm + EPSILON) score += (tokens[e]![m]! - ep.tpm) / ep.tpm;
    }
  }
  if (ctx.concurrency !== null) {
    for (let m = 0; m < M; m++) {
      const occupancy = (callsByMinute[m]! * ctx.callSeconds) / 60;
      if (occupancy > ctx.concurrency + EPSILON) score += (occupancy - ctx.concurrency) / ctx.concurrency;
    }
  }
  const budgetByMinute = ctx.budgets.map((b) => {
    const per = new Float64Array(M);
    if (b.worstCase !== false)
      for (const c of b.chains) for (let m = 0; m < M; m++) per[m]! += byChain.get(c)![m]!;
    else for (const e of b.endpoints) for (let m = 0; m < M; m++) per[m]! += calls[e]![m]!;
    for (const s of slidingHour(per).sums) if (s > b.limit + EPSILON) score += (s - b.limit) / b.limit;
    return per;
  });
  return {
    callsByEndpoint: calls,
    tokensByEndpoint: tokens,
    callsByMinute,
    budgetByMinute,
    score,
    fits: score === 0,
    spilled,
    calls: total,
  };
}
