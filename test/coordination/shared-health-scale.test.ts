import { afterEach, describe, expect, it } from 'vitest';
import { createScaledClock } from '../../src/clock/scaled-clock.ts';
import type { CoordinationBackend } from '../../src/coordination/coordination-backend.ts';
import {
  type CoordinationOptions,
  resolveCoordination,
} from '../../src/coordination/coordination-options.ts';
import { createCoordinationBackend } from '../../src/coordination/create-coordination.ts';
import { SharedHealthLink } from '../../src/coordination/shared-health-link.ts';
import { endpoint, fault, fixture } from '../scheduler/scheduler-fixture.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';

/*
 * Shared health on a scaled clock (a scenario at timeScale 150, as every worker of a run uses): a deadline travels
 * as the wall-clock instant it stands for, so a stored row means the same instant of the run to a process that
 * reads it later (each round's runtime joins the pool anew). Before, a 30 simulated s breaker was stored as 30
 * real s (75 simulated minutes), and every later joiner's endpoint stayed open.
 */

const SCALE = 150;
const pools: CoordinationOptions[] = [];
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  for (const p of pools.splice(0)) await cleanPool(p);
});

describe.each(coordinationCases())('shared health on a scaled clock, $name', ({ options: make }) => {
  async function member(o: CoordinationOptions, id: string) {
    const backend: CoordinationBackend = createCoordinationBackend(
      resolveCoordination({ ...o, processId: id }, id)!,
    );
    await backend.connect();
    closers.push(() => backend.close());
    const f = fixture({ endpoints: [endpoint('sonnet')], chains: { c: ['sonnet'] } });
    const clock = createScaledClock({ scale: SCALE });
    const link = new SharedHealthLink({ backend, endpoints: f.endpoints, clock, processId: id });
    closers.push(async () => link.close());
    return { backend, clock, link, health: f.endpoints.get('sonnet')!.health };
  }

  it('a 30 simulated s cooldown is published as 200 real ms, and a joiner reads the same instant of the run', async () => {
    const o = make();
    pools.push(o);
    const a = await member(o, 'a');
    const before = Date.now();
    a.health.settle(fault('rate_limited', { retryAfterMs: 30_000 }), 0, a.clock.now());
    const cooldown = a.health.view(a.clock.now()).cooldownUntil - a.clock.now();
    expect(cooldown).toBeGreaterThan(20_000);
    a.link.publish('sonnet');
    let stored: Awaited<ReturnType<CoordinationBackend['loadHealth']>> = [];
    for (let i = 0; i < 200 && stored.length === 0; i++) {
      stored = await a.backend.loadHealth();
      if (stored.length === 0) await new Promise((r) => setTimeout(r, 10));
    }
    const row = stored.find((m) => m.endpointId === 'sonnet')!;
    // The wall instant of the cooldown's end: its simulated length ÷ 150 after the publication.
    expect(row.facts.cooldownUntil - before).toBeLessThanOrEqual(cooldown / SCALE + 1_000);
    expect(row.facts.cooldownUntil).toBeGreaterThan(before);

    // A process joining now reads the cooldown on its own scaled clock: what is left of it, never more.
    const b = await member(o, 'b');
    await b.link.join();
    const left = b.health.view(b.clock.now()).cooldownUntil - b.clock.now();
    expect(left).toBeLessThanOrEqual(cooldown);
  });

  it('a row that means 10 real s from now is 1,500 simulated s to a joiner on the scaled clock', async () => {
    const o = make();
    pools.push(o);
    const writer = createCoordinationBackend(resolveCoordination({ ...o, processId: 'w' }, 'w')!);
    await writer.connect();
    closers.push(() => writer.close());
    const until = Date.now() + 10_000;
    await writer.publishHealth('sonnet', { cooldownUntil: until, disabledUntil: 0, openUntil: null });
    const b = await member(o, 'b');
    const joining = Date.now();
    await b.link.join();
    const joined = Date.now();
    const left = b.health.view(b.clock.now()).cooldownUntil - b.clock.now();
    // What is left of the 10 real s, at 150 simulated ms per real ms, read between `joining` and now (a joiner on
    // the old rule saw under 10 simulated s).
    expect(left).toBeLessThanOrEqual((until - joining) * SCALE + SCALE);
    expect(left).toBeGreaterThanOrEqual((until - Date.now()) * SCALE - SCALE);
    expect(joined).toBeLessThan(until);
  });
});
