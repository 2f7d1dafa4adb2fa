import { type Interval, maxInSlidingWindow, maxOverlap, maxPerClockSecond } from './call-intervals.ts';
import type { CallSummary, ModelRate } from './report-types.ts';
import type { CallSample } from './report-samples.ts';

export const HOUR_MS = 3_600_000;

/**
 * `calls` are those that started inside the window; in-flight counting also sees `all` the calls that
 * started before it and were still running in it.
 */
export function summarizeCalls(
  calls: readonly CallSample[],
  all: readonly CallSample[],
  peak: { from: number; to: number },
): CallSummary {
  const byFaultKind: Record<string, number> = {};
  const byEndpoint: Record<string, number> = {};
  const probesByEndpoint: Record<string, number> = {};
  let ok = 0;
  let rateLimited = 0;
  let creditExhausted = 0;
  let probes = 0;
  for (const c of calls) {
    byEndpoint[c.endpoint] = (byEndpoint[c.endpoint] ?? 0) + 1;
    if (c.probe) {
      probes++;
      probesByEndpoint[c.endpoint] = (probesByEndpoint[c.endpoint] ?? 0) + 1;
    }
    if (c.ok) ok++;
    else byFaultKind[c.faultKind ?? 'unknown'] = (byFaultKind[c.faultKind ?? 'unknown'] ?? 0) + 1;
    if (isRateLimit(c)) rateLimited++;
    if (c.faultKind === 'credit_exhausted') creditExhausted++;
  }
  return {
    upstream: calls.length,
    probes,
    ok,
    faults: calls.length - ok,
    rateLimited,
    creditExhausted,
    byFaultKind,
    byEndpoint,
    probesByEndpoint,
    maxInFlight: inFlight(all, peak).max,
    maxStartedInOneSecond: maxPerClockSecond(calls.map((c) => c.start)),
  };
}

/**
 * A 429 that is a rate limit: classified `rate_limited`, or a bare 429 nobody classified. A credit or
 * quota 429 (`credit_exhausted`, OpenAI `insufficient_quota`, a Gemini per-day quota) is not one: it
 * does not pass by waiting, and counting it here would blame the pacing for an empty account.
 */
function isRateLimit(c: CallSample): boolean {
  return c.faultKind === 'rate_limited' || (c.faultKind === undefined && !c.ok && c.status === 429);
}

/** Calls in flight at once, with every interval clipped to the window. */
export function inFlight(calls: readonly Interval[], peak: { from: number; to: number }) {
  return maxOverlap(
    calls
      .filter((c) => c.start <= peak.to && c.end >= peak.from)
      .map((c) => ({ start: Math.max(c.start, peak.from), end: Math.min(c.end, peak.to) })),
  );
}

export function modelRates(calls: readonly CallSample[]): Record<string, ModelRate> {
  const byModel = new Map<string, CallSample[]>();
  for (const c of calls) byModel.set(c.model, [...(byModel.get(c.model) ?? []), c]);
  const out: Record<string, ModelRate> = {};
  for (const [model, list] of [...byModel].sort(([a], [b]) => a.localeCompare(b))) {
    const peakHour = maxInSlidingWindow(
      list.map((c) => c.start),
      HOUR_MS,
    );
    out[model] = {
      provider: list[0]!.provider,
      calls: list.length,
      ok: list.filter((c) => c.ok).length,
      peakHour: peakHour.count,
      peakHourFrom: peakHour.from,
    };
  }
  return out;
}
