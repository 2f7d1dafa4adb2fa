import { percentile } from './call-intervals.ts';
import type { TierStats, TurnCounts } from './report-types.ts';
import type { TurnSample } from './report-samples.ts';

const OUTCOMES = ['answered', 'fallback', 'degraded', 'failed', 'cancelled', 'no_agent'] as const;

export function countTurns(samples: readonly TurnSample[]): Omit<TurnCounts, 'placeholders'> {
  const c = { answered: 0, fallback: 0, degraded: 0, failed: 0, cancelled: 0, no_agent: 0 };
  for (const s of samples) {
    // An outcome the report does not know produced no recognisable answer: count it as failed.
    const key = (OUTCOMES as readonly string[]).includes(s.outcome)
      ? (s.outcome as keyof typeof c)
      : 'failed';
    c[key]++;
  }
  return {
    total: samples.length,
    answered: c.answered,
    fallback: c.fallback,
    degraded: c.degraded,
    failed: c.failed,
    cancelled: c.cancelled,
    noAgent: c.no_agent,
  };
}

/** A turn that ended without a usable answer (an outcome the report does not know counts as failed). */
export const isFailed = (s: TurnSample) =>
  s.outcome === 'failed' || !(OUTCOMES as readonly string[]).includes(s.outcome);
/** Turns that asked an LLM and finished (no `no_agent`, no `cancelled`). */
export const isLlmTurn = (s: TurnSample) => s.outcome !== 'no_agent' && s.outcome !== 'cancelled';
export const ratio = (part: number, whole: number) => (whole > 0 ? part / whole : null);
export const mean = (values: readonly number[]) =>
  values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : null;

function tierStats(samples: readonly TurnSample[]): TierStats {
  const counts = countTurns(samples);
  const llm = samples.filter(isLlmTurn);
  const waits = llm.map((s) => s.waitMs);
  return {
    ...counts,
    failureRate: ratio(counts.failed, llm.length),
    successRate: ratio(counts.answered + counts.fallback, llm.length),
    avgWaitMs: mean(waits),
    p95WaitMs: percentile(waits, 0.95),
  };
}

/** Each tier's counts, rates and waits over the whole run, tiers in the order their first turn came. */
export function statsByTier(turns: readonly TurnSample[]): Record<string, TierStats> {
  const byTier: Record<string, TierStats> = {};
  for (const tier of [...new Set(turns.map((t) => t.tier))])
    byTier[tier] = tierStats(turns.filter((t) => t.tier === tier));
  return byTier;
}
