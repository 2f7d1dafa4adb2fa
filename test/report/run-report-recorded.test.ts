import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVirtualClock, type VirtualClock } from '../../src/clock/virtual-clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { ReportCheck, RunReport } from '../../src/report/report-types.ts';
import { buildRunReport } from '../../src/report/run-report.ts';
import { maxOverlap } from '../../src/report/call-intervals.ts';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { type RecordedRun, recordRun, testEndpoint, writeRecordedRun } from './record-run.ts';

/*
 * buildRunReport on event logs recorded from real runs: a supervisor with six agents against the
 * emulator over real HTTP (a 429 storm, then a credit exhaustion). Every number the report gives is
 * checked against the emulator's own record of what it received. The runs are on a virtual clock (time
 * stands still while a request is on the wire, jumps when everything waits for it), so how many calls
 * overlap does not depend on how fast this machine starts them.
 */

const T0 = Date.parse('2026-08-17T07:00:00+09:00');

const SEED_AGENTS = [
  { name: 'codex', tier: 'ops', chain: 'light' },
  { name: 'orchestrator', tier: 'ops', chain: 'light' },
  { name: 'analyst-fundamental', tier: 'analysis', chain: 'premium' },
  { name: 'analyst-macro', tier: 'analysis', chain: 'premium' },
  { name: 'analyst-technical', tier: 'analysis', chain: 'premium' },
  { name: 'cowork', tier: 'analysis', chain: 'premium' },
] as const;

const byId = (report: RunReport, id: string): ReportCheck => {
  const found = report.checks.find((c) => c.id === id);
  if (!found) throw new Error(`no check ${id}`);
  return found;
};

/** The emulator's calls, without the breakers' health probes (they are not agent calls). */
const agentCalls = (recorded: RecordedRun) =>
  recorded.stats.calls.filter((c) => !c.idempotencyKey?.startsWith('probe:'));

describe('a 429 storm on sonnet (6 agents, tokens = 3, real HTTP)', () => {
  let emulator: Emulator;
  let clock: VirtualClock;
  let recorded: RecordedRun;
  let report: RunReport;

  beforeAll(async () => {
    clock = createVirtualClock({ origin: T0 });
    emulator = await startEmulator({
      clock,
      profile: {
        seed: 5,
        latency: { minMs: 200, maxMs: 600 },
        faults: [
          { kind: 'rate_limit', match: { flavor: 'anthropic' }, probability: 0.5, retryAfterMs: 2_000 },
        ],
      },
    });
    recorded = await recordRun({
      runId: 'storm-1',
      scenario: 'report-storm',
      emulator,
      clock,
      config: {
        endpoints: [
          testEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6'),
          testEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini'),
        ],
        chains: { premium: ['sonnet', 'mini'], light: ['mini', 'sonnet'] },
        concurrency: { limit: 3 },
        // Keep the breakers closed so no health probe shares the emulator with the agents' calls.
        breaker: { consecutiveToOpen: 1_000, failureRateThreshold: 0.99, minCallsInWindow: 1_000 },
        agentDefaults: { maxWaitMs: 3_600_000 },
      },
      agents: SEED_AGENTS,
      items: ['fx-hedge', 'earnings', 'macro-brief'],
      rounds: 2,
    });
    report = buildRunReport(recorded.run, recorded.events, { turns: recorded.roundTurns.flat() });
  });
  afterAll(async () => {
    clock?.stop();
    await emulator?.close();
  });

  it('counts every 429 the emulator sent, out of every call it received', () => {
    const calls = agentCalls(recorded);
    const sent429 = calls.filter((c) => c.status === 429).length;
    // The storm actually happened, so the equality below could have failed.
    expect(sent429).toBeGreaterThan(0);
    expect(byId(report, 'rate-limited').value).toBe(sent429);
    expect(report.calls.upstream).toBe(calls.length);
    expect(report.calls.ok).toBe(calls.filter((c) => c.status === 200).length);
    expect(report.calls.byFaultKind.rate_limited).toBe(sent429);
  });

  it('calls per model match what the emulator saw per model', () => {
    const perModel: Record<string, number> = {};
    for (const c of agentCalls(recorded)) perModel[c.model] = (perModel[c.model] ?? 0) + 1;
    expect(Object.keys(perModel).sort()).toEqual(Object.keys(report.callsPerModelPerHour));
    for (const [model, count] of Object.entries(perModel))
      expect(report.callsPerModelPerHour[model]?.calls, model).toBe(count);
    const sonnet = perModel['claude-sonnet-4-6'] ?? 0;
    // The whole run is far shorter than an hour: the busiest hour holds every sonnet call.
    expect(byId(report, 'sonnet-calls-per-hour').value).toBe(sonnet);
    expect(byId(report, 'sonnet-calls-per-hour').pass).toBe(sonnet <= 20);
  });

  it('max in flight: at least what the emulator saw at once, at most the 3 tokens, and the limit was reached', () => {
    const max = byId(report, 'max-in-flight');
    // Each call's interval on the server lies inside the client's, so the server never sees more at once.
    const calls = agentCalls(recorded);
    const serverSide = maxOverlap(calls.map((c) => ({ start: c.startedAt, end: c.endedAt }))).max;
    expect(max.value).toBeGreaterThanOrEqual(serverSide);
    if (calls.length === recorded.stats.totalCalls)
      expect(max.value).toBeGreaterThanOrEqual(recorded.stats.maxInFlight);
    expect(max.value).toBeLessThanOrEqual(3);
    expect(serverSide).toBe(3);
    expect(max.pass).toBe(true);
  });

  it('every turn answered (normal or fallback), none failed, no placeholder; waits reported', () => {
    expect(report.turns.total).toBe(36);
    expect(report.turns.answered + report.turns.fallback).toBe(36);
    expect(report.turns).toMatchObject({ failed: 0, degraded: 0, placeholders: 0 });
    expect(byId(report, 'failure-rate')).toMatchObject({ value: 0, pass: true });
    expect(byId(report, 'analysis-success-rate')).toMatchObject({ value: 1, pass: true });
    expect(byId(report, 'placeholders')).toMatchObject({ value: 0, pass: true });
    expect(report.byTier.analysis?.total).toBe(24);
    expect(report.byTier.ops?.total).toBe(12);
    const waits = recorded.turns.map((t) => t.waitMs);
    expect(byId(report, 'avg-wait').value).toBeCloseTo(waits.reduce((a, b) => a + b, 0) / waits.length, 6);
    expect(byId(report, 'p95-wait').value).toBe([...waits].sort((a, b) => a - b)[Math.ceil(0.95 * 36) - 1]);
  });

  it('times are on the run clock (simulated): the window starts at the simulated 07:00', () => {
    expect(report.window.from).toBeGreaterThanOrEqual(T0);
    expect(report.window.from).toBeLessThan(T0 + 60_000);
    expect(report.window.durationMs).toBeGreaterThan(0);
  });

  it('the same report comes back from the store (PGlite): events and answers survive the round trip', async () => {
    const database = await openDatabase({ dataDir: ':memory:' });
    try {
      const store = createRunStore(database);
      const stored = await writeRecordedRun(store, recorded);
      const fromStore = await loadRunReport(store, recorded.run.runId);
      const expected = buildRunReport(stored, recorded.events, { turns: recorded.roundTurns.flat() });
      expect(JSON.parse(JSON.stringify(fromStore))).toEqual(JSON.parse(JSON.stringify(expected)));
      expect(fromStore.turns.placeholders).toBe(0);
    } finally {
      await database.close();
    }
  });
});

describe('credit exhaustion of the primary key (real HTTP)', () => {
  let emulator: Emulator;
  let clock: VirtualClock;
  let recorded: RecordedRun;
  let report: RunReport;

  beforeAll(async () => {
    clock = createVirtualClock({ origin: T0 });
    emulator = await startEmulator({
      clock,
      profile: {
        seed: 9,
        latency: { minMs: 100, maxMs: 300 },
        keys: [
          { alias: 'primary', key: 'sk-test-primary-000000000000', credit: 500 },
          { alias: 'backup', key: 'sk-test-backup-000000000000' },
        ],
      },
    });
    recorded = await recordRun({
      runId: 'credit-1',
      scenario: 'report-credit',
      emulator,
      clock,
      config: {
        endpoints: [
          testEndpoint(emulator, 'primary', 'openai', 'gpt-4o', 'sk-test-primary-000000000000'),
          testEndpoint(emulator, 'backup', 'anthropic', 'claude-sonnet-4-6', 'sk-test-backup-000000000000'),
        ],
        chains: { premium: ['primary', 'backup'], light: ['primary', 'backup'] },
        concurrency: { limit: 3 },
      },
      agents: SEED_AGENTS.slice(2),
      items: ['a', 'b', 'c'],
      rounds: 1,
    });
    report = buildRunReport(recorded.run, recorded.events, { turns: recorded.roundTurns.flat() });
  });
  afterAll(async () => {
    clock?.stop();
    await emulator?.close();
  });

  it('counts the credit 429s as credit exhaustion, not as rate limits', () => {
    // The primary key has no quota and no fault rule: every 429 it got is its credit running out.
    const refused = agentCalls(recorded).filter((c) => c.key === 'primary' && c.status === 429).length;
    expect(refused).toBeGreaterThan(0);
    expect(report.calls.byFaultKind.credit_exhausted).toBe(refused);
    expect(report.calls.creditExhausted).toBe(refused);
    expect(byId(report, 'rate-limited').value).toBe((recorded.stats.byStatus['429'] ?? 0) - refused);
    expect(byId(report, 'rate-limited').detail).toContain(`not counted: ${refused} credit/quota exhaustion`);
    expect(report.calls.upstream).toBe(agentCalls(recorded).length);
  });

  it('the turns after the credit ran out fell back to the backup key: none failed, none a placeholder', () => {
    expect(report.turns.total).toBe(12);
    expect(report.turns.fallback).toBeGreaterThan(0);
    expect(report.turns.fallback).toBe(recorded.turns.filter((t) => t.outcome === 'fallback').length);
    expect(report.turns.answered + report.turns.fallback + report.turns.degraded).toBe(12);
    expect(report.turns).toMatchObject({ failed: 0, placeholders: 0 });
    expect(report.callsPerModelPerHour['claude-sonnet-4-6']?.ok).toBe(recorded.stats.byKey.backup);
  });
});
