import { describe, expect, it } from 'vitest';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { maxInSlidingWindow, maxOverlap, percentile } from '../../src/report/call-intervals.ts';
import { formatRunReport } from '../../src/report/format-report.ts';
import { isPlaceholderAnswer } from '../../src/report/placeholder-answer.ts';
import type { ReportCheck, RunReport } from '../../src/report/report-types.ts';
import { buildRunReport } from '../../src/report/run-report.ts';
import type { RunRecord, TurnRecord } from '../../src/store/store-types.ts';

/*
 * Hand-made event lists for the edge cases a recorded run does not reach: an empty run, one call,
 * ties at the same millisecond, duplicates from a resume, a peak window. Real runs are in
 * run-report-recorded.test.ts.
 */

const T0 = Date.parse('2026-08-17T07:00:00+09:00');

function run(overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    runId: 'r-edge',
    scenario: 'edge',
    config: {},
    status: 'completed',
    currentRound: 1,
    totalRounds: 1,
    machineVersion: 'agent@1',
    createdAt: 0,
    updatedAt: 0,
    finishedAt: 0,
    failure: null,
    ...overrides,
  };
}

function call(
  startedAt: number,
  at: number,
  extra: Partial<Extract<RuntimeEvent, { type: 'call.attempt' }>['data']> = {},
  agent = 'Kai',
): RuntimeEvent {
  return {
    type: 'call.attempt',
    at,
    agent,
    endpoint: 'sonnet',
    data: {
      tier: 'analysis',
      outcome: 'ok',
      startedAt,
      latencyMs: at - startedAt,
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      status: 200,
      ...extra,
    },
  };
}

function turn(
  turnId: string,
  startedAt: number,
  outcome: string,
  extra: { tier?: string; waitMs?: number; agent?: string } = {},
): RuntimeEvent {
  return {
    type: 'turn.completed',
    at: startedAt + 10,
    agent: extra.agent ?? 'Kai',
    data: {
      turnId,
      tier: extra.tier ?? 'analysis',
      outcome,
      degraded: outcome === 'degraded',
      waitMs: extra.waitMs ?? 0,
      attempts: 1,
      faults: [],
      startedAt,
    },
  };
}

function storedTurn(itemId: string, answer: unknown, outcome: TurnRecord['outcome']): TurnRecord {
  return {
    runId: 'r-edge',
    round: 1,
    position: 0,
    itemId,
    agent: 'Kai',
    agentSeq: 1,
    prompt: 'p',
    answer,
    outcome,
    endpointId: null,
    degraded: outcome === 'degraded',
    usage: null,
    faults: [],
    waitMs: 0,
    idempotencyKey: null,
  };
}

const byId = (report: RunReport, id: string): ReportCheck => {
  const found = report.checks.find((c) => c.id === id);
  if (!found) throw new Error(`no check ${id}`);
  return found;
};

describe('buildRunReport on hand-made edge cases', () => {
  it('an empty run: zero counts, rates with nothing to divide are n/a, the counting checks pass', () => {
    const report = buildRunReport(run({ status: 'running', currentRound: 0 }), []);
    expect(report.turns).toEqual({
      total: 0,
      answered: 0,
      fallback: 0,
      degraded: 0,
      failed: 0,
      cancelled: 0,
      noAgent: 0,
      placeholders: null,
    });
    expect(report.window).toEqual({ from: null, to: null, durationMs: 0, peak: { from: null, to: null } });
    expect(byId(report, 'max-in-flight')).toMatchObject({ value: 0, pass: true });
    expect(byId(report, 'failure-rate')).toMatchObject({ value: null, pass: null });
    expect(byId(report, 'analysis-success-rate')).toMatchObject({ value: null, pass: null });
    expect(byId(report, 'placeholders')).toMatchObject({ value: null, pass: null });
    expect(report.allPassed).toBe(true);
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
  });

  it('one call, one answered turn: 1 in flight, 1 sonnet call in the hour, 0 % failures, 100 % success', () => {
    const report = buildRunReport(run(), [
      call(T0, T0 + 800),
      turn('t1', T0 - 5, 'answered', { waitMs: 40 }),
    ]);
    expect(report.turns).toMatchObject({ total: 1, answered: 1 });
    expect(byId(report, 'max-in-flight')).toMatchObject({ value: 1, threshold: 3, op: '<=', pass: true });
    expect(byId(report, 'sonnet-calls-per-hour')).toMatchObject({ value: 1, pass: true });
    expect(byId(report, 'failure-rate')).toMatchObject({ value: 0, pass: true });
    expect(byId(report, 'analysis-success-rate')).toMatchObject({ value: 1, pass: true });
    expect(byId(report, 'avg-wait')).toMatchObject({ value: 40, op: null, pass: null });
    expect(report.callsPerModelPerHour).toEqual({
      'claude-sonnet-4-6': { provider: 'anthropic', calls: 1, ok: 1, peakHour: 1, peakHourFrom: T0 },
    });
    expect(report.byTier.analysis).toMatchObject({ total: 1, answered: 1, failureRate: 0, successRate: 1 });
  });

  it('four overlapping calls fail the in-flight check; back-to-back calls do not overlap', () => {
    const overlapping = [0, 1, 2, 3].map((i) => call(T0 + i * 10, T0 + 1_000));
    expect(byId(buildRunReport(run(), overlapping), 'max-in-flight')).toMatchObject({
      value: 4,
      pass: false,
    });
    const chained = [0, 1, 2, 3, 4, 5].map((i) => call(T0 + i * 100, T0 + (i + 1) * 100));
    expect(byId(buildRunReport(run(), chained), 'max-in-flight').value).toBe(1);
  });

  it('a call that started before the peak window but ran into it still counts as in flight there', () => {
    const events = [call(T0, T0 + 10_000), call(T0 + 6_000, T0 + 7_000), call(T0 + 6_500, T0 + 7_500)];
    const report = buildRunReport(run(), events, { peak: { from: T0 + 5_000, to: T0 + 20_000 } });
    expect(byId(report, 'max-in-flight').value).toBe(3);
    // …but per-hour counts and 429s count the calls that started inside the window only.
    expect(report.calls.upstream).toBe(2);
    expect(byId(report, 'sonnet-calls-per-hour').value).toBe(2);
  });

  it('sonnet per hour is the busiest 60-minute span, over every model with sonnet in its name', () => {
    const minutes = (m: number) => T0 + m * 60_000;
    const events: RuntimeEvent[] = [];
    for (let m = 0; m < 15; m++) events.push(call(minutes(m), minutes(m) + 500));
    for (let m = 30; m < 40; m++)
      events.push(call(minutes(m), minutes(m) + 500, { model: 'claude-3-5-sonnet-latest' }));
    for (let m = 70; m < 90; m++) events.push(call(minutes(m), minutes(m) + 500));
    events.push(call(minutes(5), minutes(5) + 500, { model: 'gpt-4o-mini', provider: 'openai' }));
    const report = buildRunReport(run(), events);
    const sonnet = byId(report, 'sonnet-calls-per-hour');
    // 70..89 (20) plus 30..39 (10) fall inside [30, 90).
    expect(sonnet).toMatchObject({ value: 30, pass: false });
    expect(report.callsPerModelPerHour['claude-sonnet-4-6']).toMatchObject({ calls: 35, peakHour: 20 });
    expect(report.callsPerModelPerHour['gpt-4o-mini']).toMatchObject({ calls: 1, peakHour: 1 });
  });

  it('counts 429 rate limits (rate_limited, or an unclassified 429), not credit 429s; skips memoized results; counts the cooling-down line', () => {
    const events: RuntimeEvent[] = [
      call(T0, T0 + 100, { outcome: 'fault', status: 429, faultKind: 'rate_limited', retryAfterMs: 1_000 }),
      call(T0 + 200, T0 + 300, { outcome: 'fault', status: 429, faultKind: 'credit_exhausted' }),
      call(T0 + 400, T0 + 500, { outcome: 'fault', status: 503, faultKind: 'overloaded' }),
      // A 429 from a policy that records no kind (the status-quo worker's log) is still a rate limit.
      call(T0 + 550, T0 + 580, { outcome: 'fault', status: 429 }),
      call(T0 + 600, T0 + 600, { memoized: true }),
      {
        type: 'policy.log',
        at: T0 + 700,
        agent: 'Kai',
        data: { message: 'all candidate models are cooling down' },
      },
      { type: 'policy.log', at: T0 + 800, agent: 'Kai', data: { message: 'something else' } },
    ];
    const report = buildRunReport(run(), events);
    expect(report.calls).toMatchObject({ upstream: 4, ok: 0, faults: 4, rateLimited: 2, creditExhausted: 1 });
    expect(report.calls.byFaultKind).toEqual({
      rate_limited: 1,
      credit_exhausted: 1,
      overloaded: 1,
      unknown: 1,
    });
    expect(byId(report, 'rate-limited')).toMatchObject({
      value: 2,
      detail: 'of 4 upstream calls; not counted: 1 credit/quota exhaustion',
      pass: null,
    });
    expect(byId(report, 'cooling-down-messages')).toMatchObject({ value: 1, threshold: 0, pass: false });
    expect(report.allPassed).toBe(false);
  });

  it('a turn reported twice (a resumed round) counts once, with its last outcome', () => {
    const events = [turn('t1', T0, 'degraded'), turn('t2', T0, 'answered'), turn('t1', T0 + 50, 'fallback')];
    const report = buildRunReport(run(), events);
    expect(report.turns).toMatchObject({ total: 2, answered: 1, fallback: 1, degraded: 0 });
  });

  it('failure and success rates: no_agent and cancelled turns are not LLM turns; tiers are reported apart', () => {
    const events: RuntimeEvent[] = [];
    for (let i = 0; i < 47; i++) events.push(turn(`a${i}`, T0 + i, 'answered', { waitMs: i * 10 }));
    events.push(turn('a-deg', T0, 'degraded'), turn('a-fail', T0, 'failed'), turn('a-fb', T0, 'fallback'));
    for (let i = 0; i < 9; i++) events.push(turn(`o${i}`, T0, 'answered', { tier: 'ops' }));
    events.push(turn('o-fail', T0, 'failed', { tier: 'ops' }));
    for (let i = 0; i < 30; i++) events.push(turn(`n${i}`, T0, 'no_agent', { tier: 'ops' }));
    events.push(turn('c1', T0, 'cancelled'));
    const report = buildRunReport(run(), events);
    expect(report.turns).toMatchObject({ total: 91, noAgent: 30, cancelled: 1, failed: 2 });
    // 2 failed of 60 LLM turns.
    expect(byId(report, 'failure-rate')).toMatchObject({ value: 2 / 60, pass: false });
    expect(byId(report, 'failure-rate:analysis')).toMatchObject({ value: 1 / 50, pass: null });
    expect(byId(report, 'failure-rate:ops')).toMatchObject({ value: 1 / 10, pass: null });
    // 48 of 50 analysis turns answered or fell back: 96 %.
    expect(byId(report, 'analysis-success-rate')).toMatchObject({ value: 0.96, pass: true });
    expect(report.byTier.ops).toMatchObject({ total: 40, noAgent: 30, failureRate: 0.1 });
    // p95 by nearest rank over the 60 LLM turns' waits (14 zeros, then 10..460): the 57th smallest.
    expect(byId(report, 'p95-wait').value).toBe(430);
  });

  it('the analysis tiers and the peak come from the options, else from run.config.report', () => {
    const events = [
      turn('early', T0 - 3_600_000, 'failed', { tier: 'research' }),
      turn('late', T0, 'answered', { tier: 'research' }),
    ];
    const config = {
      policy: 'status-quo',
      report: { peak: { from: T0 - 1, to: T0 + 1 }, analysisTiers: ['research'] },
    };
    const fromConfig = buildRunReport(run({ config }), events);
    expect(fromConfig.policy).toBe('status-quo');
    expect(byId(fromConfig, 'analysis-success-rate')).toMatchObject({ value: 1, pass: true });
    expect(byId(fromConfig, 'failure-rate').value).toBe(0);
    // The turn counts cover the whole run whatever the window.
    expect(fromConfig.turns.total).toBe(2);
    const explicit = buildRunReport(run({ config }), events, { peak: { from: T0 - 7_200_000, to: T0 + 1 } });
    expect(byId(explicit, 'failure-rate').value).toBe(0.5);
    expect(explicit.window.peak).toEqual({ from: T0 - 7_200_000, to: T0 + 1 });
  });

  it('thresholds can be replaced or switched off (null = reported only), from the options or run.config.report', () => {
    const events = [
      ...[0, 1, 2, 3].map((i) => call(T0 + i * 10, T0 + 1_000)),
      turn('t1', T0, 'failed', { tier: 'ops' }),
    ];
    const seed = buildRunReport(run(), events);
    expect(byId(seed, 'max-in-flight')).toMatchObject({ value: 4, threshold: 3, pass: false });
    const config = { report: { thresholds: { maxInFlight: 4, failureRate: null, unknownCheck: 7 } } };
    const fromConfig = buildRunReport(run({ config }), events);
    expect(byId(fromConfig, 'max-in-flight')).toMatchObject({ threshold: 4, op: '<=', pass: true });
    expect(byId(fromConfig, 'failure-rate')).toMatchObject({
      value: 1,
      threshold: null,
      op: null,
      pass: null,
    });
    expect(fromConfig.allPassed).toBe(true);
    const overridden = buildRunReport(run({ config }), events, {
      thresholds: { maxInFlight: undefined, failureRate: 1, sonnetPerHour: null },
    });
    // An undefined option keeps the config's value; the options win over the config.
    expect(byId(overridden, 'max-in-flight').threshold).toBe(4);
    expect(byId(overridden, 'failure-rate')).toMatchObject({ threshold: 1, pass: true });
    expect(byId(overridden, 'sonnet-calls-per-hour')).toMatchObject({ value: 4, pass: null });
  });

  it('placeholders: the seed text (either language) or an empty answer from a turn that did not fail', () => {
    const turns = [
      storedTurn('1', { text: 'AI credit being coordinated — waiting for backup engine' }, 'answered'),
      storedTurn('2', { text: 'AI 크레딧 조율 중 — 백업 AI 엔진 전환 대기 중' }, 'fallback'),
      storedTurn('3', { text: '' }, 'degraded'),
      storedTurn('4', null, 'failed'),
      storedTurn('5', { text: 'Raise the Anthropic tier; move ops crons to the light chain.' }, 'answered'),
      storedTurn('6', 'flushed 3 messages', 'no_agent'),
    ];
    const report = buildRunReport(run(), [], { turns });
    expect(report.turns.placeholders).toBe(3);
    expect(byId(report, 'placeholders')).toMatchObject({
      value: 3,
      pass: false,
      detail: 'of 6 stored turns',
    });
    expect(isPlaceholderAnswer({ text: 'Waiting for the backup engine…' }, 'degraded')).toBe(true);
  });

  it('the window runs from run.started to run.finished', () => {
    const events: RuntimeEvent[] = [
      {
        type: 'run.started',
        at: T0,
        data: {
          runId: 'r-edge',
          scenario: 'edge',
          rounds: 1,
          agents: [{ name: 'Kai', tier: 'analysis', chain: 'premium' }],
          endpoints: ['sonnet'],
        },
      },
      call(T0 + 10, T0 + 20),
      { type: 'run.finished', at: T0 + 90_000, data: { runId: 'r-edge', status: 'completed' } },
    ];
    const report = buildRunReport(run(), events);
    expect(report.window).toEqual({
      from: T0,
      to: T0 + 90_000,
      durationMs: 90_000,
      peak: { from: T0, to: T0 + 90_000 },
    });
    expect(report.agents).toEqual([{ name: 'Kai', tier: 'analysis', chain: 'premium' }]);
  });
});

describe('counting helpers', () => {
  it('maxOverlap counts zero-length calls at their instant and reports when the maximum began', () => {
    expect(maxOverlap([])).toEqual({ max: 0, at: null });
    expect(
      maxOverlap([
        { start: 5, end: 5 },
        { start: 5, end: 5 },
        { start: 0, end: 5 },
      ]),
    ).toEqual({ max: 2, at: 5 });
    expect(
      maxOverlap([
        { start: 0, end: 10 },
        { start: 5, end: 15 },
        { start: 10, end: 20 },
      ]),
    ).toEqual({ max: 2, at: 5 });
  });

  it('maxOverlap reads ties at one instant in log order: a refusal answered at once, then a fallback, is not two calls at once', () => {
    // agent8-storm on a virtual clock, at one instant T: Juno's call ends (logged first), Andrew's credit
    // 429 and Miso's 504 come back at once, Andrew falls back; Kai and Yuna are in flight across T.
    const T = 1_000;
    const atT = [
      { start: T - 1_275, end: T }, // Juno, logged before the refusals: over when they happened
      { start: T, end: T }, // Andrew's credit 429
      { start: T, end: T }, // Miso's 504
      { start: T - 306, end: T + 234 }, // Kai
      { start: T, end: T + 1_472 }, // Andrew's fallback, after his 429
      { start: T - 108, end: T + 1_714 }, // Yuna
    ];
    // Juno, Kai and Yuna were already 3 at T − 108; the refusals at T add nothing.
    expect(maxOverlap(atT)).toEqual({ max: 3, at: T - 108 });
    // A call that ends at T but is logged after the refusal was still in flight when it came back.
    expect(
      maxOverlap([
        { start: T, end: T },
        { start: T - 10, end: T },
        { start: T - 5, end: T + 5 },
      ]),
    ).toEqual({ max: 3, at: T });
  });

  it('maxInSlidingWindow and percentile', () => {
    expect(maxInSlidingWindow([0, 10, 3_600_000], 3_600_000)).toEqual({ count: 2, from: 0 });
    expect(maxInSlidingWindow([], 1_000)).toEqual({ count: 0, from: null });
    expect(percentile([5, 1, 3], 0.95)).toBe(5);
    expect(
      percentile(
        Array.from({ length: 20 }, (_, i) => i + 1),
        0.95,
      ),
    ).toBe(19);
    expect(percentile([], 0.5)).toBeNull();
  });
});

describe('formatRunReport', () => {
  it('prints one row per check with its value, threshold and PASS/FAIL, then turns and a verdict', () => {
    const overlapping = [0, 1, 2, 3].map((i) => call(T0 + i * 10, T0 + 1_000));
    const events = [...overlapping, turn('t1', T0, 'answered'), turn('t2', T0, 'failed', { tier: 'ops' })];
    const lines = formatRunReport(buildRunReport(run(), events, { turns: [] }), { timeZone: 'Asia/Seoul' });
    const row = (name: string) => lines.find((l) => l.startsWith(name)) ?? '';
    expect(row('max LLM calls in flight')).toMatch(/\b4\s+≤ 3\s+FAIL\b/);
    expect(row('sonnet calls per hour')).toMatch(/\b4\/h\s+≤ 20\/h\s+PASS\b/);
    expect(row('failure rate (failed')).toMatch(/50\.0 %\s+≤ 2\.0 %\s+FAIL/);
    expect(row('placeholder answers')).toMatch(/\b0\s+= 0\s+PASS\b/);
    expect(row('429 rate limits received')).toMatch(/\b0\s+—\s+info\b/);
    expect(lines.find((l) => l.startsWith('  failure rate, tier ops'))).toMatch(/100\.0 %/);
    expect(lines).toContain(
      'turns 2: 1 answered, 0 fallback, 0 degraded (labelled), 1 failed, 0 no_agent; placeholders 0',
    );
    expect(lines[1]).toMatch(/^window 2026-08-17 07:00:00 → 2026-08-17 07:00:01 Asia\/Seoul/);
    expect(lines.at(-1)).toBe(
      'result FAIL — max LLM calls in flight in any second; failure rate (failed ÷ LLM turns)',
    );
  });
});
