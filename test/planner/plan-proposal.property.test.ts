import { Cron } from 'croner';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shiftCron } from '../../src/planner/cron-shift.ts';
import { parseFlex } from '../../src/scenarios/flex-window.ts';
import { planSchedule } from '../../src/planner/plan-schedule.ts';
import type { PlanInput, PlanJob } from '../../src/planner/plan-types.ts';

/*
 * For random small schedules and limits: the proposal never moves a pinned job, never moves a job outside
 * its window, and fits whenever some schedule within the windows fits — decided here by brute force over
 * every combination of shifts, with the per-minute counts computed by this test from croner directly.
 */

const ZONE = 'UTC';
const FROM = Date.parse('2026-08-17T07:00:00Z');
const MINUTES = 20;
const TO = FROM + MINUTES * 60_000;

interface Case {
  readonly rpm: number;
  readonly budget: number | null;
  readonly jobs: readonly PlanJob[];
}

const flexArb = fc.constantFrom<string | number>(0, '1m', '2m', '+2m', '-3m', '3m', 0);
const cronArb = fc.oneof(
  fc.integer({ min: 0, max: MINUTES - 1 }).map((m) => `${m} 7 * * *`),
  // Crowded minutes: where one move only makes room for another (the greedy pass's plateaus).
  fc.integer({ min: 0, max: 3 }).map((m) => `${m} 7 * * *`),
  fc.constantFrom('*/5 7 * * *', '*/7 7 * * *', '3,9 7 * * *', '*/4 7 * * *'),
);
const jobArb = fc.record({ cron: cronArb, flex: flexArb, calls: fc.integer({ min: 1, max: 2 }) });
const caseArb: fc.Arbitrary<Case> = fc.record({
  rpm: fc.integer({ min: 1, max: 3 }),
  budget: fc.option(fc.integer({ min: 3, max: 12 }), { nil: null }),
  jobs: fc
    .array(jobArb, { minLength: 2, maxLength: 4 })
    .map((js) =>
      js.map((j, i) => ({ name: `job-${i}`, cron: j.cron, flex: j.flex, calls: j.calls, chain: 'only' })),
    ),
});

function input(c: Case): PlanInput {
  return {
    from: FROM,
    to: TO,
    timezone: ZONE,
    endpoints: [{ id: 'e', model: 'claude-sonnet-4-6', rpm: c.rpm }],
    chains: { only: ['e'] },
    jobs: c.jobs,
    ...(c.budget !== null ? { budgets: [{ name: 'sonnet', match: 'sonnet', limit: c.budget }] } : {}),
  };
}

function firings(cron: string, from: number, to: number): number[] {
  const out: number[] = [];
  const c = new Cron(cron, { timezone: ZONE, mode: '5-or-6-parts' });
  let next = c.nextRun(new Date(from - 1000));
  while (next && next.getTime() < to) {
    out.push(next.getTime());
    next = c.nextRun(next);
  }
  return out;
}

/** Whether the schedule with these shifts fits: ≤ rpm every minute, ≤ budget over the (< 1 h) window. */
function fits(c: Case, shifts: readonly number[]): boolean {
  const perMinute = new Array<number>(MINUTES).fill(0);
  c.jobs.forEach((job, j) => {
    const d = shifts[j]! * 60_000;
    for (const t of firings(job.cron, FROM - 60 * 60_000, TO + 60 * 60_000)) {
      const at = t + d;
      if (at >= FROM && at < TO) perMinute[Math.floor((at - FROM) / 60_000)]! += job.calls ?? 1;
    }
  });
  if (perMinute.some((n) => n > c.rpm)) return false;
  return c.budget === null || perMinute.reduce((a, b) => a + b, 0) <= c.budget;
}

function windows(c: Case): number[][] {
  return c.jobs.map((job) => {
    const w = parseFlex(job.flex);
    if (typeof w === 'string') throw new Error(w);
    const out: number[] = [];
    for (let d = -w.earlier; d <= w.later; d++) if (shiftCron(job.cron, d) !== undefined) out.push(d);
    return out;
  });
}

function someFit(c: Case): boolean {
  const ws = windows(c);
  const shifts = new Array<number>(ws.length).fill(0);
  const visit = (j: number): boolean => {
    if (j === ws.length) return fits(c, shifts);
    for (const d of ws[j]!) {
      shifts[j] = d;
      if (visit(j + 1)) return true;
    }
    return false;
  };
  return visit(0);
}

describe('planSchedule proposal (property, fixed seed)', () => {
  it('never moves a pinned job, stays in every window, and fits whenever a fitting schedule exists', () => {
    let withFit = 0;
    let withoutFit = 0;
    fc.assert(
      fc.property(caseArb, (c) => {
        const plan = planSchedule(input(c));
        const shifts = c.jobs.map(() => 0);
        for (const m of plan.proposal.moves) {
          const j = c.jobs.findIndex((job) => job.name === m.job);
          const w = parseFlex(c.jobs[j]!.flex) as { earlier: number; later: number };
          expect(m.kind).toBe('shift');
          expect(w.earlier + w.later).toBeGreaterThan(0);
          expect(m.minutes!).toBeGreaterThanOrEqual(-w.earlier);
          expect(m.minutes!).toBeLessThanOrEqual(w.later);
          expect(m.to).toBe(shiftCron(c.jobs[j]!.cron, m.minutes!));
          shifts[j] = m.minutes!;
        }
        const exists = someFit(c);
        if (exists) withFit++;
        else withoutFit++;
        // The planner's verdict agrees with the brute force, and its schedule fits by this test's count.
        expect(plan.proposal.fits).toBe(exists);
        if (exists) expect(fits(c, shifts)).toBe(true);
        if (plan.before.fits) expect(plan.proposal.moves).toEqual([]);
      }),
      { seed: 2020, numRuns: 150 },
    );
    // The generator reaches both sides of the property.
    expect(withFit).toBeGreaterThan(10);
    expect(withoutFit).toBeGreaterThan(10);
  });
});
