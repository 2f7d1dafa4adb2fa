import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runPlanCommand } from '../../src/cli/commands/plan-command.ts';
import { planSchedule } from '../../src/planner/plan-schedule.ts';
import { estimatesFromRun } from '../../src/planner/run-estimates.ts';
import { scenarioPlanInput } from '../../src/planner/scenario-plan-input.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { pacingTokens } from '../../src/core/token-usage.ts';

const dir = mkdtempSync(join(tmpdir(), 'bw-plan-from-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SCENARIO = `name: small-desk
start: 2026-08-17T07:00:00+09:00
runtime:
  endpoints:
    - { id: gpt, provider: openai, model: gpt-5.5, emulator: openai, apiKey: sk-emu-1, limits: { rpm: 30 } }
  chains: { premium: [gpt] }
  tiers: [analysis, ops]
agents:
  - { name: analyst, role: You are the analyst., tier: analysis, chain: premium }
schedule:
  from: 2026-08-17T07:00:00+09:00
  to: 2026-08-17T07:30:00+09:00
  timezone: Asia/Seoul
  jobs:
    - { name: brief, cron: "*/5 7 * * *", agent: analyst, prompt: "Brief the desk on the overnight moves." }
    - { name: flash, cron: "*/10 7 * * *", agent: analyst, flex: 2m }
emulator:
  seed: 5
  latency: { minMs: 1000, maxMs: 3000 }
  answerTokens: 40
`;

describe('plan --from-run: estimates from a stored run', () => {
  it('takes each agent’s calls per turn and tokens per call from the run, not the declared sizes', async () => {
    const file = join(dir, 'scenario.yaml');
    writeFileSync(file, SCENARIO);
    const dataDir = join(dir, 'store');
    const database = await openDatabase({ dataDir });
    let turnsTokens: number[];
    try {
      const result = await runScenario({
        scenario: loadScenario(file),
        database,
        runId: 'desk-1',
        virtualTime: true,
      });
      expect(result.run.status).toBe('completed');
      const turns = await createRunStore(database).listTurns('desk-1');
      turnsTokens = turns.filter((t) => t.usage).map((t) => pacingTokens(t.usage!));
      const est = await estimatesFromRun(createRunStore(database), 'desk-1');
      expect(est.agents.analyst?.turns).toBe(turns.length);
      expect(est.agents.analyst?.callsPerTurn).toBe(1);
      expect(est.agents.analyst?.tokensPerCall).toBe(
        Math.round(turnsTokens.reduce((a, b) => a + b, 0) / turnsTokens.length),
      );
      expect(est.callSeconds).toBeGreaterThanOrEqual(1);
      expect(est.callSeconds).toBeLessThanOrEqual(3);
    } finally {
      await database.close();
    }

    const declared = planSchedule(loadScenario(file), { analyseOnly: true });
    const lines: string[] = [];
    const measured = await runPlanCommand({
      scenario: file,
      fromRun: 'desk-1',
      dataDir,
      print: (l) => lines.push(l),
    });
    const mean = Math.round(turnsTokens.reduce((a, b) => a + b, 0) / turnsTokens.length);
    expect(measured.jobs.map((j) => j.tokensPerCall)).toEqual([mean, mean]);
    // The declared size reserves the output cap (512): the run's answers were far smaller.
    expect(declared.jobs[0]!.tokensPerCall).toBeGreaterThan(mean);
    expect(lines[0]).toMatch(/^estimates from run desk-1: analyst 1 calls × \d+ tokens$/);
    expect(
      scenarioPlanInput(loadScenario(file), { estimates: { runId: 'x', agents: {}, callSeconds: null } })
        .jobs[0]!.tokensPerCall,
    ).toBe(declared.jobs[0]!.tokensPerCall);
  }, 120_000);

  it('an unknown run is one line saying where it looked and what lists runs', async () => {
    const dataDir = join(dir, 'store');
    await expect(
      runPlanCommand({ scenario: join(dir, 'scenario.yaml'), fromRun: 'nope', dataDir, print: () => {} }),
    ).rejects.toThrow(/^--from-run nope: no such run in .*; `breakwater runs` lists them$/);
  }, 60_000);
});
