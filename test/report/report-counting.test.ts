import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorStats } from '../../src/emulator/emulator-types.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { formatRunReport } from '../../src/report/format-report.ts';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import type { ReportCheck, RunReport } from '../../src/report/report-types.ts';
import { buildRunReport } from '../../src/report/run-report.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { loadScenario, parseScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import type { RunRecord } from '../../src/store/store-types.ts';
import { driveUntil, emulatorEndpoint } from '../support/runtime-harness.ts';
import { writeRecordedRun } from './record-run.ts';

/*
 * Issue 18, "Reports that count what happened", on recorded runs: the in-flight check's threshold is
 * the run's own concurrency.limit, the analysis check says which tiers it judged and how to name
 * others, and HALF-OPEN probes are upstream calls, counted and shown apart. (Credit 429s not counted
 * as rate limits: run-report-recorded.test.ts and run-report-edge.test.ts.)
 */

const T0 = Date.parse('2026-08-17T07:00:00+09:00');

const byId = (report: RunReport, id: string): ReportCheck => {
  const found = report.checks.find((c) => c.id === id);
  if (!found) throw new Error(`no check ${id}`);
  return found;
};

describe('a scenario run with concurrency.limit 4 and no tier named "analysis" (runScenario, real HTTP, virtual time)', () => {
  let database: BreakwaterDatabase;
  let runId: string;
  let stats: EmulatorStats | undefined;

  beforeAll(async () => {
    database = await openDatabase({ dataDir: ':memory:' });
    const agents = ['Kai', 'Yuna', 'Miso', 'Jun', 'Ara', 'Bo', 'Chan', 'Dae'];
    const spec = parseScenario(
      `
name: report-counting
start: 2026-08-17T07:00:00+09:00
timeScale: 50
runtime:
  endpoints:
    - { id: mini, provider: openai, model: gpt-4o-mini, emulator: openai, apiKey: sk-emu-count-0001 }
  chains: { main: [mini] }
  tiers: [incident, ops]
  concurrency: { limit: 4 }
agents:
${agents.map((a, i) => `  - { name: ${a}, chain: main, tier: ${i < 4 ? 'incident' : 'ops'}, role: "You are ${a}." }`).join('\n')}
rounds:
  count: 1
  items: [{ id: I1, title: Payment API 5xx }]
emulator:
  seed: 3
  acceptAnyKey: true
  latency: { minMs: 1000, maxMs: 2000 }
`,
      'inline',
    );
    // On a virtual clock, so the overlap of the calls does not depend on how fast this machine starts them.
    const result = await runScenario({
      scenario: spec,
      database,
      runId: `counting-${Date.now()}`,
      virtualTime: true,
    });
    expect(result.run.status).toBe('completed');
    runId = result.runId;
    stats = result.emulatorStats;
  });
  afterAll(async () => {
    await database?.close();
  });

  it("the in-flight check's threshold is the configured limit: 4 in flight passes, and says where 4 came from", async () => {
    const report = await loadRunReport(createRunStore(database), runId);
    const check = byId(report, 'max-in-flight');
    // Eight agents asked at once against four tokens: the limit was reached, never passed.
    expect(stats?.maxInFlight).toBe(4);
    expect(check).toMatchObject({ value: 4, threshold: 4, op: '<=', pass: true });
    expect(check.detail).toMatch(/^threshold from the configured concurrency\.limit; first reached$/);
    expect(report.allPassed).toBe(true);
  });

  it('the analysis check says it judged tier "analysis", that the run has none, and how to name others', async () => {
    const report = await loadRunReport(createRunStore(database), runId);
    const check = byId(report, 'analysis-success-rate');
    expect(check.name).toBe("analysis agents' success rate (tier analysis)");
    expect(check).toMatchObject({ value: null, pass: null });
    expect(check.detail).toBe(
      "no LLM turns in tier analysis (this run's tiers: incident, ops); name the analysis tiers in the " +
        "scenario's report.analysisTiers (e.g. analysisTiers: [incident]) or pass --analysis-tiers to breakwater report",
    );
    const line = formatRunReport(report).find((l) => l.startsWith("analysis agents' success rate"));
    expect(line).toContain('report.analysisTiers');
  });

  it('named tiers are judged and said: 4 of 4 LLM turns of tier incident', async () => {
    const report = await loadRunReport(createRunStore(database), runId, { analysisTiers: ['incident'] });
    const check = byId(report, 'analysis-success-rate');
    expect(check.name).toBe("analysis agents' success rate (tier incident)");
    expect(check).toMatchObject({ value: 1, threshold: 0.95, pass: true });
    expect(check.detail).toBe('4 of 4 LLM turns of tier incident answered (normal or fallback)');
  });
});

describe('thresholds: the scenario, then the options, win over the configured limit', () => {
  const stored = (report: Record<string, unknown>): RunRecord => ({
    runId: 'r',
    scenario: 's',
    config: { report },
    status: 'completed',
    currentRound: 1,
    totalRounds: 1,
    machineVersion: 'agent@1',
    createdAt: 0,
    updatedAt: 0,
    finishedAt: 0,
    failure: null,
  });
  const overlapping: RuntimeEvent[] = [0, 1, 2, 3].map((i) => ({
    type: 'call.attempt',
    at: T0 + 1_000,
    agent: `a${i}`,
    endpoint: 'mini',
    data: {
      tier: 'ops',
      outcome: 'ok',
      startedAt: T0 + i,
      latencyMs: 1_000 - i,
      provider: 'openai',
      model: 'gpt-4o-mini',
      status: 200,
    },
  }));

  it("morning-peak keeps seed 000's 3 in its report.thresholds; a stored threshold beats the limit", () => {
    expect(loadScenario('morning-peak').report?.thresholds?.maxInFlight).toBe(3);
    const report = buildRunReport(
      stored({ concurrencyLimit: 4, thresholds: { maxInFlight: 3 } }),
      overlapping,
    );
    expect(byId(report, 'max-in-flight')).toMatchObject({ value: 4, threshold: 3, pass: false });
    expect(byId(report, 'max-in-flight').detail).toMatch(/^threshold from the scenario's report\.thresholds/);
  });

  it("the stored limit alone, the options, and no limit at all (seed 000's 3)", () => {
    expect(byId(buildRunReport(stored({ concurrencyLimit: 4 }), overlapping), 'max-in-flight')).toMatchObject(
      {
        threshold: 4,
        pass: true,
      },
    );
    const byOption = buildRunReport(stored({ concurrencyLimit: 4 }), overlapping, {
      thresholds: { maxInFlight: 2 },
    });
    expect(byId(byOption, 'max-in-flight')).toMatchObject({ threshold: 2, pass: false });
    expect(byId(byOption, 'max-in-flight').detail).toMatch(/^threshold from the report options/);
    const limitOption = buildRunReport(stored({}), overlapping, { concurrencyLimit: 5 });
    expect(byId(limitOption, 'max-in-flight')).toMatchObject({ threshold: 5, pass: true });
    const unknown = buildRunReport(stored({}), overlapping);
    expect(byId(unknown, 'max-in-flight')).toMatchObject({ threshold: 3, pass: false });
    expect(byId(unknown, 'max-in-flight').detail).toMatch(/^threshold from seed 000's limit/);
  });
});

describe('HALF-OPEN probes are upstream calls (a breaker opens on a dead endpoint, then recovers)', () => {
  let emulator: Emulator;
  let probeDatabase: BreakwaterDatabase | undefined;
  let events: RuntimeEvent[];
  let report: RunReport;

  beforeAll(async () => {
    const clock = createManualClock(T0);
    emulator = await startEmulator({ profile: { seed: 9 }, clock });
    events = [];
    const dead = emulator.addFault({ kind: 'connection_reset', match: { flavor: 'vllm' } });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'local-vllm', 'vllm', 'llama-3-70b'),
          emulatorEndpoint(emulator, 'haiku', 'anthropic', 'claude-haiku-4-5'),
        ],
        chains: { light: ['local-vllm', 'haiku'] },
        breaker: { openMs: 30_000, consecutiveToOpen: 3 },
      },
      { clock, random: () => 0, onEvent: (e) => events.push(e) },
    );
    events.push({
      type: 'run.started',
      at: clock.now(),
      data: {
        runId: 'probes',
        scenario: 'probes',
        rounds: 1,
        agents: [],
        endpoints: ['local-vllm', 'haiku'],
      },
    });
    const agents = ['codex', 'orchestrator', 'ops'].map((name) =>
      supervisor.spawnAgent({ name, chain: 'light', tier: 'ops' }),
    );
    for (const agent of agents) expect((await agent.ask('job')).outcome).toBe('fallback');
    emulator.removeFault(dead);
    const vllm = () => supervisor.health().find((h) => h.id === 'local-vllm');
    await driveUntil(clock, () => vllm()?.breaker === 'closed', { stepMs: 1_000, maxSimulatedMs: 120_000 });
    await supervisor.stop();
    events.push({ type: 'run.finished', at: clock.now(), data: { runId: 'probes', status: 'completed' } });
    const run: RunRecord = {
      runId: 'probes',
      scenario: 'probes',
      config: {},
      status: 'completed',
      currentRound: 1,
      totalRounds: 1,
      machineVersion: 'agent@test',
      createdAt: T0,
      updatedAt: T0,
      finishedAt: T0,
      failure: null,
    };
    // Counted on the recorded run: its event log written to a store and the report read back from it.
    probeDatabase = await openDatabase({ dataDir: ':memory:' });
    const store = createRunStore(probeDatabase);
    await writeRecordedRun(store, { run, events, turns: [], roundTurns: [], stats: emulator.stats() });
    report = await loadRunReport(store, 'probes');
    // The same as the report of the events in memory: nothing is lost or added on the way.
    expect(report.calls).toEqual(buildRunReport(run, events).calls);
  });
  afterAll(async () => {
    await probeDatabase?.close();
    await emulator?.close();
  });

  it('calls.upstream is every request the server received, probes included, and probes are counted apart', () => {
    // The runtime logs each probe as a call.attempt with probe: true and no agent.
    const logged = events.filter((e) => e.type === 'call.attempt' && e.data.probe === true);
    expect(logged).toHaveLength(2);
    expect(logged.every((e) => e.agent === undefined && e.endpoint === 'local-vllm')).toBe(true);
    const stats = emulator.stats();
    const probeCalls = stats.calls.filter((c) => c.idempotencyKey?.startsWith('probe:'));
    expect(probeCalls).toHaveLength(2);
    expect(report.calls.upstream).toBe(stats.totalCalls);
    expect(report.calls.probes).toBe(2);
    expect(report.calls.byEndpoint).toEqual({
      'local-vllm': stats.byFlavor.vllm,
      haiku: stats.byFlavor.anthropic,
    });
    expect(report.calls.probesByEndpoint).toEqual({ 'local-vllm': 2 });
  });

  it('the printed summary shows the probes apart, overall and per endpoint', () => {
    const lines = formatRunReport(report);
    const total = emulator.stats().totalCalls;
    expect(lines.find((l) => l.startsWith('calls '))).toMatch(
      new RegExp(`^calls ${total} upstream \\(2 breaker probes\\): `),
    );
    expect(lines).toContain(
      `  by endpoint: haiku ${emulator.stats().byFlavor.anthropic}, local-vllm ${emulator.stats().byFlavor.vllm} (2 probes)`,
    );
  });
});
