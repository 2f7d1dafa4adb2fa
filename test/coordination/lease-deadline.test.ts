import { afterEach, describe, expect, it } from 'vitest';
import type { CoordinationBackend, GlobalLease } from '../../src/coordination/coordination-backend.ts';
import { CoordinatedTokenScheduler } from '../../src/coordination/coordinated-token-scheduler.ts';
import {
  type CoordinationOptions,
  resolveCoordination,
} from '../../src/coordination/coordination-options.ts';
import { createCoordinationBackend } from '../../src/coordination/create-coordination.ts';
import { endpoint, fixture, request } from '../scheduler/scheduler-fixture.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';

/*
 * A lease's deadline is real time from when the grant was ASKED for (the backend may have granted it at once,
 * whenever its reply arrives), and no call starts past it even if the fence timer has not run yet (a process frozen
 * by SIGSTOP runs its overdue timers after its piled-up I/O). The real backends, with an injected real-time clock:
 * "time passes" is the test moving `now`, so nothing depends on the machine's speed.
 */

const TTL = 10_000;
const pools: CoordinationOptions[] = [];
const disposers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const d of disposers.splice(0)) await d();
  for (const p of pools.splice(0)) await cleanPool(p);
});

/** The real backend; `afterAcquire` runs between the backend's answer and its arrival here (a slow reply). */
function delegate(inner: CoordinationBackend, afterAcquire: (n: number) => void) {
  let acquires = 0;
  const granted: GlobalLease[] = [];
  const released: GlobalLease[] = [];
  const backend: CoordinationBackend = {
    location: inner.location,
    connect: (s) => inner.connect(s),
    tryAcquire: async (limit) => {
      const r = await inner.tryAcquire(limit);
      if (r.ok) granted.push(r.lease);
      afterAcquire(++acquires);
      return r;
    },
    release: async (l) => {
      released.push(l);
      await inner.release(l);
    },
    renew: (l) => inner.renew(l),
    takeRate: (a) => inner.takeRate(a),
    refundRate: (p) => inner.refundRate(p),
    claimProbe: (id, ttl) => inner.claimProbe(id, ttl),
    endProbe: (id) => inner.endProbe(id),
    publishHealth: (id, f) => inner.publishHealth(id, f),
    loadHealth: () => inner.loadHealth(),
    onWake: (l) => inner.onWake(l),
    onHealth: (l) => inner.onHealth(l),
    onLost: (l) => inner.onLost(l),
    close: () => inner.close(),
  };
  return { backend, granted, released, acquires: () => acquires };
}

describe.each(coordinationCases())('$name lease deadline', ({ options: make }) => {
  function setup(afterAcquire: (n: number) => void) {
    const o = { ...make(), leaseTtlMs: TTL, processId: 'a' };
    pools.push(o);
    const inner = createCoordinationBackend(resolveCoordination(o, 'a')!);
    const d = delegate(inner, afterAcquire);
    const f = fixture({ endpoints: [endpoint('sonnet')], chains: { c: ['sonnet'] } });
    const clock = { now: 1_000_000 };
    const scheduler = new CoordinatedTokenScheduler({
      local: f.scheduler,
      backend: d.backend,
      endpoints: f.endpoints,
      clock: f.clock,
      limit: 1,
      leaseTtlMs: TTL,
      now: () => clock.now,
    });
    disposers.push(() => scheduler.dispose());
    return { scheduler, clock, ...d };
  }

  it('a grant whose reply arrives past its deadline is given back, not used', async () => {
    // The first reply takes a whole TTL to arrive; the second is prompt.
    const t = setup((n) => {
      if (n === 1) t.clock.now += TTL;
    });
    const d = await t.scheduler.acquire(request('x', 'c'));
    expect(d.kind).toBe('granted');
    expect(t.acquires()).toBe(2);
    expect(t.released).toEqual([t.granted[0]]);
    expect(d.kind === 'granted' && t.scheduler.claim(d.grant.leaseId)).toBeTruthy();
  });

  it('no call starts once the deadline passed, even before the fence timer ran', async () => {
    const t = setup(() => {});
    const d = await t.scheduler.acquire(request('x', 'c'));
    expect(d.kind).toBe('granted');
    if (d.kind !== 'granted') return;
    // Frozen for a whole TTL: the fence timer (real time, seconds away) has not run.
    t.clock.now += TTL;
    let reclaimed: unknown;
    expect(t.scheduler.claim(d.grant.leaseId, (r) => (reclaimed = r))).toBeUndefined();
    expect(d.grant.signal.aborted).toBe(true);
    expect(reclaimed).toBeUndefined();
  });
});
