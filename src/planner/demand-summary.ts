import { formatClock, zonedParts } from '../clock/zoned-time.ts';
import { type Demand, type JobState, slidingHour } from './demand-model.ts';
import type { PlanContext } from './plan-jobs.ts';
import type { Breach, DemandSummary, HourDemand, PeakJob, PlanPeak } from './plan-types.ts';

const MINUTE_MS = 60_000;
const EPSILON = 1e-9;

const round2 = (n: number) => Math.round(n * 100) / 100;

interface Worst {
  demand: number;
  at: number;
  count: number;
}

function worstOver(values: ArrayLike<number>, limit: number, startAt: (i: number) => number): Worst | null {
  let worst: Worst | null = null;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v <= limit + EPSILON) continue;
    if (!worst) worst = { demand: v, at: startAt(i), count: 0 };
    else if (v > worst.demand) {
      worst.demand = v;
      worst.at = startAt(i);
    }
    worst.count++;
  }
  return worst;
}

function breaches(ctx: PlanContext, d: Demand, occupancy: readonly number[]): Breach[] {
  const minuteAt = (i: number) => ctx.from + i * MINUTE_MS;
  const out: Breach[] = [];
  const push = (kind: Breach['kind'], target: string, limit: number, w: Worst | null) => {
    if (w)
      out.push({
        kind,
        target,
        limit,
        demand: round2(w.demand),
        over: round2(w.demand - limit),
        at: w.at,
        count: w.count,
      });
  };
  ctx.endpoints.forEach((ep, e) => {
    if (ep.rpm !== null) push('rpm', ep.id, ep.rpm, worstOver(d.callsByEndpoint[e]!, ep.rpm, minuteAt));
    if (ep.tpm !== null) push('tpm', ep.id, ep.tpm, worstOver(d.tokensByEndpoint[e]!, ep.tpm, minuteAt));
  });
  if (ctx.concurrency !== null)
    push('concurrency', 'concurrency', ctx.concurrency, worstOver(occupancy, ctx.concurrency, minuteAt));
  ctx.budgets.forEach((b, i) => {
    push('budget', b.name, b.limit, worstOver(slidingHour(d.budgetByMinute[i]!).sums, b.limit, minuteAt));
  });
  return out;
}

/** Start of the clock hour (in the plan's zone) that `t` falls in. */
function hourStart(t: number, timezone: string): number {
  const p = zonedParts(t, timezone);
  return t - p.minute * MINUTE_MS - p.second * 1_000 - (t % 1_000);
}

function hours(ctx: PlanContext, d: Demand): HourDemand[] {
  const byStart = new Map<
    number,
    HourDemand & { byEndpoint: Record<string, number>; byBudget: Record<string, number> }
  >();
  const meanTokens = (e: number) => {
    const c = d.callsByEndpoint[e]!.reduce((a, b) => a + b, 0);
    return c > 0 ? d.tokensByEndpoint[e]!.reduce((a, b) => a + b, 0) / c : 1;
  };
  for (let m = 0; m < ctx.minutes; m++) {
    const t = ctx.from + m * MINUTE_MS;
    const start = hourStart(t, ctx.timezone);
    let h = byStart.get(start);
    if (!h) {
      h = {
        from: start,
        label: formatClock(start, ctx.timezone),
        calls: 0,
        byEndpoint: {},
        byBudget: {},
        excess: 0,
      };
      byStart.set(start, h);
    }
    const row = h as { calls: number; excess: number } & typeof h;
    row.calls += d.callsByMinute[m]!;
    ctx.endpoints.forEach((ep, e) => {
      const c = d.callsByEndpoint[e]![m]!;
      if (c > 0) row.byEndpoint[ep.id] = (row.byEndpoint[ep.id] ?? 0) + c;
      if (ep.rpm !== null && c > ep.rpm) row.excess += c - ep.rpm;
      const tk = d.tokensByEndpoint[e]![m]!;
      if (ep.tpm !== null && tk > ep.tpm) row.excess += (tk - ep.tpm) / meanTokens(e);
    });
    if (ctx.concurrency !== null) {
      const occ = (d.callsByMinute[m]! * ctx.callSeconds) / 60;
      if (occ > ctx.concurrency) row.excess += ((occ - ctx.concurrency) * 60) / ctx.callSeconds;
    }
    ctx.budgets.forEach((b, i) => {
      const c = d.budgetByMinute[i]![m]!;
      if (c > 0) row.byBudget[b.name] = (row.byBudget[b.name] ?? 0) + c;
    });
  }
  const out = [...byStart.values()];
  for (const h of out) {
    ctx.budgets.forEach((b) => {
      const c = h.byBudget[b.name] ?? 0;
      if (c > b.limit) (h as { excess: number }).excess += c - b.limit;
    });
    (h as { excess: number }).excess = round2(h.excess);
    (h as { calls: number }).calls = round2(h.calls);
    for (const k of Object.keys(h.byEndpoint)) h.byEndpoint[k] = round2(h.byEndpoint[k]!);
    for (const k of Object.keys(h.byBudget)) h.byBudget[k] = round2(h.byBudget[k]!);
  }
  return out;
}

function peakOf(ctx: PlanContext, states: readonly JobState[], hrs: readonly HourDemand[]): PlanPeak | null {
  let best: HourDemand | undefined;
  for (const h of hrs) {
    if (!best || h.excess > best.excess || (h.excess === best.excess && h.calls > best.calls)) best = h;
  }
  if (!best || best.calls === 0) return null;
  const to = best.from + 60 * MINUTE_MS;
  const jobs: PeakJob[] = [];
  ctx.jobs.forEach((job, j) => {
    const s = states[j]!;
    if (s.chain === null) return;
    const n = job.firings.filter((t) => {
      const at = t + s.offset * MINUTE_MS;
      return at >= Math.max(best.from, ctx.from) && at < Math.min(to, ctx.to);
    }).length;
    if (n > 0) jobs.push({ name: job.name, calls: round2(n * job.calls), chain: s.chain });
  });
  jobs.sort((a, b) => b.calls - a.calls);
  return {
    from: best.from,
    to,
    label: `${best.label}–${formatClock(to, ctx.timezone)}`,
    calls: best.calls,
    jobs,
    budgets: ctx.budgets
      .map((b) => ({ name: b.name, calls: best.byBudget[b.name] ?? 0, limit: b.limit }))
      .filter((b) => b.calls > b.limit),
  };
}

/**
 * The plain-data summary of one schedule's demand: per minute and per clock hour, every limit broken
 * (worst point and how often), and the peak hour with the jobs that make it.
 *
 * @example
 * ```ts
 * const summary = summarizeDemand(ctx, states, evaluateDemand(ctx, states));
 * summary.peak?.label; // '07:00–08:00'
 * ```
 */
export function summarizeDemand(ctx: PlanContext, states: readonly JobState[], d: Demand): DemandSummary {
  const occupancy = Array.from(d.callsByMinute, (c) => round2((c * ctx.callSeconds) / 60));
  const hrs = hours(ctx, d);
  return {
    fits: d.fits,
    minutes: Array.from({ length: ctx.minutes }, (_, m) => ctx.from + m * MINUTE_MS),
    endpoints: ctx.endpoints.map((ep, e) => ({
      id: ep.id,
      model: ep.model,
      rpm: ep.rpm,
      tpm: ep.tpm,
      calls: Array.from(d.callsByEndpoint[e]!, round2),
      tokens: Array.from(d.tokensByEndpoint[e]!, round2),
    })),
    concurrency: { limit: ctx.concurrency, occupancy },
    budgets: ctx.budgets.map((b, i) => {
      const s = slidingHour(d.budgetByMinute[i]!);
      return {
        name: b.name,
        match: b.match,
        limit: b.limit,
        perMinute: Array.from(d.budgetByMinute[i]!, round2),
        peakHour: round2(s.max),
        peakHourFrom: ctx.from + s.at * MINUTE_MS,
      };
    }),
    hours: hrs,
    breaches: breaches(ctx, d, occupancy),
    peak: peakOf(ctx, states, hrs),
    calls: round2(d.calls),
    spilled: round2(d.spilled),
  };
}
