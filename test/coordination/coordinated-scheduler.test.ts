import { Redis } from 'ioredis';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { CoordinationBackend } from '../../src/coordination/coordination-backend.ts';
import { CoordinatedTokenScheduler } from '../../src/coordination/coordinated-token-scheduler.ts';
import {
  type CoordinationOptions,
  resolveCoordination,
} from '../../src/coordination/coordination-options.ts';
import { createCoordinationBackend } from '../../src/coordination/create-coordination.ts';
import { endpoint, fault, fixture, request } from '../scheduler/scheduler-fixture.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * The coordinated scheduler's own rules on top of the local one, on the real backends, with an injected real-time
 * clock ("time passes" is the test moving `now`): a shared-window permit covers a call only if it starts within one
 * slot of it; a token busy in the pool is waited for past max wait (as in one process); a probe parked for another
 * process's claim holds no local token, and a call served as a probe that is not a breaker's (a BYOK key check)
 * takes no claim.
 */

const TTL = 10_000;
const pools: CoordinationOptions[] = [];
const disposers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const d of disposers.splice(0)) await d();
  for (const p of pools.splice(0)) await cleanPool(p);
});

/**
 * Hands a pool's probe claim of an endpoint to `holder` in ONE write on the backend: as if ours ran out and that
 * process claimed it at once. Two steps (drop, then the peer claims) would leave a gap in which our own scheduler,
 * retrying for its token, may claim the free row again first (it did under load).
 */
async function handProbeClaimTo(o: CoordinationOptions, endpointId: string, holder: string): Promise<void> {
  if (o.backend === 'postgres') {
    const c = new pg.Client({ connectionString: o.url });
    await c.connect();
    try {
      const r = await c.query(
        `update coordination_probes set holder = $3, expires_at = now() + interval '60 seconds'
         where pool = $1 and endpoint_id = $2`,
        [o.pool, endpointId, holder],
      );
      expect(r.rowCount).toBe(1);
    } finally {
      await c.end();
    }
    return;
  }
  const r = new Redis(o.url!);
  try {
    expect(await r.set(`${o.keyPrefix}${o.pool}:probe:${endpointId}`, holder, 'PX', 60_000, 'XX')).toBe('OK');
  } finally {
    r.disconnect();
  }
}

/** Settles within `ms` real ms or says it did not (bounded: a hang fails the test instead of stalling it). */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'pending'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<'pending'>((resolve) => {
      timer = setTimeout(() => resolve('pending'), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

describe.each(coordinationCases())('$name coordinated scheduler', ({ options: make }) => {
  function setup(o: { limit: number; localLimit?: number; rpm?: number; ttl?: number; realTime?: boolean }) {
    const ttl = o.ttl ?? TTL;
    const options = { ...make(), leaseTtlMs: ttl, processId: 'a' };
    pools.push(options);
    const backend = createCoordinationBackend(resolveCoordination(options, 'a')!);
    const f = fixture({
      endpoints: [endpoint('sonnet', o.rpm ? { rpm: o.rpm } : undefined), endpoint('mini')],
      chains: { c: ['sonnet'], m: ['mini'] },
      limit: o.localLimit ?? 3,
    });
    const clock = { now: 1_000_000 };
    const scheduler = new CoordinatedTokenScheduler({
      local: f.scheduler,
      backend,
      endpoints: f.endpoints,
      clock: f.clock,
      limit: o.limit,
      leaseTtlMs: ttl,
      ...(o.realTime ? {} : { now: () => clock.now }),
    });
    disposers.push(() => scheduler.dispose());
    /** Another process of the same pool. */
    const peer = (): CoordinationBackend => {
      const b = createCoordinationBackend(resolveCoordination({ ...options, processId: 'b' }, 'b')!);
      disposers.push(() => b.close());
      return b;
    };
    return { scheduler, clock, f, backend, peer, options };
  }

  it('a shared-window permit carries a call only within one slot of it: later, the grant is refused and its units come back', async () => {
    const t = setup({ limit: 3, rpm: 2 });
    const a = await t.scheduler.acquire(request('a', 'c'));
    const b = await t.scheduler.acquire(request('b', 'c'));
    expect(a.kind).toBe('granted');
    expect(b.kind).toBe('granted');
    if (a.kind !== 'granted' || b.kind !== 'granted') return;
    // Within the slot (a minute's 1/60: 1 s at scale 1) the call may start.
    t.clock.now += 999;
    expect(t.scheduler.claim(a.grant.leaseId)).toBeDefined();
    // Past it the provider could count the call outside every window the pool checked: refused, nothing sent.
    t.clock.now += 2;
    expect(t.scheduler.claim(b.grant.leaseId)).toBeUndefined();
    // b's unit went back to the window: one more permit fits beside a's (the window's RPM is 2).
    const peer = t.peer();
    await peer.connect();
    const again = await peer.takeRate({ key: 'sonnet', windowMs: 60_000, rpm: 2, tpm: undefined, tokens: 0 });
    expect(again.ok).toBe(true);
    const full = await peer.takeRate({ key: 'sonnet', windowMs: 60_000, rpm: 2, tpm: undefined, tokens: 0 });
    expect(full.ok).toBe(false);
    t.scheduler.release(a.grant.leaseId, { kind: 'unused' });
  });

  it('a token busy in the pool is waited for past max wait, as one process waits for its own: each queued request is granted in turn', async () => {
    const t = setup({ limit: 1 });
    const held = await t.scheduler.acquire(request('h', 'c'));
    expect(held.kind).toBe('granted');
    const head = t.scheduler.acquire(request('slow', 'c', { maxWaitMs: 600_000 }));
    const behind = t.scheduler.acquire(request('quick', 'm', { maxWaitMs: 50 }));
    // Both granted locally and queued for the one global token, 'quick' behind the head.
    await waitFor(
      () =>
        t.scheduler
          .view()
          .queue.map((q) => q.agent)
          .join() === 'slow,quick',
      'both requests queued for a global token',
    );
    // Past quick's max wait: the pool's token is only busy (a one-process scheduler never denies a request for
    // waiting for a token), so the drain that hands the token to the head leaves quick queued.
    t.clock.now += 100;
    if (held.kind === 'granted') t.scheduler.release(held.grant.leaseId, { kind: 'unused' });
    const h = await within(head, 5_000);
    expect(h !== 'pending' && h.kind).toBe('granted');
    expect(t.scheduler.view().queue.map((q) => q.agent)).toEqual(['quick']);
    if (h !== 'pending' && h.kind === 'granted') t.scheduler.release(h.grant.leaseId, { kind: 'unused' });
    const q = await within(behind, 5_000);
    expect(q !== 'pending' && q.kind).toBe('granted');
    if (q !== 'pending' && q.kind === 'granted') t.scheduler.release(q.grant.leaseId, { kind: 'unused' });
  });

  it("a probe parked for another process's claim holds no local token; the claim given back, it goes; a key check takes no claim", async () => {
    const t = setup({ limit: 3, localLimit: 1 });
    // sonnet's breaker: open, then HALF-OPEN once its open time passed on the runtime's clock.
    const health = t.f.endpoints.get('sonnet')!.health;
    for (let i = 0; i < 3; i++) health.settle(fault('network'), 0, t.f.clock.now());
    t.f.clock.advance(30_000);
    expect(health.wantsProbe()).toBe(true);

    const peer = t.peer();
    await peer.connect();
    expect(await peer.claimProbe('sonnet', TTL)).toBe(true);
    const probe = t.scheduler.acquireProbe('sonnet');
    // The only local token is free for others while the probe waits for the peer's outcome.
    const other = await within(t.scheduler.acquire(request('x', 'm')), 5_000);
    expect(other !== 'pending' && other.kind).toBe('granted');
    expect(await within(probe, 50)).toBe('pending');
    // A key check is this process's own call: served even while the peer holds a claim by that name.
    expect(await peer.claimProbe('byok-check:k1', TTL)).toBe(true);
    const check = t.scheduler.acquireProbe('byok-check:k1');
    if (other !== 'pending' && other.kind === 'granted')
      t.scheduler.release(other.grant.leaseId, { kind: 'unused' });
    const c = await within(check, 5_000);
    expect(c).not.toBe('pending');
    if (c !== 'pending') t.scheduler.release(c.leaseId, { kind: 'unused' });

    // The peer's probe ended without a verdict (its claim given back): this process probes now.
    await peer.endProbe('sonnet');
    const p = await within(probe, 5_000);
    expect(p).not.toBe('pending');
    if (p === 'pending') return;
    expect(p.endpointId).toBe('sonnet');
    // While it holds the claim, the peer cannot take it.
    expect(await peer.claimProbe('sonnet', TTL)).toBe(false);
    t.scheduler.release(p.leaseId, { kind: 'unused' });
    await t.scheduler.dispose();
    expect(await peer.claimProbe('sonnet', TTL)).toBe(true);
  });

  it('a probe grant is taken up like a call: claimed within its lease it goes; past the lease deadline it is refused and its token comes back', async () => {
    const t = setup({ limit: 3, localLimit: 1 });
    const health = t.f.endpoints.get('sonnet')!.health;
    for (let i = 0; i < 3; i++) health.settle(fault('network'), 0, t.f.clock.now());
    t.f.clock.advance(30_000);
    const first = await within(t.scheduler.acquireProbe('sonnet'), 5_000);
    if (first === 'pending') throw new Error('no probe grant');
    expect(t.scheduler.claim(first.leaseId)).toBeDefined();
    t.scheduler.release(first.leaseId, { kind: 'unused' });
    const late = await within(t.scheduler.acquireProbe('sonnet'), 5_000);
    if (late === 'pending') throw new Error('no second probe grant');
    // Frozen past its lease: the backend may have given the token to another process; nothing may go.
    t.clock.now += TTL;
    expect(t.scheduler.claim(late.leaseId)).toBeUndefined();
    t.scheduler.releaseUnclaimed(late.leaseId);
    const other = await within(t.scheduler.acquire(request('x', 'm')), 5_000);
    expect(other !== 'pending' && other.kind).toBe('granted');
    if (other !== 'pending' && other.kind === 'granted')
      t.scheduler.release(other.grant.leaseId, { kind: 'unused' });
  });

  it('a probe whose claim ran out while it waited for a token, and another process took it, does not go: it waits for that probe holding nothing', async () => {
    // Real time here: the claim's TTL runs on the backend's clock.
    const t = setup({ limit: 1, ttl: 1_000, realTime: true });
    const health = t.f.endpoints.get('sonnet')!.health;
    for (let i = 0; i < 3; i++) health.settle(fault('network'), 0, t.f.clock.now());
    t.f.clock.advance(30_000);
    const held = await t.scheduler.acquire(request('h', 'm'));
    expect(held.kind).toBe('granted');
    const probe = t.scheduler.acquireProbe('sonnet');
    await waitFor(
      () => t.scheduler.view().queue.length === 0 && t.scheduler.view().held === 1,
      'the probe to queue',
    );
    // The probe's claim runs out while the only token stays held and a peer claims the probe (one write: the claim
    // handed to the peer); past half the TTL since its claim, the probe must claim again before it may go.
    await handProbeClaimTo(t.options, 'sonnet', 'b');
    const peer = t.peer();
    await peer.connect();
    // The peer holds it: its own claim is taken again (renewed), ours is not.
    expect(await peer.claimProbe('sonnet', 60_000)).toBe(true);
    expect(await t.backend.claimProbe('sonnet', 1_000)).toBe(false);
    await new Promise((r) => setTimeout(r, 600));
    if (held.kind === 'granted') t.scheduler.release(held.grant.leaseId, { kind: 'unused' });
    // The token came free: the probe claims again first, is refused, and waits without a token or a local grant.
    const other = await within(t.scheduler.acquire(request('x', 'm')), 5_000);
    expect(other !== 'pending' && other.kind).toBe('granted');
    expect(await within(probe, 200)).toBe('pending');
    if (other !== 'pending' && other.kind === 'granted')
      t.scheduler.release(other.grant.leaseId, { kind: 'unused' });
    // The peer's probe ended without a verdict: this one claims and goes.
    await peer.endProbe('sonnet');
    const p = await within(probe, 5_000);
    expect(p).not.toBe('pending');
    if (p !== 'pending') t.scheduler.release(p.leaseId, { kind: 'unused' });
  });
});
