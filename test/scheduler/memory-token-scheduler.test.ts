import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/resilience/retry-budget.ts';
import {
  isLeaseExpiredError,
  isSchedulerClosedError,
  type TokenDecision,
} from '../../src/scheduler/token-scheduler.ts';
import { endpoint, fault, fixture, flush, request, success, T0 } from './scheduler-fixture.ts';

const granted = (d: TokenDecision | undefined) => {
  if (d?.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(d)}`);
  return d.grant;
};

describe('token scheduler — order', () => {
  it('serves tiers in priority order and FIFO inside a tier', async () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    const order: string[] = [];
    const asks = ['ops-1', 'ops-2', 'analysis-1', 'ops-3', 'analysis-2'].map((name) =>
      f.scheduler
        .acquire(request(name, 'main', { tier: name.startsWith('analysis') ? 'analysis' : 'ops' }))
        .then((d) => {
          order.push(name);
          return granted(d);
        }),
    );
    // ops-1 took the only token at once; the rest wait in priority order.
    expect(f.scheduler.view().queue.map((q) => q.agent)).toEqual([
      'analysis-1',
      'analysis-2',
      'ops-2',
      'ops-3',
    ]);
    for (let i = 0; i < 5; i++) {
      await flush();
      const g = f.scheduler.view().holders[0]!;
      expect(f.scheduler.view().held).toBe(1);
      const lease = (await asks[['ops-1', 'ops-2', 'analysis-1', 'ops-3', 'analysis-2'].indexOf(g.holder)]!)
        .leaseId;
      f.scheduler.release(lease, success('mini'));
    }
    expect(order).toEqual(['ops-1', 'analysis-1', 'analysis-2', 'ops-2', 'ops-3']);
    expect(f.scheduler.view()).toMatchObject({ held: 0, queue: [] });
  });

  it('a request whose endpoint is paced never holds back one whose endpoint is free', async () => {
    const f = fixture({
      endpoints: [endpoint('slow', { rpm: 1 }), endpoint('fast')],
      chains: { slow: ['slow'], fast: ['fast'] },
      limit: 2,
    });
    const first = granted(await f.scheduler.acquire(request('a', 'slow')));
    f.scheduler.release(first.leaseId, success('slow'));
    // `slow` has used its one request of this minute: the next one waits for the refill...
    let paced: TokenDecision | undefined;
    void f.scheduler.acquire(request('b', 'slow')).then((d) => (paced = d));
    // ...while a later request on a free endpoint goes at once.
    const free = granted(await f.scheduler.acquire(request('c', 'fast')));
    expect(free.endpointId).toBe('fast');
    await flush();
    expect(paced).toBeUndefined();
    expect(f.scheduler.view().queue.map((q) => q.agent)).toEqual(['b']);
    // The refill is a deadline in the timer heap: it wakes the parked request exactly then.
    f.clock.advance(59_999);
    await flush();
    expect(paced).toBeUndefined();
    f.clock.advance(1);
    await flush();
    expect(granted(paced).endpointId).toBe('slow');
  });

  it('a request parked on an endpoint at its concurrency cap is woken by the call that ends there', async () => {
    const f = fixture({
      endpoints: [endpoint('one', { maxConcurrency: 1 })],
      chains: { main: ['one'] },
      limit: 3,
    });
    const holder = granted(await f.scheduler.acquire(request('a', 'main')));
    let next: TokenDecision | undefined;
    void f.scheduler.acquire(request('b', 'main')).then((d) => (next = d));
    await flush();
    expect(next).toBeUndefined();
    expect(f.scheduler.view().held).toBe(1);
    f.scheduler.release(holder.leaseId, success('one'));
    await flush();
    expect(granted(next).endpointId).toBe('one');
  });

  it('a request falls back to the next endpoint of its chain while the first is paced', async () => {
    const f = fixture({
      endpoints: [endpoint('primary', { rpm: 1 }), endpoint('backup')],
      chains: { main: ['primary', 'backup'] },
      limit: 2,
    });
    const a = granted(await f.scheduler.acquire(request('a', 'main')));
    expect([a.endpointId, a.index]).toEqual(['primary', 0]);
    const b = granted(await f.scheduler.acquire(request('b', 'main')));
    expect([b.endpointId, b.index]).toEqual(['backup', 1]);
  });
});

describe('token scheduler — cost per event does not grow with the number waiting', () => {
  it('1,000 requests behind a paced endpoint: each is looked at a bounded number of times', async () => {
    const waiting = 1_000;
    const f = fixture({ endpoints: [endpoint('paced', { rpm: 10 })], chains: { main: ['paced'] }, limit: 3 });
    const decisions: TokenDecision[] = [];
    for (let i = 0; i < waiting; i++)
      void f.scheduler.acquire(request(`a${i}`, 'main')).then((d) => {
        decisions.push(d);
        if (d.kind === 'granted') f.scheduler.release(d.grant.leaseId, success('paced'));
      });
    // Minute by minute, 10 go; the rest stay parked on the endpoint, untouched until its refill.
    for (let minute = 0; decisions.length < waiting && minute < 200; minute++) {
      await flush();
      f.clock.advance(60_000);
    }
    await flush();
    expect(decisions.every((d) => d.kind === 'granted')).toBe(true);
    expect(decisions).toHaveLength(waiting);
    // The old supervisor re-selected every waiter on every event: 500,500 selections for this. Now each grant
    // looks at the head of the endpoint's wait list (plus one look per arrival and per refill).
    expect(f.endpoints.selects).toBeLessThan(4 * waiting);
  });
});

describe('token scheduler — decisions', () => {
  it('every endpoint cooling: the request is told to cool until the earliest, holding no token; beyond max wait it is denied', async () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    const g = granted(await f.scheduler.acquire(request('a', 'main')));
    f.scheduler.release(g.leaseId, fault('rate_limited', { status: 429, retryAfterMs: 7_000 }));
    const cool = await f.scheduler.acquire(request('b', 'main'));
    expect(cool).toEqual({ kind: 'cool', endpointId: 'mini', until: T0 + 7_000, cause: 'cooldown', at: T0 });
    expect(f.scheduler.view().held).toBe(0);
    const denied = await f.scheduler.acquire(request('c', 'main', { maxWaitMs: 5_000 }));
    expect(denied.kind).toBe('denied');
    expect(denied.kind === 'denied' && denied.reason).toMatch(
      /beyond max wait 5000 ms .*mini, cooldown, in 7000 ms/,
    );
  });

  it('retries are charged when granted; a spent budget denies them, first attempts still go', async () => {
    const budget = new RetryBudget({ ratio: 0, minRetriesPerWindow: 1 });
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1, budget });
    const retry = request('a', 'main', { retry: true, attempt: 1 });
    f.scheduler.release(granted(await f.scheduler.acquire(retry)).leaseId, success('mini'));
    const spent = await f.scheduler.acquire(retry);
    expect(spent.kind === 'denied' && spent.reason).toMatch(/retry budget spent/);
    const first = await f.scheduler.acquire(request('b', 'main'));
    expect(first.kind).toBe('granted');
  });

  it('HALF-OPEN probes are served before every tier', async () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    const held = granted(await f.scheduler.acquire(request('a', 'main')));
    const order: string[] = [];
    void f.scheduler.acquire(request('b', 'main', { tier: 'analysis' })).then(() => order.push('analysis'));
    void f.scheduler.acquireProbe('mini').then((p) => {
      order.push('probe');
      f.scheduler.release(p.leaseId, { kind: 'unused' });
    });
    f.scheduler.release(held.leaseId, success('mini'));
    await flush();
    expect(order).toEqual(['probe', 'analysis']);
  });
});

describe('token scheduler — withdrawal and leases', () => {
  it('an aborted request leaves at once, settles once (rejected with the reason) and is never granted', async () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    const held = granted(await f.scheduler.acquire(request('a', 'main')));
    const controller = new AbortController();
    const waiting = f.scheduler.acquire(request('b', 'main'), controller.signal);
    const after = f.scheduler.acquire(request('c', 'main'));
    controller.abort(new Error('caller gave up'));
    await expect(waiting).rejects.toThrow('caller gave up');
    expect(f.scheduler.view().queue.map((q) => q.agent)).toEqual(['c']);
    f.scheduler.release(held.leaseId, success('mini'));
    expect(granted(await after).holder).toBe('c');
    // A pre-aborted request is refused without queueing anything.
    await expect(f.scheduler.acquire(request('d', 'main'), AbortSignal.abort('no'))).rejects.toBe('no');
    expect(f.scheduler.view().queue).toEqual([]);
  });

  it('an overrun lease aborts its signal; its token comes back only when the call has ended', async () => {
    const f = fixture({
      endpoints: [endpoint('mini'), endpoint('spare')],
      chains: { main: ['mini', 'spare'] },
      limit: 1,
      leaseMs: 5_000,
    });
    const g = granted(await f.scheduler.acquire(request('a', 'main')));
    expect(f.scheduler.claim(g.leaseId)).toBe(g);
    let next: TokenDecision | undefined;
    void f.scheduler.acquire(request('b', 'main')).then((d) => (next = d));
    f.clock.advance(5_000);
    expect(g.signal.aborted).toBe(true);
    expect(isLeaseExpiredError(g.signal.reason)).toBe(true);
    await flush();
    // The call is still tearing down: the token is not handed on yet (the cap holds at every instant).
    expect(next).toBeUndefined();
    expect(f.scheduler.view().held).toBe(1);
    f.scheduler.release(g.leaseId, fault('timeout'));
    await flush();
    // The timeout cools `mini`; the waiter goes to the next endpoint of its chain.
    expect(granted(next)).toMatchObject({ holder: 'b', endpointId: 'spare' });
    expect(f.reports.some((r) => r.type === 'token.reclaimed' && r.holder === 'a')).toBe(true);
  });

  it('a holder that ignores the abort loses the token after the grace; an unclaimed grant comes back at once', async () => {
    const f = fixture({
      endpoints: [endpoint('mini'), endpoint('spare')],
      chains: { main: ['mini', 'spare'] },
      limit: 1,
      leaseMs: 5_000,
      reclaimGraceMs: 2_000,
    });
    const stubborn = granted(await f.scheduler.acquire(request('a', 'main')));
    f.scheduler.claim(stubborn.leaseId);
    let next: TokenDecision | undefined;
    void f.scheduler.acquire(request('b', 'main')).then((d) => (next = d));
    f.clock.advance(6_999);
    await flush();
    expect(next).toBeUndefined();
    f.clock.advance(1);
    await flush();
    const b = granted(next);
    expect(b.endpointId).toBe('spare');
    // The forced release recorded a timeout on the endpoint; a late release from the holder changes nothing.
    expect(f.endpoints.get('mini')!.health.view(f.clock.now()).cooldownUntil).toBeGreaterThan(f.clock.now());
    f.scheduler.release(stubborn.leaseId, success('mini'));
    expect(f.scheduler.view().held).toBe(1);

    // b never claims its grant (its holder left first): at the deadline it is given back with nothing sent.
    let third: TokenDecision | undefined;
    f.clock.advance(60_000);
    void f.scheduler.acquire(request('c', 'main')).then((d) => (third = d));
    f.clock.advance(5_000);
    await flush();
    expect(f.scheduler.claim(b.leaseId)).toBeUndefined();
    expect(granted(third).holder).toBe('c');
  });

  it('close rejects the waiting requests, aborts held grants and refuses new ones', async () => {
    const f = fixture({ endpoints: [endpoint('mini')], chains: { main: ['mini'] }, limit: 1 });
    const held = granted(await f.scheduler.acquire(request('a', 'main')));
    f.scheduler.claim(held.leaseId);
    const waiting = f.scheduler.acquire(request('b', 'main'));
    f.scheduler.close();
    await expect(waiting).rejects.toSatisfy(isSchedulerClosedError);
    expect(held.signal.aborted).toBe(true);
    await expect(f.scheduler.acquire(request('c', 'main'))).rejects.toSatisfy(isSchedulerClosedError);
  });
});
