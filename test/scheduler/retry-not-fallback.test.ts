import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/resilience/retry-budget.ts';
import type { TokenDecision } from '../../src/scheduler/token-scheduler.ts';
import { endpoint, fault, fixture, request, success } from './scheduler-fixture.ts';

/*
 * The retry budget limits retries, not fallbacks (issue 31): a re-attempt is charged only when it is granted on an
 * endpoint the call already failed on (`tried`); with the budget spent it may still go to an endpoint of its chain
 * it never tried, and it is denied only when none is left. `skip` keeps a call off endpoints that cannot take it.
 */

const granted = (d: TokenDecision) => {
  if (d.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(d)}`);
  return d.grant;
};

function world() {
  const budget = new RetryBudget({ ratio: 0, minRetriesPerWindow: 0 });
  const f = fixture({
    endpoints: [endpoint('a'), endpoint('b'), endpoint('c')],
    chains: { main: ['a', 'b', 'c'] },
    limit: 2,
    budget,
  });
  return { ...f, budget };
}

describe('retry budget: retries, not fallbacks', () => {
  it('with no retry budget at all, a re-attempt goes on to an endpoint it never tried, uncharged', async () => {
    const f = world();
    const retry = request('kai', 'main', { retry: true, attempt: 1, tried: ['a'] });
    const grant = granted(await f.scheduler.acquire(retry));
    expect([grant.endpointId, grant.index]).toEqual(['b', 1]);
    expect(f.budget.state(f.clock.now()).retries).toBe(0);
    f.scheduler.release(grant.leaseId, success('b'));
  });

  it('with the budget spent, the first endpoint of the chain is passed over once tried, even when it is ready', async () => {
    const f = world();
    // `a` is ready (no fault of it was recorded here), yet it was tried: a retry there needs budget there is none
    // of, so the call goes to `c`, the first endpoint it never tried (`b` was tried too).
    const grant = granted(
      await f.scheduler.acquire(request('kai', 'main', { retry: true, attempt: 2, tried: ['a', 'b'] })),
    );
    expect(grant.endpointId).toBe('c');
    expect(f.budget.state(f.clock.now()).retries).toBe(0);
  });

  it('every endpoint tried and no budget: denied as budget spent; with budget, the retry is charged', async () => {
    const f = world();
    const all = request('kai', 'main', { retry: true, attempt: 3, tried: ['a', 'b', 'c'] });
    const denied = await f.scheduler.acquire(all);
    expect(denied.kind === 'denied' && denied.reason).toMatch(
      /^retry budget spent: .*no endpoint of the chain/,
    );

    const rich = new RetryBudget({ ratio: 0, minRetriesPerWindow: 1 });
    const g = fixture({
      endpoints: [endpoint('a'), endpoint('b')],
      chains: { main: ['a', 'b'] },
      budget: rich,
    });
    // `a` failed and cools: the re-attempt goes to `b`, never tried, a fallback, free even with budget to spare.
    const first = granted(await g.scheduler.acquire(request('kai', 'main')));
    g.scheduler.release(first.leaseId, fault('overloaded', { endpointId: 'a' }));
    const fallback = granted(
      await g.scheduler.acquire(request('kai', 'main', { retry: true, attempt: 1, tried: ['a'] })),
    );
    expect(fallback.endpointId).toBe('b');
    expect(rich.state(g.clock.now()).retries).toBe(0);
    g.scheduler.release(fallback.leaseId, success('b'));
    // Once `a` is ready again, a re-attempt granted there is a retry: charged.
    g.clock.advance(60_000);
    const retry = granted(
      await g.scheduler.acquire(request('kai', 'main', { retry: true, attempt: 2, tried: ['a', 'b'] })),
    );
    expect(retry.endpointId).toBe('a');
    expect(rich.state(g.clock.now()).retries).toBe(1);
  });

  it('skip: a call is never granted where it cannot go, and is told so when nothing else is left', async () => {
    const f = world();
    // `b` cooling (a 429), `a` skipped: the call waits for nothing it cannot use and goes to `c`.
    const cooled = granted(await f.scheduler.acquire(request('x', 'main', { estimatedTokens: 10 })));
    f.scheduler.release(cooled.leaseId, fault('rate_limited', { retryAfterMs: 30_000, endpointId: 'a' }));
    const grant = granted(await f.scheduler.acquire(request('kai', 'main', { skip: ['a', 'b'] })));
    expect(grant.endpointId).toBe('c');
    f.scheduler.release(grant.leaseId, success('c'));
    const none = await f.scheduler.acquire(request('kai', 'main', { skip: ['a', 'b', 'c'] }));
    expect(none.kind === 'denied' && none.reason).toMatch(/no endpoint of \[a, b, c\] is left for this call/);
  });
});
