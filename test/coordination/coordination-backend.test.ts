import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CoordinationBackend, GlobalLease } from '../../src/coordination/coordination-backend.ts';
import { leaseKey } from '../../src/coordination/coordination-backend.ts';
import { isCoordinationUnavailableError } from '../../src/coordination/coordination-errors.ts';
import {
  type CoordinationOptions,
  resolveCoordination,
} from '../../src/coordination/coordination-options.ts';
import { createCoordinationBackend } from '../../src/coordination/create-coordination.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { backendsPerTest, coordinationCases, REDIS_URL } from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';

const backends = backendsPerTest();
const open = backends.open;

describe.each(coordinationCases())('$name coordination backend', ({ options: make }) => {
  const fresh = () => {
    const o = make();
    backends.track(o);
    return o;
  };

  it('hands out at most `limit` tokens to three processes, and one comes back on release', async () => {
    const o = fresh();
    const [a, b, c] = await Promise.all([open(o, 'a'), open(o, 'b'), open(o, 'c')]);
    const results = await Promise.all([a, b, c, a, b, c].map((x) => x!.tryAcquire(3)));
    const granted = results.filter((r) => r.ok);
    expect(granted).toHaveLength(3);
    // A refusal raced with a grant still in flight may say "look again at once" (0); never a negative wait.
    for (const r of results)
      if (!r.ok && r.retryInMs !== undefined) expect(r.retryInMs).toBeGreaterThanOrEqual(0);
    // Once the grants have settled, a refusal says how long until the earliest held lease runs out.
    const settled = await b!.tryAcquire(3);
    expect(!settled.ok && settled.retryInMs).toBeGreaterThan(0);
    const first = results.findIndex((r) => r.ok);
    const owner = [a, b, c, a, b, c][first]!;
    const lease = (results[first] as { lease: GlobalLease }).lease;
    await owner.release(lease);
    expect((await c!.tryAcquire(3)).ok).toBe(true);
    expect((await a!.tryAcquire(3)).ok).toBe(false);
  });

  it("one process at a time holds an endpoint's probe claim; giving it back wakes the others; a dead holder's expires", async () => {
    const o = fresh();
    const [a, b] = await Promise.all([open(o, 'a'), open(o, 'b')]);
    let woken = 0;
    b!.onWake(() => woken++);
    expect(await a!.claimProbe('sonnet', 10_000)).toBe(true);
    expect(await b!.claimProbe('sonnet', 10_000)).toBe(false);
    // Its own claim is renewed; another endpoint's is apart; only the holder can give it back.
    expect(await a!.claimProbe('sonnet', 10_000)).toBe(true);
    expect(await b!.claimProbe('haiku', 10_000)).toBe(true);
    await b!.endProbe('sonnet');
    expect(await b!.claimProbe('sonnet', 10_000)).toBe(false);
    await a!.endProbe('sonnet');
    await waitFor(() => woken > 0, 'the wake-up of process b');
    expect(await b!.claimProbe('sonnet', 300)).toBe(true);
    // b dies holding it: a gets it once the claim's TTL ran out (the server's clock; bounded).
    let got = false;
    for (let i = 0; i < 50 && !got; i++) {
      got = await a!.claimProbe('sonnet', 10_000);
      if (!got) await new Promise((r) => setTimeout(r, 100));
    }
    expect(got).toBe(true);
  });

  it('wakes the other processes when a token is given back (no polling)', async () => {
    const o = fresh();
    const [a, b] = await Promise.all([open(o, 'a'), open(o, 'b')]);
    let woken = 0;
    b!.onWake(() => woken++);
    const r = await a!.tryAcquire(1);
    expect(r.ok).toBe(true);
    expect((await b!.tryAcquire(1)).ok).toBe(false);
    await a!.release((r as { lease: GlobalLease }).lease);
    await waitFor(() => woken > 0, 'the wake-up of process b');
    expect((await b!.tryAcquire(1)).ok).toBe(true);
  });

  it('a lease not renewed expires within its TTL, is reissued with a newer generation, and the stale holder is refused', async () => {
    const o = fresh();
    const [a, b] = await Promise.all([open(o, 'a', 400), open(o, 'b', 400)]);
    const first = await a!.tryAcquire(1);
    if (!first.ok) throw new Error('no first token');
    expect((await a!.renew([first.lease])).has(leaseKey(first.lease))).toBe(true);
    const refused = await b!.tryAcquire(1);
    expect(refused.ok).toBe(false);
    // The dead holder never renews: b looks again when it is told to, and gets the token once the lease ran out.
    let second = refused;
    for (let i = 0; i < 200 && !second.ok; i++) {
      await new Promise((r) => setTimeout(r, (second as { retryInMs?: number }).retryInMs ?? 400));
      second = await b!.tryAcquire(1);
    }
    if (!second.ok) throw new Error('the expired token did not come back');
    // Fencing: the old holder can neither renew nor release the reissued token.
    expect((await a!.renew([first.lease])).size).toBe(0);
    await a!.release(first.lease);
    expect((await a!.tryAcquire(1)).ok).toBe(false);
    expect((await b!.renew([second.lease])).has(leaseKey(second.lease))).toBe(true);
    if (o.backend === 'postgres') expect(second.lease.generation).toBeGreaterThan(first.lease.generation);
  });

  it('publishes endpoint health to the pool and keeps it for processes that join later', async () => {
    const o = fresh();
    const [a, b] = await Promise.all([open(o, 'a'), open(o, 'b')]);
    const seen: string[] = [];
    b!.onHealth((m) => seen.push(`${m.from}:${m.endpointId}`));
    const until = Date.now() + 60_000;
    await a!.publishHealth('sonnet', { cooldownUntil: until, disabledUntil: 0, openUntil: null });
    await waitFor(() => seen.includes('a:sonnet'), 'the health message at b');
    const late = await open(o, 'c');
    const stored = await late.loadHealth();
    expect(stored.map((m) => [m.endpointId, m.facts.cooldownUntil])).toEqual([['sonnet', until]]);
  });

  it('never has more than `limit` tokens held, whatever three processes do at once (property, fixed seed)', async () => {
    const o = fresh();
    const procs = await Promise.all([open(o, 'p0'), open(o, 'p1'), open(o, 'p2')]);
    await fc.assert(holdsTheLimit(procs, 3), { seed: 1515, numRuns: 25 });
  });

  it('the property catches a backend that grants one token too many', async () => {
    const o = fresh();
    const procs = await Promise.all([open(o, 'p0'), open(o, 'p1'), open(o, 'p2')]);
    // The same backends asked for limit + 1 while the check counts against limit: an over-grant by one.
    const overGranting = procs.map((b) => ({
      tryAcquire: (limit: number) => b.tryAcquire(limit + 1),
      release: (l: GlobalLease) => b.release(l),
    }));
    await expect(fc.assert(holdsTheLimit(overGranting, 3), { seed: 1515, numRuns: 25 })).rejects.toThrow(
      /Property failed/,
    );
  });

  it("processes with different lease TTLs do not cut each other's leases short", async () => {
    const o = fresh();
    const [long, short] = await Promise.all([open(o, 'long', 60_000), open(o, 'short', 300)]);
    const held = await long!.tryAcquire(2);
    expect(held.ok).toBe(true);
    const brief = await short!.tryAcquire(2);
    expect(brief.ok).toBe(true);
    // The short lease runs out (300 ms; a slower machine only waits longer): the long one (a minute) is still held,
    // so exactly one token is free.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await long!.tryAcquire(2)).ok).toBe(true);
    expect((await long!.tryAcquire(2)).ok).toBe(false);
  });
});

/** What the limit property needs of a backend. */
interface Semaphore {
  tryAcquire(limit: number): ReturnType<CoordinationBackend['tryAcquire']>;
  release(lease: GlobalLease): Promise<void>;
}

/*
 * Three processes each acquire (true) or release (false) concurrently. A token counts as held from when its grant
 * arrives until its release is SENT: a sub-interval of when the backend really holds it (so counting can only
 * under-estimate, never report an over-grant that did not happen), and any over-grant shows as peak > limit.
 */
function holdsTheLimit(procs: readonly Semaphore[], limit: number) {
  return fc.asyncProperty(
    fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }), { minLength: 3, maxLength: 3 }),
    async (plans) => {
      const held: GlobalLease[][] = [[], [], []];
      let peak = 0;
      let inFlight = 0;
      await Promise.all(
        plans.map(async (steps, i) => {
          for (const acquire of steps) {
            if (acquire) {
              const r = await procs[i]!.tryAcquire(limit);
              if (r.ok) {
                held[i]!.push(r.lease);
                inFlight++;
                peak = Math.max(peak, inFlight);
              }
            } else {
              const lease = held[i]!.pop();
              if (lease) {
                inFlight--;
                await procs[i]!.release(lease);
              }
            }
          }
        }),
      );
      for (const [i, leases] of held.entries()) for (const l of leases) await procs[i]!.release(l);
      expect(peak).toBeLessThanOrEqual(limit);
      // Everything given back: the whole limit is free again.
      const again = await Promise.all([0, 1, 2].map((i) => procs[i]!.tryAcquire(limit)));
      expect(again.every((r) => r.ok)).toBe(true);
      for (const [i, r] of again.entries()) if (r.ok) await procs[i]!.release(r.lease);
    },
  );
}

describe('bad or unreachable coordination backends', () => {
  it('a URL of the wrong scheme or none is refused naming the option', () => {
    const bad = [
      { backend: 'postgres', url: 'redis://127.0.0.1:6379' },
      { backend: 'redis' },
      { backend: 'redis', url: 'not a url' },
      { backend: 'etcd', url: 'http://x' },
    ] as const;
    for (const o of bad) {
      let error: unknown;
      try {
        resolveCoordination(o as CoordinationOptions, 'p');
      } catch (e) {
        error = e;
      }
      expect(isConfigError(error)).toBe(true);
      expect((error as Error).message).toMatch(/coordination\.(url|backend)/);
      expect((error as Error).message.split('\n')).toHaveLength(1);
    }
  });

  it('a Redis URL naming a database the server does not have is refused in one line (not database 0)', async () => {
    const url = new URL(REDIS_URL);
    url.pathname = '/99999';
    const b = createCoordinationBackend(resolveCoordination({ backend: 'redis', url: url.toString() }, 'p')!);
    let error: unknown;
    try {
      await b.connect();
    } catch (e) {
      error = e;
    } finally {
      await b.close();
    }
    expect(isCoordinationUnavailableError(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(/^coordination\.url: .* names database 99999, which the server refused/);
    expect(message.split('\n')).toHaveLength(1);
  });

  it.each([
    ['postgres', 'postgres://postgres:hunter2@127.0.0.1:1/x'],
    ['redis', 'redis://:hunter2@127.0.0.1:1'],
  ] as const)('%s unreachable: one line naming coordination.url, no password', async (backend, url) => {
    const b = createCoordinationBackend(resolveCoordination({ backend, url }, 'p')!);
    let error: unknown;
    try {
      await b.connect();
    } catch (e) {
      error = e;
    } finally {
      await b.close();
    }
    expect(isCoordinationUnavailableError(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(/^coordination\.url: .* is unreachable/);
    expect(message).toMatch(/refused/);
    expect(message).not.toContain('hunter2');
    expect(message.split('\n')).toHaveLength(1);
  });
});
