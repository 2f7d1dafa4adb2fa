import { describe, expect, it } from 'vitest';
import type { Grant, SchedulerReport, TokenDecision } from '../../src/scheduler/token-scheduler.ts';
import { endpoint, fixture, flush, request, success } from './scheduler-fixture.ts';

/*
 * Wait or switch: with the primary paced and a backup free, the scheduler picks by when the call would end (the
 * primary's wait plus its usual latency against the backup's usual latency), not by chain order alone, within what
 * is left of the request's max wait; and it says so (`route.wait`). The scheduler on its own, on a manual clock; the
 * usual latencies are learned from settled calls.
 */

const granted = (d: TokenDecision | undefined): Grant => {
  if (d?.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(d)}`);
  return d.grant;
};

/** A primary that allows one call a minute and a free backup, each with a call of the given latency behind it. */
async function pacedPrimary(primaryMs: number, backupMs: number) {
  const f = fixture({
    endpoints: [endpoint('primary', { rpm: 1 }), endpoint('backup')],
    chains: { main: ['primary', 'backup'] },
    limit: 2,
  });
  const settle = (g: Grant, latencyMs: number) =>
    f.scheduler.release(g.leaseId, {
      kind: 'success',
      result: { ...success(g.endpointId).result, latencyMs },
    });
  // One call on each: the primary's spends its one request of the minute; both latencies are learned.
  const first = granted(await f.scheduler.acquire(request('warm-1', 'main')));
  expect(first.endpointId).toBe('primary');
  const second = granted(await f.scheduler.acquire(request('warm-2', 'main')));
  expect(second.endpointId).toBe('backup');
  settle(first, primaryMs);
  settle(second, backupMs);
  return f;
}

const routeWaits = (reports: readonly SchedulerReport[]) =>
  reports.filter((r): r is Extract<SchedulerReport, { type: 'route.wait' }> => r.type === 'route.wait');

describe('token scheduler — wait or switch', () => {
  it('waits for a paced primary when its wait plus its latency ends the call before the free backup would', async () => {
    // The primary is back in ≤ 60 s and answers in 0.5 s; the backup takes 90 s.
    const f = await pacedPrimary(500, 90_000);
    let decision: TokenDecision | undefined;
    void f.scheduler.acquire(request('Kai', 'main')).then((d) => {
      decision = d;
    });
    await flush();
    expect(decision).toBeUndefined();
    const [said] = routeWaits(f.reports);
    expect(said).toMatchObject({
      agent: 'Kai',
      endpointId: 'primary',
      insteadOf: 'backup',
      insteadExpectedMs: 90_000,
    });
    expect(said!.expectedMs).toBeLessThanOrEqual(60_000 + 500);
    expect(said!.expectedMs).toBeLessThan(said!.insteadExpectedMs);
    // The primary refills: the waiting request goes there.
    f.clock.advance(60_000);
    await flush();
    expect(granted(decision).endpointId).toBe('primary');
    expect(routeWaits(f.reports)).toHaveLength(1);
  });

  it('switches to the free backup when it ends the call sooner', async () => {
    const f = await pacedPrimary(500, 2_000);
    const g = granted(await f.scheduler.acquire(request('Kai', 'main')));
    expect(g.endpointId).toBe('backup');
    expect(routeWaits(f.reports)).toHaveLength(0);
  });

  it('switches when the wait is longer than what is left of the max wait, however slow the backup', async () => {
    const f = await pacedPrimary(500, 90_000);
    const g = granted(await f.scheduler.acquire(request('Kai', 'main', { maxWaitMs: 30_000 })));
    expect(g.endpointId).toBe('backup');
    expect(routeWaits(f.reports)).toHaveLength(0);
  });

  it('goes by chain order while a latency is not known yet', async () => {
    const f = fixture({
      endpoints: [endpoint('primary', { rpm: 1 }), endpoint('backup')],
      chains: { main: ['primary', 'backup'] },
      limit: 2,
    });
    const first = granted(await f.scheduler.acquire(request('warm', 'main')));
    f.scheduler.release(first.leaseId, success('primary'));
    const g = granted(await f.scheduler.acquire(request('Kai', 'main')));
    expect(g.endpointId).toBe('backup');
  });
});
