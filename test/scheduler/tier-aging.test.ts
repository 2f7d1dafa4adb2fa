import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineConfig } from '../../src/runtime/runtime-config.ts';
import type { Grant, TokenDecision } from '../../src/scheduler/token-scheduler.ts';
import { endpoint, fixture, flush, request, success } from './scheduler-fixture.ts';

/*
 * Tier aging (`tierAgingMs`): a waiting request moves up one tier per `tierAgingMs` waited, so a request of tier k
 * goes before a tier-0 request that arrived more than k × tierAgingMs after it. Without it, strict tier priority.
 * The scheduler on its own, on a manual clock.
 */

const TIERS = ['incident', 'analysis', 'ops'];

const granted = (d: TokenDecision | undefined): Grant => {
  if (d?.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(d)}`);
  return d.grant;
};

/** One token, held by `first`; then `ops` queues at T0 and `incident` queues `incidentAfterMs` later. */
async function race(tierAgingMs: number | undefined, incidentAfterMs: number): Promise<string[]> {
  const f = fixture({
    endpoints: [endpoint('mini')],
    chains: { main: ['mini'] },
    limit: 1,
    tiers: TIERS,
    // `first` holds its token through the whole wait: no lease runs out meanwhile.
    leaseMs: 2 * 3_600_000,
    ...(tierAgingMs !== undefined ? { tierAgingMs } : {}),
  });
  const order: string[] = [];
  const first = granted(await f.scheduler.acquire(request('first', 'main', { tier: 'incident' })));
  const asks = new Map<string, Promise<Grant>>();
  const ask = (name: string, tier: string) =>
    asks.set(
      name,
      f.scheduler.acquire(request(name, 'main', { tier })).then((d) => {
        order.push(name);
        return granted(d);
      }),
    );
  ask('ops', 'ops');
  f.clock.advance(incidentAfterMs);
  ask('incident', 'incident');
  f.scheduler.release(first.leaseId, success('mini'));
  await flush();
  const next = await asks.get(order[0]!)!;
  f.scheduler.release(next.leaseId, success('mini'));
  await flush();
  return order;
}

describe('token scheduler — tier aging', () => {
  it('without tierAgingMs a higher tier always goes first, however long a lower one has waited', async () => {
    expect(await race(undefined, 3_600_000)).toEqual(['incident', 'ops']);
  });

  it('an ops request (two tiers down) goes before an incident request that arrived more than 2 × tierAgingMs after it', async () => {
    expect(await race(1_000, 1_999)).toEqual(['incident', 'ops']);
    // A tie in serving key goes to the earlier arrival.
    expect(await race(1_000, 2_000)).toEqual(['ops', 'incident']);
    expect(await race(1_000, 2_001)).toEqual(['ops', 'incident']);
  });

  it('requests parked on a paced endpoint are woken in aged order too', async () => {
    const f = fixture({
      endpoints: [endpoint('slow', { rpm: 1 })],
      chains: { main: ['slow'] },
      limit: 2,
      tiers: TIERS,
      tierAgingMs: 1_000,
    });
    const first = granted(await f.scheduler.acquire(request('first', 'main')));
    f.scheduler.release(first.leaseId, success('slow'));
    const order: string[] = [];
    const ask = (name: string, tier: string) =>
      f.scheduler.acquire(request(name, 'main', { tier })).then((d) => {
        order.push(name);
        return granted(d);
      });
    // All three park on `slow` (its one request of the minute is spent).
    const ops = ask('ops', 'ops');
    f.clock.advance(1_500);
    const analysis = ask('analysis', 'analysis'); // key 1 500 + 1 000 = 2 500 > ops's 2 000
    f.clock.advance(1_000);
    const incident = ask('incident', 'incident'); // key 2 500: after ops; tied with analysis, which came first
    await flush();
    expect(f.scheduler.view().held).toBe(0);
    expect(f.scheduler.view().queue.map((q) => q.agent)).toEqual(['ops', 'analysis', 'incident']);
    // One refill a minute: each wakes the first parked request in aged order.
    for (const p of [ops, analysis, incident]) {
      f.clock.advance(60_000);
      await flush();
      f.scheduler.release((await p).leaseId, success('slow'));
    }
    expect(order).toEqual(['ops', 'analysis', 'incident']);
  });

  it('a tierAgingMs that is not a positive duration is refused, naming the field', () => {
    const base = { endpoints: [endpoint('mini')], chains: { main: ['mini'] } };
    expect(() => defineConfig({ ...base, tierAgingMs: 0 })).toThrow(/tierAgingMs/);
    expect(() => defineConfig({ ...base, tierAgingMs: -5 })).toThrow(/tierAgingMs/);
    expect(defineConfig({ ...base, tierAgingMs: 4_000 }).tierAgingMs).toBe(4_000);
    expect(defineConfig(base).tierAgingMs).toBeUndefined();
    expect(() => fixture({ ...base, tierAgingMs: 0 })).toThrow(/tierAgingMs/);
  });

  it('property: every grant goes to the waiting request with the smallest aged key (ties: the earlier arrival)', async () => {
    type Step = { t: 'ask'; tier: number; after: number } | { t: 'release'; after: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ t: fc.constant('ask' as const), tier: fc.nat(2), after: fc.nat(3_000) }),
      fc.record({ t: fc.constant('release' as const), after: fc.nat(3_000) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.integer({ min: 1, max: 3 }),
        async (steps, agingMs, limit) => {
          const f = fixture({
            endpoints: [endpoint('mini')],
            chains: { main: ['mini'] },
            limit,
            tiers: TIERS,
            tierAgingMs: agingMs,
          });
          interface Ask {
            readonly name: string;
            readonly key: number;
            readonly seq: number;
            grant?: Grant;
          }
          const waiting: Ask[] = [];
          const held: Ask[] = [];
          let seq = 0;
          const violations: string[] = [];
          for (const s of steps) {
            f.clock.advance(s.after);
            if (s.t === 'ask') {
              const a: Ask = {
                name: `r${seq}`,
                key: f.clock.now() + s.tier * agingMs,
                seq: seq++,
              };
              waiting.push(a);
              void f.scheduler.acquire(request(a.name, 'main', { tier: TIERS[s.tier]! })).then((d) => {
                a.grant = granted(d);
              });
            } else if (held.length > 0) {
              const h = held.shift()!;
              f.scheduler.release(h.grant!.leaseId, success('mini'));
            }
            await flush();
            // Whoever was granted since the last step must have been the best waiting one at that time.
            for (;;) {
              const g = waiting.findIndex((a) => a.grant !== undefined);
              if (g < 0) break;
              const best = waiting.reduce((b, a) =>
                a.key < b.key || (a.key === b.key && a.seq < b.seq) ? a : b,
              );
              if (best !== waiting[g]) violations.push(`${waiting[g]!.name} before ${best.name}`);
              held.push(...waiting.splice(g, 1));
            }
          }
          expect(violations).toEqual([]);
          expect(f.scheduler.view().held).toBe(held.length);
        },
      ),
      { seed: 11_011, numRuns: 150 },
    );
  });
});
