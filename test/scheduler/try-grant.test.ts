import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/resilience/retry-budget.ts';
import type { TokenDecision } from '../../src/scheduler/token-scheduler.ts';
import { endpoint, fault, fixture, flush, request, success, T0 } from './scheduler-fixture.ts';

/*
 * `tryGrant`: the grant an agent's ASK may come with (idle → calling in one step). It must grant exactly when
 * `request` would have granted at once, and otherwise change nothing: no lease, no report, no place taken.
 */

const granted = (d: TokenDecision | undefined) => {
  if (d?.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(d)}`);
  return d.grant;
};

describe('token scheduler — tryGrant', () => {
  it('a free token, nobody waiting, a ready endpoint: granted now, reported with no wait, claimable once', () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 2 });
    const grant = f.scheduler.tryGrant(request('a', 'main'));
    expect(grant).toMatchObject({ holder: 'a', endpointId: 'mini', index: 0, grantedAt: T0 });
    expect(f.scheduler.view().held).toBe(1);
    expect(f.reports).toEqual([
      expect.objectContaining({ type: 'token.granted', agent: 'a', waitedMs: 0, held: 1 }),
    ]);
    expect(f.scheduler.claim(grant!.leaseId)).toBeDefined();
    // Claimed: giving it back "unclaimed" does nothing; the call's own release does.
    f.scheduler.releaseUnclaimed(grant!.leaseId);
    expect(f.scheduler.view().held).toBe(1);
    f.scheduler.release(grant!.leaseId, success('mini'));
    expect(f.scheduler.view().held).toBe(0);
  });

  it('an unclaimed grant given back frees its token', () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    const grant = f.scheduler.tryGrant(request('a', 'main'))!;
    f.scheduler.releaseUnclaimed(grant.leaseId);
    expect(f.scheduler.view().held).toBe(0);
    expect(f.scheduler.tryGrant(request('b', 'main'))?.holder).toBe('b');
  });

  it('every token held: nothing, and nothing changed', async () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    granted(await f.scheduler.acquire(request('a', 'main')));
    const before = { view: f.scheduler.view(), reports: f.reports.length };
    expect(f.scheduler.tryGrant(request('b', 'main'))).toBeUndefined();
    expect({ view: f.scheduler.view(), reports: f.reports.length }).toEqual(before);
  });

  it('someone waiting goes first: nothing for the newcomer, even on another, free endpoint', async () => {
    const f = fixture({
      endpoints: [endpoint('slow', { rpm: 1 }), endpoint('fast')],
      chains: { slow: ['slow'], fast: ['fast'] },
      limit: 3,
    });
    f.scheduler.release(granted(await f.scheduler.acquire(request('a', 'slow'))).leaseId, success('slow'));
    // `b` is parked on `slow` (its one request of the minute is used).
    void f.scheduler.acquire(request('b', 'slow'));
    await flush();
    expect(f.scheduler.view().queue.map((q) => q.agent)).toEqual(['b']);
    const reports = f.reports.length;
    expect(f.scheduler.tryGrant(request('c', 'fast'))).toBeUndefined();
    expect(f.reports.length).toBe(reports);
    // Through `request` it still goes at once (the queue decides, not the shortcut).
    expect(granted(await f.scheduler.acquire(request('c', 'fast'))).endpointId).toBe('fast');
  });

  it('an endpoint that is not ready (cooling) or a retry: nothing; `request` decides those', async () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 2 });
    const g = granted(await f.scheduler.acquire(request('a', 'main')));
    const retry = request('a', 'main', { retry: true, attempt: 1 });
    expect(f.scheduler.tryGrant(retry)).toBeUndefined();
    f.scheduler.release(g.leaseId, fault('rate_limited', { status: 429, retryAfterMs: 7_000 }));
    const reports = f.reports.length;
    expect(f.scheduler.tryGrant(request('b', 'main'))).toBeUndefined();
    expect(f.reports.length).toBe(reports);
    expect(await f.scheduler.acquire(request('b', 'main'))).toMatchObject({
      kind: 'cool',
      until: T0 + 7_000,
    });
  });

  it('a first attempt granted this way funds the retry budget as one granted through `request` does', async () => {
    const budget = new RetryBudget({ ratio: 1, minRetriesPerWindow: 0 });
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1, budget });
    const retry = request('a', 'main', { retry: true, attempt: 1 });
    // No first attempt yet: a retry has nothing to draw on.
    expect(await f.scheduler.acquire(retry)).toMatchObject({ kind: 'denied' });
    f.scheduler.release(f.scheduler.tryGrant(request('a', 'main'))!.leaseId, success('mini'));
    expect(granted(await f.scheduler.acquire(retry)).holder).toBe('a');
  });

  it('a closed scheduler grants nothing', () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    f.scheduler.close();
    expect(f.scheduler.tryGrant(request('a', 'main'))).toBeUndefined();
  });
});
