import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineConfig } from '../../src/runtime/runtime-config.ts';
import { type SimAgent, type SimResult, simulateChains, TIERS } from './chain-simulation.ts';
import { endpoint, fixture } from './scheduler-fixture.ts';

/*
 * The slack tier policy (`tierSlackMs`) on the real scheduler, agents working chains of asks on a manual clock
 * (test/scheduler/chain-simulation.ts), under random arrivals, tiers, chain lengths and call durations:
 * - its promise: a request is delayed by lower tiers passing it less than `tierSlackMs` in all, plus the one
 *   pass that reaches the bound; a pass delays it from that grant to the next one;
 * - no token idles while a request waits (strict order and slack alike);
 * - every request is granted once.
 * And one fixed storm where strict order leaves tokens idle at the end and slack does not.
 */

const SLACK_MS = 1_500;

const agentArb = (name: string): fc.Arbitrary<SimAgent> =>
  fc.record({
    name: fc.constant(name),
    tier: fc.constantFrom(...TIERS),
    startMs: fc.integer({ min: 0, max: 20_000 }),
    callsMs: fc.array(fc.integer({ min: 50, max: 3_000 }), { minLength: 1, maxLength: 25 }),
  });

const scenarioArb = fc.record({
  limit: fc.integer({ min: 1, max: 4 }),
  agents: fc
    .integer({ min: 1, max: 8 })
    .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => agentArb(`ag${i}`)))),
});

/**
 * For each request, the delay lower tiers' grants caused it: every grant to a lower tier while it waited (made
 * after its ask, before its own grant) counts from that grant to the next grant. Returns the worst request's delay
 * less its last such slot (the pass that may reach the bound), with the request.
 */
function worstSlackDelay(sim: SimResult): { delayMs: number; agent: string } {
  const grants = sim.grants;
  const rankOf = (tier: string) => TIERS.indexOf(tier as (typeof TIERS)[number]);
  let worst = { delayMs: 0, agent: '' };
  for (const r of sim.requests) {
    let delay = 0;
    let last = 0;
    for (let k = 0; k < grants.length - 1; k++) {
      const g = grants[k]!;
      if (g.index < r.reportsBefore || g.at >= r.grantedAt!) continue;
      if (rankOf(g.tier) <= r.rank) continue;
      last = grants[k + 1]!.at - g.at;
      delay += last;
    }
    if (delay - last > worst.delayMs) worst = { delayMs: delay - last, agent: r.agent };
  }
  return worst;
}

describe('token scheduler — the slack tier policy', () => {
  it('keeps its promise: a request is passed over by lower tiers for less than tierSlackMs in all (plus one pass)', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ limit, agents }) => {
        const sim = await simulateChains(agents, limit, SLACK_MS);
        expect(sim.requests.every((r) => r.grantedAt !== undefined)).toBe(true);
        expect(worstSlackDelay(sim).delayMs).toBeLessThan(SLACK_MS);
      }),
      { seed: 20_261_206, numRuns: 150 },
    );
  });

  it('never leaves a token idle while a request waits (strict tiers and slack)', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, fc.boolean(), async ({ limit, agents }, slack) => {
        const sim = await simulateChains(agents, limit, slack ? SLACK_MS : undefined);
        for (const s of sim.settled) if (s.waiting > 0) expect(s.held, `at ${s.at} ms`).toBe(limit);
        // Every request was granted exactly once.
        expect(sim.grants.length).toBe(sim.requests.length);
      }),
      { seed: 20_261_207, numRuns: 60 },
    );
  });

  it('a round of chains: strict order leaves the lowest tier a tail on idle tokens; slack ends near the bound', async () => {
    // Three tokens; three incident agents and two analysis agents with 10 one-second calls each, one ops agent with
    // 30: 80 s of calls on 3 tokens (26.7 s), and the ops chain alone takes 30 s: no schedule ends before 30 s.
    const chain = (n: number) => Array.from({ length: n }, () => 1_000);
    const agents: SimAgent[] = [
      ...['i0', 'i1', 'i2'].map((name) => ({
        name,
        tier: 'incident' as const,
        startMs: 0,
        callsMs: chain(10),
      })),
      ...['a0', 'a1'].map((name) => ({ name, tier: 'analysis' as const, startMs: 0, callsMs: chain(10) })),
      { name: 'ops', tier: 'ops', startMs: 0, callsMs: chain(30) },
    ];
    const strict = await simulateChains(agents, 3, undefined);
    const slack = await simulateChains(agents, 3, SLACK_MS);
    const boundMs = Math.max(80_000 / 3, 30_000);
    // Strict: the ops chain gets a token only when a higher tier's agent is not asking, so most of it runs after
    // they are done, alone. Slack starts it at once: the work ends within a call of the bound.
    expect(strict.makespanMs).toBeGreaterThan(boundMs + 5_000);
    expect(slack.makespanMs).toBeLessThanOrEqual(boundMs + 1_000);
    // The incident tier still finishes first under slack.
    const lastGrant = (sim: SimResult, prefix: string) =>
      Math.max(...sim.requests.filter((r) => r.agent.startsWith(prefix)).map((r) => r.grantedAt!));
    expect(lastGrant(slack, 'i')).toBeLessThan(lastGrant(slack, 'ops'));
  });

  it('is the default (tierPolicy slack, 1.5 s); strict on request; a bad policy is refused naming the field', () => {
    const base = { endpoints: [endpoint('mini')], chains: { main: ['mini'] } };
    expect(defineConfig(base).tierPolicy).toEqual({ kind: 'slack', maxDelayMs: 1_500 });
    expect(defineConfig({ ...base, tierPolicy: { kind: 'strict' } }).tierPolicy).toEqual({ kind: 'strict' });
    expect(() => defineConfig({ ...base, tierPolicy: { kind: 'fast' } } as never)).toThrow(
      /tierPolicy\.kind/,
    );
    expect(() => defineConfig({ ...base, tierPolicy: { kind: 'slack', maxDelayMs: -1 } })).toThrow(
      /tierPolicy\.maxDelayMs/,
    );
    expect(() => fixture({ ...base, tierSlackMs: -1 })).toThrow(/tierSlackMs/);
  });
});
