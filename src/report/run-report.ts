import type { AgentInfo, RuntimeEvent } from '../core/runtime-event.ts';
import type { RunRecord } from '../store/store-types.ts';
import {
  type Interval,
  maxInSlidingWindow,
  maxOverlap,
  maxPerClockSecond,
  percentile,
} from './call-intervals.ts';
import { isPlaceholderAnswer } from './placeholder-answer.ts';
import type {
  CallSummary,
  ModelRate,
  ReportCheck,
  ReportWindow,
  RunReport,
  TierStats,
  TurnCounts,
} from './report-types.ts';
import { summarizeUsage } from './usage-summary.ts';

/**
 * Seed 000's thresholds ("How success is checked").
 *
 * @example
 * ```ts
 * SEED_THRESHOLDS.maxInFlight; // 3
 * ```
 */
export const SEED_THRESHOLDS = Object.freeze({
  /** LLM calls in flight at once. */
  maxInFlight: 3,
  /** Sonnet calls in any hour of the peak. */
  sonnetPerHour: 20,
  /** "all candidate models are cooling down" lines. */
  coolingDownMessages: 0,
  /** failed ÷ LLM turns. */
  failureRate: 0.02,
  /** (answered + fallback) ÷ analysis turns. */
  analysisSuccessRate: 0.95,
  /** Placeholder answers (seed 003). */
  placeholders: 0,
});

/**
 * Thresholds to use instead of {@link SEED_THRESHOLDS}, by name; `null` turns a check into a reported
 * number without PASS/FAIL (e.g. `sonnetPerHour` for a scenario where sonnet's quota is not the question).
 *
 * @example
 * ```ts
 * const thresholds: ReportThresholds = { sonnetPerHour: null, failureRate: 0.05 };
 * ```
 */
export type ReportThresholds = { readonly [K in keyof typeof SEED_THRESHOLDS]?: number | null };

/**
 * The line seed 000's worker logged when its model chain was empty; policies write it as `policy.log`.
 *
 * @example
 * ```ts
 * emit({ type: 'policy.log', at, agent, data: { message: COOLING_DOWN_MESSAGE } });
 * ```
 */
export const COOLING_DOWN_MESSAGE = 'all candidate models are cooling down';

const HOUR_MS = 3_600_000;

/**
 * Options of {@link buildRunReport}. Each falls back to the same field under `run.config.report`
 * (so a scenario can store its own peak), then to the default.
 *
 * @example
 * ```ts
 * const options: RunReportOptions = { peak: { from: Date.parse('2026-08-17T07:00+09:00'), to: Date.parse('2026-08-17T08:30+09:00') } };
 * ```
 */
export interface RunReportOptions {
  /** Epoch-ms window (run clock) the checks look at. Default: the whole run. */
  readonly peak?: { readonly from: number; readonly to: number };
  /** Tiers whose agents count as analysis agents for the success-rate check. Default `['analysis']`. */
  readonly analysisTiers?: readonly string[];
  /**
   * The stored turns (`store.listTurns`, or the `TurnInput`s of `commitRound`): their answer texts give
   * the placeholder count, their usage the token summary. Default: none (the count is `null`, no summary).
   */
  readonly turns?: readonly {
    readonly answer?: unknown;
    readonly outcome: string;
    readonly usage?: unknown;
  }[];
  /** The policy name to print. Default: `run.config.policy`, else `breakwater`. */
  readonly policy?: string;
  /** Thresholds replacing the seed's, per check (merged over `run.config.report.thresholds`). Default {@link SEED_THRESHOLDS}. */
  readonly thresholds?: ReportThresholds;
  /**
   * The runtime's `concurrency.limit`: the in-flight check's threshold when no threshold names
   * `maxInFlight` (a run told to keep 4 calls in flight passes at 4). Default:
   * `run.config.report.concurrencyLimit` (what `runScenario` stores), else seed 000's 3.
   */
  readonly concurrencyLimit?: number;
}

interface TurnSample {
  readonly tier: string;
  readonly outcome: string;
  readonly waitMs: number;
  readonly startedAt: number;
}

interface CallSample extends Interval {
  readonly model: string;
  readonly provider: string;
  readonly endpoint: string;
  readonly ok: boolean;
  readonly status?: number;
  readonly faultKind?: string;
  /** A breaker's HALF-OPEN probe: an upstream call no agent asked for. */
  readonly probe: boolean;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const record = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' ? (v as Record<string, unknown>) : {};

const OUTCOMES = ['answered', 'fallback', 'degraded', 'failed', 'cancelled', 'no_agent'] as const;

function configDefaults(run: RunRecord): {
  policy?: string;
  timeZone?: string;
  peak?: RunReportOptions['peak'];
  tiers?: string[];
  thresholds: Record<string, number | null>;
  concurrencyLimit?: number;
} {
  const config = record(run.config);
  const report = record(config.report);
  const peak = record(report.peak);
  const from = num(peak.from);
  const to = num(peak.to);
  const tiers = Array.isArray(report.analysisTiers)
    ? report.analysisTiers.filter((t): t is string => typeof t === 'string')
    : undefined;
  const thresholds: Record<string, number | null> = {};
  for (const [name, value] of Object.entries(record(report.thresholds))) {
    if (!(name in SEED_THRESHOLDS)) continue;
    if (value === null || num(value) !== undefined) thresholds[name] = value as number | null;
  }
  const concurrencyLimit = num(report.concurrencyLimit);
  return {
    ...(concurrencyLimit !== undefined && concurrencyLimit > 0 ? { concurrencyLimit } : {}),
    ...(str(config.policy) ? { policy: str(config.policy) } : {}),
    ...(str(report.timeZone) ? { timeZone: str(report.timeZone) } : {}),
    ...(from !== undefined && to !== undefined ? { peak: { from, to } } : {}),
    ...(tiers && tiers.length > 0 ? { tiers } : {}),
    thresholds,
  };
}

function countTurns(samples: readonly TurnSample[]): Omit<TurnCounts, 'placeholders'> {
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
const isFailed = (s: TurnSample) =>
  s.outcome === 'failed' || !(OUTCOMES as readonly string[]).includes(s.outcome);
/** Turns that asked an LLM and finished (no `no_agent`, no `cancelled`). */
const isLlmTurn = (s: TurnSample) => s.outcome !== 'no_agent' && s.outcome !== 'cancelled';
const ratio = (part: number, whole: number) => (whole > 0 ? part / whole : null);
const mean = (values: readonly number[]) =>
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

function judge(value: number | null, op: ReportCheck['op'], threshold: number | null): boolean | null {
  if (value === null || op === null || threshold === null) return null;
  if (op === '<=') return value <= threshold;
  if (op === '>=') return value >= threshold;
  return value === threshold;
}

function check(c: Omit<ReportCheck, 'pass'>): ReportCheck {
  // A check whose threshold was switched off is only reported.
  const gated = c.threshold === null ? { ...c, op: null } : c;
  return { ...gated, pass: judge(gated.value, gated.op, gated.threshold) };
}

/** Reads the events into turn and call samples; later `turn.completed` events of the same turn id win. */
function collect(events: readonly RuntimeEvent[]) {
  const turns = new Map<string, TurnSample>();
  const calls: CallSample[] = [];
  const coolingDown: number[] = [];
  const agents = new Map<string, AgentInfo>();
  let started: number | undefined;
  let finished: number | undefined;
  let first: number | undefined;
  let last: number | undefined;
  events.forEach((e, index) => {
    const at = num(e.at);
    if (at === undefined) return;
    first = first === undefined ? at : Math.min(first, at);
    last = last === undefined ? at : Math.max(last, at);
    const data = record(e.data);
    switch (e.type) {
      case 'run.started':
        started ??= at;
        for (const a of Array.isArray(data.agents) ? data.agents : []) {
          const info = record(a);
          const name = str(info.name);
          if (name) agents.set(name, info as unknown as AgentInfo);
        }
        break;
      case 'run.finished':
        finished = at;
        break;
      case 'turn.completed': {
        const id = str(data.turnId) ?? `${e.agent ?? '?'}#${index}`;
        turns.set(id, {
          tier: str(data.tier) ?? 'unknown',
          outcome: str(data.outcome) ?? 'unknown',
          waitMs: num(data.waitMs) ?? 0,
          startedAt: num(data.startedAt) ?? at,
        });
        break;
      }
      case 'call.attempt': {
        if (data.memoized === true) break;
        const latency = num(data.latencyMs);
        const start = num(data.startedAt) ?? (latency !== undefined ? at - latency : at);
        // The log stores `at` rounded to the ms while `startedAt` and `latencyMs` keep their fractions:
        // the call's own numbers give its end exactly (rounding must not shorten a call to nothing).
        const end = num(data.startedAt) !== undefined && latency !== undefined ? start + latency : at;
        const status = num(data.status);
        const faultKind = str(data.faultKind);
        calls.push({
          start,
          end,
          model: str(data.model) ?? 'unknown',
          provider: str(data.provider) ?? 'unknown',
          endpoint: e.endpoint ?? 'unknown',
          ok: data.outcome === 'ok',
          ...(status !== undefined ? { status } : {}),
          ...(faultKind !== undefined ? { faultKind } : {}),
          probe: data.probe === true,
        });
        break;
      }
      case 'policy.log':
        if (str(data.message)?.toLowerCase().includes(COOLING_DOWN_MESSAGE)) coolingDown.push(at);
        break;
    }
  });
  const window: Omit<ReportWindow, 'peak'> = {
    from: started ?? first ?? null,
    to: finished ?? last ?? null,
    durationMs: (finished ?? last ?? 0) - (started ?? first ?? 0),
  };
  return { turns: [...turns.values()], calls, coolingDown, agents: [...agents.values()], window };
}

/**
 * `calls` are those that started inside the window; in-flight counting also sees `all` the calls that
 * started before it and were still running in it.
 */
function summarizeCalls(
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
function inFlight(calls: readonly Interval[], peak: { from: number; to: number }) {
  return maxOverlap(
    calls
      .filter((c) => c.start <= peak.to && c.end >= peak.from)
      .map((c) => ({ start: Math.max(c.start, peak.from), end: Math.min(c.end, peak.to) })),
  );
}

/** Why the analysis check has nothing to judge, and how to point it at the right tiers. */
function noAnalysisTurns(judged: readonly string[], present: readonly string[]): string {
  const tiers = present.length > 0 ? present.join(', ') : 'none';
  return (
    `no LLM turns in tier${judged.length > 1 ? 's' : ''} ${judged.join(', ')} (this run's tiers: ${tiers}); ` +
    "name the analysis tiers in the scenario's report.analysisTiers (e.g. analysisTiers: [" +
    `${present[0] ?? 'analysis'}]) or pass --analysis-tiers to breakwater report`
  );
}

function modelRates(calls: readonly CallSample[]): Record<string, ModelRate> {
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

/**
 * Builds the report of a run from its event log: seed 000's checks (at most 3 LLM calls in flight,
 * sonnet ≤ 20 calls per hour at the peak, no "all candidate models are cooling down", failure rate
 * ≤ 2 % overall and per tier, analysis agents' success ≥ 95 %, 429s received, average and p95 task
 * wait) and seed 003's (no placeholder answers), each with its threshold and pass/fail; plus turn
 * counts, per-tier statistics and per-model call rates. Pure: no I/O, no clock.
 *
 * Calls are `call.attempt` events (memoized results are not calls); a call is in flight from its
 * `startedAt` to its `at`. Turns are `turn.completed` events, one per turn id (the last one wins, so a
 * resumed run does not count a turn twice). The checks look at calls and turns that started inside
 * the peak window; the turn counts and `byTier` cover the whole run. Placeholders need the stored
 * answers (`options.turns`); without them their count is `null`.
 *
 * @param run the stored run (`store.getRun`)
 * @param events its events in log order (`eventsFromRecords(await store.readEvents(runId))`, or the
 *   runtime's `onEvent` feed)
 * @example
 * ```ts
 * const report = buildRunReport(run, eventsFromRecords(await store.readEvents(run.runId)), {
 *   turns: await store.listTurns(run.runId),
 * });
 * for (const c of report.checks) console.log(c.name, c.value, c.pass);
 * ```
 */
export function buildRunReport(
  run: RunRecord,
  events: readonly RuntimeEvent[],
  options: RunReportOptions = {},
): RunReport {
  const defaults = configDefaults(run);
  const given = Object.entries(options.thresholds ?? {}).filter(([, v]) => v !== undefined);
  const concurrencyLimit = options.concurrencyLimit ?? defaults.concurrencyLimit;
  const limits = {
    ...SEED_THRESHOLDS,
    // The run did what it was told when it kept its own limit: that is the default bar, not the seed's 3.
    ...(concurrencyLimit !== undefined ? { maxInFlight: concurrencyLimit } : {}),
    ...defaults.thresholds,
    ...Object.fromEntries(given),
  } as {
    readonly [K in keyof typeof SEED_THRESHOLDS]: number | null;
  };
  const inFlightSource = given.some(([k]) => k === 'maxInFlight')
    ? 'the report options'
    : 'maxInFlight' in defaults.thresholds
      ? "the scenario's report.thresholds"
      : concurrencyLimit !== undefined
        ? 'the configured concurrency.limit'
        : "seed 000's limit (concurrency.limit unknown)";
  const analysisTiers = options.analysisTiers ?? defaults.tiers ?? ['analysis'];
  const collected = collect(events);
  const peakOption = options.peak ?? defaults.peak;
  const peak = {
    from: peakOption?.from ?? Number.NEGATIVE_INFINITY,
    to: peakOption?.to ?? Number.POSITIVE_INFINITY,
  };
  const inPeak = (t: number) => t >= peak.from && t <= peak.to;

  const calls = collected.calls.filter((c) => inPeak(c.start));
  const callSummary = summarizeCalls(calls, collected.calls, peak);
  const flight = inFlight(collected.calls, peak);
  const sonnet = maxInSlidingWindow(
    calls.filter((c) => /sonnet/i.test(c.model)).map((c) => c.start),
    HOUR_MS,
  );
  const sonnetTotal = calls.filter((c) => /sonnet/i.test(c.model)).length;
  const coolingDown = collected.coolingDown.filter(inPeak).length;

  const peakTurns = collected.turns.filter((t) => inPeak(t.startedAt));
  const llmTurns = peakTurns.filter(isLlmTurn);
  const failed = llmTurns.filter(isFailed).length;
  const analysis = llmTurns.filter((t) => analysisTiers.includes(t.tier));
  const analysisOk = analysis.filter((t) => t.outcome === 'answered' || t.outcome === 'fallback').length;
  const waits = llmTurns.map((t) => t.waitMs);
  const placeholders = options.turns
    ? options.turns.filter((t) => isPlaceholderAnswer(t.answer, t.outcome)).length
    : null;

  const tiers = [...new Set(llmTurns.map((t) => t.tier))];
  const checks: ReportCheck[] = [
    check({
      id: 'max-in-flight',
      name: 'max LLM calls in flight in any second',
      value: flight.max,
      unit: 'calls',
      op: '<=',
      threshold: limits.maxInFlight,
      detail:
        `threshold from ${inFlightSource}` +
        (callSummary.probes > 0 ? `; ${callSummary.probes} of the calls were breaker probes` : '') +
        (flight.at !== null ? '; first reached' : ''),
      ...(flight.at !== null ? { at: flight.at } : {}),
    }),
    check({
      id: 'sonnet-calls-per-hour',
      name: 'sonnet calls per hour at the peak',
      value: sonnet.count,
      unit: 'calls/h',
      op: '<=',
      threshold: limits.sonnetPerHour,
      ...(sonnet.from !== null
        ? { detail: `${sonnetTotal} sonnet calls in the window; busiest hour starts`, at: sonnet.from }
        : { detail: 'no sonnet calls in the window' }),
    }),
    check({
      id: 'cooling-down-messages',
      name: `"${COOLING_DOWN_MESSAGE}"`,
      value: coolingDown,
      unit: 'count',
      op: '=',
      threshold: limits.coolingDownMessages,
    }),
    check({
      id: 'failure-rate',
      name: 'failure rate (failed ÷ LLM turns)',
      value: ratio(failed, llmTurns.length),
      unit: 'ratio',
      op: '<=',
      threshold: limits.failureRate,
      detail: `${failed} of ${llmTurns.length} LLM turns failed`,
    }),
    ...tiers.map((tier) => {
      const of = llmTurns.filter((t) => t.tier === tier);
      const f = of.filter(isFailed).length;
      return check({
        id: `failure-rate:${tier}`,
        name: `failure rate, tier ${tier}`,
        value: ratio(f, of.length),
        unit: 'ratio',
        op: null,
        threshold: null,
        detail: `${f} of ${of.length}`,
      });
    }),
    check({
      id: 'analysis-success-rate',
      name: `analysis agents' success rate (tier${analysisTiers.length > 1 ? 's' : ''} ${analysisTiers.join(', ')})`,
      value: ratio(analysisOk, analysis.length),
      unit: 'ratio',
      op: '>=',
      threshold: limits.analysisSuccessRate,
      detail:
        analysis.length > 0
          ? `${analysisOk} of ${analysis.length} LLM turns of tier${analysisTiers.length > 1 ? 's' : ''} ${analysisTiers.join(', ')} answered (normal or fallback)`
          : noAnalysisTurns(analysisTiers, tiers),
    }),
    check({
      id: 'rate-limited',
      name: '429 rate limits received',
      value: callSummary.rateLimited,
      unit: 'count',
      op: null,
      threshold: null,
      detail:
        `of ${callSummary.upstream} upstream calls` +
        (callSummary.creditExhausted > 0
          ? `; not counted: ${callSummary.creditExhausted} credit/quota exhaustion${callSummary.creditExhausted > 1 ? 's' : ''}`
          : ''),
    }),
    check({
      id: 'avg-wait',
      name: 'average task wait',
      value: mean(waits),
      unit: 'ms',
      op: null,
      threshold: null,
    }),
    check({
      id: 'p95-wait',
      name: 'p95 task wait',
      value: percentile(waits, 0.95),
      unit: 'ms',
      op: null,
      threshold: null,
    }),
    check({
      id: 'placeholders',
      name: 'placeholder answers',
      value: placeholders,
      unit: 'count',
      op: '=',
      threshold: limits.placeholders,
      detail: options.turns ? `of ${options.turns.length} stored turns` : 'answers not read',
    }),
  ];
  const judged = checks.filter((c) => c.pass !== null);
  const allPassed = judged.length === 0 ? null : judged.every((c) => c.pass === true);

  const byTier: Record<string, TierStats> = {};
  for (const tier of [...new Set(collected.turns.map((t) => t.tier))])
    byTier[tier] = tierStats(collected.turns.filter((t) => t.tier === tier));

  return Object.freeze({
    runId: run.runId,
    scenario: run.scenario,
    status: run.status,
    policy: options.policy ?? defaults.policy ?? 'breakwater',
    ...(defaults.timeZone ? { timeZone: defaults.timeZone } : {}),
    rounds: { committed: run.currentRound, total: run.totalRounds },
    window: {
      ...collected.window,
      peak: {
        from: peakOption?.from ?? collected.window.from,
        to: peakOption?.to ?? collected.window.to,
      },
    },
    turns: { ...countTurns(collected.turns), placeholders },
    checks,
    allPassed,
    byTier,
    callsPerModelPerHour: modelRates(calls),
    calls: callSummary,
    agents: collected.agents,
    ...(options.turns ? { usage: summarizeUsage(options.turns) } : {}),
  });
}
