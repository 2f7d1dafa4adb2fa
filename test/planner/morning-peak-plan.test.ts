import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planSchedule } from '../../src/planner/plan-schedule.ts';
import type { PlanResult } from '../../src/planner/plan-types.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { type CliRun, finished, spawnCli } from '../cli/run-cli.ts';

/** Runs the CLI; a child still running after `giveUpMs` is killed (only the one this test started). */
async function runCli(args: readonly string[], giveUpMs = 45_000): Promise<CliRun> {
  const child = spawnCli(args);
  const guard = setTimeout(() => child.kill('SIGKILL'), giveUpMs);
  try {
    return await finished(child);
  } finally {
    clearTimeout(guard);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bw-plan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('plan on seed 000 before its fixes (scenarios/morning-peak-before-fixes)', () => {
  const spec = loadScenario('morning-peak-before-fixes');
  const plan = planSchedule(spec);

  it('names the 07:00–08:00 KST peak, the jobs in it and the sonnet budget it breaks', () => {
    expect(plan.before.fits).toBe(false);
    const peak = plan.before.peak!;
    expect(peak.label).toBe('07:00–08:00');
    expect(new Date(peak.from).toISOString()).toBe('2026-08-16T22:00:00.000Z');
    const names = peak.jobs.map((j) => j.name);
    // Seed 000: 15+ jobs in the hour, the flusher every 2 minutes, the broker retry every 5.
    expect(names.length).toBeGreaterThanOrEqual(15);
    expect(peak.jobs[0]).toEqual({ name: 'telegram-outbox-flusher', calls: 30, chain: 'premium' });
    expect(names).toEqual(
      expect.arrayContaining([
        'research-broker-retry-0600',
        'fi-earnings-refresh',
        'research-brief-daily-0730',
        'overseas-bond-morning-briefing',
      ]),
    );
    expect(peak.budgets).toEqual([{ name: 'sonnet calls per hour', calls: peak.calls, limit: 20 }]);
    expect(peak.calls).toBeGreaterThan(40);
    expect(plan.before.breaches.map((b) => b.target)).toContain('sonnet calls per hour');
  });

  it('proposes the seed’s own fixes, moves no pinned job, and the schedule then fits', () => {
    expect(plan.proposal.fits).toBe(true);
    expect(plan.after.breaches).toEqual([]);
    expect(plan.proposal.moves).toContainEqual({
      job: 'telegram-outbox-flusher',
      kind: 'noAgent',
      from: 'false',
      to: 'true',
    });
    expect(plan.proposal.moves.filter((m) => m.kind === 'chain').length).toBeGreaterThan(0);
    const pinned = new Set(
      spec.schedule!.jobs.filter((j) => j.flex === undefined || j.flex === 0).map((j) => j.name),
    );
    for (const m of plan.proposal.moves) if (m.kind === 'shift') expect(pinned.has(m.job)).toBe(false);
    expect(plan.after.budgets[0]!.peakHour).toBeLessThanOrEqual(20);
    expect(plan.after.spilled).toBeLessThan(plan.before.spilled);
  });

  it('`breakwater plan` prints the peak, the broken budget and the diff; --json and --write agree', async () => {
    const written = join(dir, 'planned.yaml');
    const text = await runCli(['plan', 'morning-peak-before-fixes', '--write', written]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('before: DOES NOT FIT');
    expect(text.stdout).toMatch(/peak 07:00–08:00: \d+ LLM calls from \d+ jobs/);
    expect(text.stdout).toMatch(/breaks sonnet calls per hour: \d+ > 20/);
    expect(text.stdout).toContain('jobs: telegram-outbox-flusher 30, research-broker-retry-0600 12');
    expect(text.stdout).toContain('~ telegram-outbox-flusher  noAgent: true');
    expect(text.stdout).toContain('after: FITS every limit');
    const json = await runCli(['plan', 'morning-peak-before-fixes', '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as PlanResult;
    expect(parsed.proposal.moves).toEqual(plan.proposal.moves);
    // The written scenario loads, runs the flusher as plain code, and plans as fitting with nothing to move.
    const planned = loadScenario(written);
    expect(planned.name).toBe('morning-peak-before-fixes-planned');
    const replanned = planSchedule(planned);
    expect(replanned.before.fits).toBe(true);
    expect(replanned.proposal.moves).toEqual([]);
    expect(planned.agents.find((a) => a.name === 'plain:telegram-outbox-flusher')?.noAgent).toBe(true);
  }, 60_000);

  it('the shipped morning-peak (fixes applied) fits as it is', () => {
    const fixed = planSchedule(loadScenario('morning-peak'));
    expect(fixed.before.fits).toBe(true);
    expect(fixed.proposal.moves).toEqual([]);
  });

  it('a flex that does not parse stops `plan` with one line naming the file, line and field', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      `name: bad
runtime:
  endpoints: [{ id: p, provider: openai, model: gpt-4o, apiKey: sk-1 }]
  chains: { premium: [p] }
agents: [{ name: a, chain: premium }]
schedule:
  from: 2026-08-17T06:00:00+09:00
  to: 2026-08-17T07:00:00+09:00
  timezone: Asia/Seoul
  jobs:
    - { name: j, cron: "0 6 * * *", agent: a, flex: 30 minutes }
`,
    );
    const run = await runCli(['plan', bad]);
    expect(run.code).not.toBe(0);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /bad\.yaml:11 at schedule\.jobs\[0\]\.flex: "30 minutes" is not a window; write 0/,
    );
  }, 60_000);
});
