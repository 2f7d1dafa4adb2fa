import { describe, expect, it } from 'vitest';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { parseFlex } from '../../src/scenarios/flex-window.ts';
import { planSchedule } from '../../src/planner/plan-schedule.ts';
import type { PlanInput, PlanJob } from '../../src/planner/plan-types.ts';
import { parseScenario } from '../../src/scenarios/load-scenario.ts';

const base = (jobs: PlanJob[], over: Partial<PlanInput> = {}): PlanInput => ({
  from: '2026-08-17T07:00:00+09:00',
  to: '2026-08-17T08:00:00+09:00',
  timezone: 'Asia/Seoul',
  endpoints: [
    { id: 'codex', model: 'gpt-5.5', rpm: 2 },
    { id: 'sonnet', model: 'claude-sonnet-4-6', rpm: 4 },
    { id: 'mini', model: 'gpt-4o-mini', rpm: 40 },
  ],
  chains: { premium: ['codex', 'sonnet'], light: ['mini'] },
  ...over,
  jobs,
});

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('did not throw');
}

describe('planSchedule: expansion and demand', () => {
  it('expands crons in the zone and places calls on the first endpoint with room, spilling down the chain', () => {
    const plan = planSchedule(
      base([
        { name: 'a', cron: '30 7 * * *', chain: 'premium' },
        { name: 'b', cron: '30 7 * * *', chain: 'premium' },
        { name: 'c', cron: '30 7 * * *', chain: 'premium' },
        { name: 'every-10', cron: '*/10 * * * *', chain: 'light' },
      ]),
      { analyseOnly: true },
    );
    const at = 30; // 07:30 is the 31st minute of the window
    const calls = Object.fromEntries(plan.before.endpoints.map((e) => [e.id, e.calls[at]]));
    expect(calls).toEqual({ codex: 2, sonnet: 1, mini: 1 });
    expect(plan.before.calls).toBe(3 + 6);
    expect(plan.before.spilled).toBe(1);
    expect(plan.jobs.find((j) => j.name === 'every-10')?.firings).toBe(6);
    expect(plan.before.fits).toBe(true);
  });

  it('counts every call of a chain that can reach a budgeted model, names the breach and the peak jobs', () => {
    const plan = planSchedule(
      base(
        [
          { name: 'flusher', cron: '*/2 * * * *', chain: 'premium', needsLlm: false, operational: true },
          { name: 'brief', cron: '30 7 * * *', chain: 'premium' },
        ],
        { budgets: [{ name: 'sonnet calls per hour', match: 'sonnet', limit: 20 }] },
      ),
    );
    expect(plan.before.fits).toBe(false);
    const budget = plan.before.breaches.find((b) => b.kind === 'budget');
    expect(budget).toMatchObject({ target: 'sonnet calls per hour', limit: 20, demand: 31, over: 11 });
    expect(plan.before.peak?.label).toBe('07:00–08:00');
    expect(plan.before.peak?.jobs.map((j) => j.name)).toEqual(['flusher', 'brief']);
    expect(plan.before.peak?.budgets).toEqual([{ name: 'sonnet calls per hour', calls: 31, limit: 20 }]);
    // noAgent removes the whole load of a job that needs no LLM: preferred to the light chain.
    expect(plan.proposal.moves).toEqual([{ job: 'flusher', kind: 'noAgent', from: 'false', to: 'true' }]);
    expect(plan.after.fits).toBe(true);
  });

  it('counts tokens against TPM and calls in flight against the concurrency tokens', () => {
    const plan = planSchedule(
      base(
        Array.from({ length: 5 }, (_, i) => ({
          name: `j${i}`,
          cron: '0 7 * * *',
          chain: 'light',
          tokensPerCall: 3_000,
        })),
        {
          endpoints: [{ id: 'mini', rpm: 40, tpm: 10_000 }],
          chains: { light: ['mini'] },
          concurrency: 1,
          callSeconds: 30,
        },
      ),
      { analyseOnly: true },
    );
    const kinds = plan.before.breaches.map((b) => [b.kind, b.demand, b.limit]);
    expect(kinds).toEqual([
      ['tpm', 15_000, 10_000],
      ['concurrency', 2.5, 1],
    ]);
  });
});

describe('planSchedule: proposal', () => {
  it('shifts a flexible job the shortest way, writes its cron, and never moves a pinned one', () => {
    const plan = planSchedule(
      base(
        [
          { name: 'pinned-a', cron: '30 7 * * *', chain: 'premium', flex: 0 },
          { name: 'pinned-b', cron: '30 7 * * *', chain: 'premium' },
          { name: 'flexible', cron: '30 7 * * *', chain: 'premium', flex: '+15m' },
        ],
        { endpoints: [{ id: 'codex', rpm: 2 }], chains: { premium: ['codex'] } },
      ),
    );
    expect(plan.before.fits).toBe(false);
    expect(plan.proposal.moves).toEqual([
      { job: 'flexible', kind: 'shift', minutes: 1, from: '30 7 * * *', to: '31 7 * * *' },
    ]);
    expect(plan.after.fits).toBe(true);
  });

  it('moves an operational job to the light chain when shifting cannot help', () => {
    const plan = planSchedule(
      base(
        [
          { name: 'brief', cron: '*/1 * * * *', chain: 'premium' },
          { name: 'ops', cron: '*/1 * * * *', chain: 'premium', operational: true },
          { name: 'brief-2', cron: '*/1 * * * *', chain: 'premium', flex: '30m' },
        ],
        {
          endpoints: [
            { id: 'codex', rpm: 2 },
            { id: 'mini', rpm: 40 },
          ],
          chains: { premium: ['codex'], light: ['mini'] },
        },
      ),
    );
    expect(plan.proposal.moves).toEqual([{ job: 'ops', kind: 'chain', from: 'premium', to: 'light' }]);
    expect(plan.after.fits).toBe(true);
  });

  it('finds two moves that only work together (no single move helps: the exhaustive pass)', () => {
    const plan = planSchedule(
      base(
        [
          { name: 'a', cron: '0 7 * * *', chain: 'premium', flex: '+1m' },
          { name: 'c', cron: '0 7 * * *', chain: 'premium' },
          { name: 'b', cron: '1 7 * * *', chain: 'premium', flex: '+1m' },
        ],
        { endpoints: [{ id: 'codex', rpm: 1 }], chains: { premium: ['codex'] } },
      ),
    );
    expect(plan.proposal.moves.map((m) => [m.job, m.minutes])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    expect(plan.after.fits).toBe(true);
  });

  it('says so when nothing within the windows fits', () => {
    const plan = planSchedule(
      base(
        [
          { name: 'a', cron: '*/1 * * * *', chain: 'premium', flex: '5m' },
          { name: 'b', cron: '*/1 * * * *', chain: 'premium', flex: '5m' },
        ],
        { endpoints: [{ id: 'codex', rpm: 1 }], chains: { premium: ['codex'] } },
      ),
    );
    expect(plan.proposal.fits).toBe(false);
    expect(plan.proposal.note).toMatch(/no schedule within the jobs’ flex windows fits/);
  });

  it('is deterministic: the same input gives the same plan', () => {
    const input = base(
      Array.from(
        { length: 8 },
        (_, i): PlanJob => ({
          name: `j${i}`,
          cron: `${(i * 7) % 60} 7 * * *`,
          chain: i % 2 ? 'premium' : 'light',
          flex: '20m',
          operational: i % 3 === 0,
        }),
      ).concat([{ name: 'burst', cron: '*/3 * * * *', chain: 'premium', flex: '2m' }]),
      { budgets: [{ name: 'sonnet', match: 'sonnet', limit: 12 }] },
    );
    expect(JSON.stringify(planSchedule(input))).toBe(JSON.stringify(planSchedule(input)));
  });
});

describe('planSchedule: bad input', () => {
  it('a bad cron names the source, the field and what to do', () => {
    const e = thrown(() =>
      planSchedule(base([{ name: 'x', cron: '0 25 * * *', chain: 'premium' }], { source: 'crons.json' })),
    );
    expect(isConfigError(e)).toBe(true);
    expect(e.message).toMatch(
      /^crons\.json at jobs\[0\]\.cron: "0 25 \* \* \*" does not parse: .*write 5 fields/,
    );
  });

  it('a flex that does not parse names the field and the forms it takes', () => {
    const e = thrown(() =>
      planSchedule(
        base([{ name: 'x', cron: '0 7 * * *', chain: 'premium', flex: 'soon' }], { source: 'crons.json' }),
      ),
    );
    expect(e.message).toBe(
      'crons.json at jobs[0].flex: "soon" is not a window; write 0 (pinned), 30m (up to 30 minutes either way), +30m (only later), -15m (only earlier) or 1h',
    );
    expect(parseFlex('+1h')).toEqual({ earlier: 0, later: 60 });
    expect(parseFlex('-15m')).toEqual({ earlier: 15, later: 0 });
    expect(parseFlex(0)).toEqual({ earlier: 0, later: 0 });
  });

  it('a scenario with a bad flex is refused at load with its file, line and field', () => {
    const yaml = `name: x
runtime:
  endpoints: [{ id: p, provider: openai, model: gpt-4o, apiKey: sk-1 }]
  chains: { premium: [p] }
agents: [{ name: a, chain: premium }]
schedule:
  from: 2026-08-17T06:00:00+09:00
  to: 2026-08-17T07:00:00+09:00
  timezone: Asia/Seoul
  jobs:
    - name: j
      cron: "0 6 * * *"
      agent: a
      flex: half an hour
`;
    const e = thrown(() => parseScenario(yaml, 'my.yaml'));
    expect(e.message).toMatch(
      /^my\.yaml:14 at schedule\.jobs\[0\]\.flex: "half an hour" is not a window; write 0/,
    );
  });
});
