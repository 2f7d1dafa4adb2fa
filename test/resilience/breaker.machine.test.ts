import { createActor, type SnapshotFrom } from 'xstate';
import { getAdjacencyMap, getShortestPaths } from 'xstate/graph';
import { describe, expect, it } from 'vitest';
import {
  type BreakerInput,
  DEFAULT_BREAKER_CONFIG,
  resolveBreakerConfig,
} from '../../src/core/breaker-config.ts';
import {
  BREAKER_MACHINE_VERSION,
  type BreakerEvent,
  breakerMachine,
} from '../../machines/breaker.machine.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import type { FaultKind } from '../../src/core/fault.ts';

type BreakerSnapshot = SnapshotFrom<typeof breakerMachine>;

/**
 * The breaker holds no timer: its owner sends TICK once `openUntil` is due (the runtime's endpoint health does,
 * from its timer heap). This test owner does the same on a manual clock.
 */
function tickAtDeadline(actor: ReturnType<typeof createActor<typeof breakerMachine>>, clock: ManualClock) {
  let armed: { at: number; handle: unknown } | undefined;
  actor.subscribe((s) => {
    const until = s.value === 'open' ? s.context.openUntil : null;
    if (armed && armed.at !== until) {
      clock.clearTimeout(armed.handle);
      armed = undefined;
    }
    if (until !== null && !armed)
      armed = {
        at: until,
        handle: clock.setTimeout(() => {
          armed = undefined;
          actor.send({ type: 'TICK', at: clock.now() });
        }, until - clock.now()),
      };
  });
}

function start(input: BreakerInput = {}, origin = 1_000_000) {
  const clock = createManualClock(origin);
  const actor = createActor(breakerMachine, { input }).start();
  tickAtDeadline(actor, clock);
  const fail = (kind: FaultKind = 'rate_limited', retryAfterMs?: number) =>
    actor.send({
      type: 'CALL_FAILED',
      at: clock.now(),
      kind,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  const succeed = () => actor.send({ type: 'CALL_SUCCEEDED', at: clock.now() });
  const value = () => actor.getSnapshot().value;
  const ctx = () => actor.getSnapshot().context;
  return { clock, actor, fail, succeed, value, ctx };
}

/** Opens a breaker with three consecutive 429s and moves it to halfOpen by the clock. */
function startHalfOpen(input: BreakerInput = {}) {
  const b = start(input);
  for (let i = 0; i < 3; i++) b.fail('rate_limited');
  b.clock.advance(DEFAULT_BREAKER_CONFIG.openMs);
  expect(b.value()).toBe('halfOpen');
  return b;
}

describe('breakerMachine — closed', () => {
  it('starts closed with the seed defaults and a version number', () => {
    const { value, ctx } = start();
    expect(value()).toBe('closed');
    expect(ctx().config).toMatchObject({
      failureRateThreshold: 0.3,
      windowMs: 60_000,
      minCallsInWindow: 5,
      consecutiveToOpen: 3,
      openMs: 30_000,
      probesToClose: 2,
    });
    expect(ctx().config.consecutiveKinds).toEqual(['rate_limited', 'network', 'timeout']);
    expect(BREAKER_MACHINE_VERSION).toBeGreaterThanOrEqual(1);
  });

  it('opens when more than 30 % of at least 5 calls in the window failed, not at exactly 30 %', () => {
    const b = start();
    // server_error is not a consecutive kind: only the rate rule can trip here.
    for (let i = 0; i < 7; i++) b.succeed();
    for (let i = 0; i < 3; i++) b.fail('server_error');
    expect(b.value()).toBe('closed'); // 3 / 10 = 30 %, not more
    b.fail('overloaded');
    expect(b.value()).toBe('open'); // 4 / 11 ≈ 36 %
    expect(b.ctx().openReason).toBe('failure_rate');
    expect(b.ctx().lastFault).toBe('overloaded');
    expect(b.ctx().openCount).toBe(1);
  });

  it('needs the minimum number of calls before the rate rule applies', () => {
    const b = start();
    b.fail('server_error');
    b.fail('server_error');
    b.succeed();
    b.fail('server_error');
    expect(b.value()).toBe('closed'); // 75 % but only 4 calls
    b.succeed(); // 3 / 5 = 60 % of 5 calls: the rule now applies, even on a success
    expect(b.value()).toBe('open');
    expect(b.ctx().openReason).toBe('failure_rate');
  });

  it('forgets outcomes older than the window', () => {
    const b = start();
    b.fail('server_error');
    b.fail('server_error');
    b.clock.advance(61_000);
    for (let i = 0; i < 4; i++) b.succeed();
    b.fail('server_error');
    // With the old failures it would be 3 / 7; without them 1 / 5 = 20 %.
    expect(b.value()).toBe('closed');
    b.actor.send({ type: 'TICK', at: b.clock.now() + 120_000 });
    expect(b.ctx().outcomes).toEqual([]);
  });

  it('opens after 3 consecutive 429 / network / timeout faults; a success breaks the streak', () => {
    const b = start({ minCallsInWindow: 1_000 });
    b.fail('rate_limited');
    b.fail('network');
    b.succeed();
    b.fail('timeout');
    b.fail('rate_limited');
    expect(b.value()).toBe('closed');
    expect(b.ctx().consecutive).toBe(2);
    b.fail('network');
    expect(b.value()).toBe('open');
    expect(b.ctx().openReason).toBe('consecutive');
  });

  it('a transient fault of another kind neither counts towards nor breaks the streak', () => {
    const b = start({ minCallsInWindow: 1_000 });
    b.fail('rate_limited');
    b.fail('server_error');
    b.fail('rate_limited');
    expect(b.ctx().consecutive).toBe(2);
    expect(b.value()).toBe('closed');
    b.fail('rate_limited');
    expect(b.value()).toBe('open');
  });

  it('ignores non-transient faults entirely', () => {
    const b = start();
    for (const kind of ['auth', 'bad_request', 'credit_exhausted', 'cancelled'] as const) {
      for (let i = 0; i < 5; i++) b.fail(kind);
    }
    expect(b.value()).toBe('closed');
    expect(b.ctx().outcomes).toEqual([]);
    expect(b.ctx().consecutive).toBe(0);
  });

  it('honours configured thresholds', () => {
    const b = start({ consecutiveToOpen: 5, consecutiveKinds: ['overloaded'], minCallsInWindow: 1_000 });
    for (let i = 0; i < 4; i++) b.fail('overloaded');
    for (let i = 0; i < 10; i++) b.fail('rate_limited');
    expect(b.value()).toBe('closed');
    b.fail('overloaded');
    expect(b.value()).toBe('open');
  });
});

describe('breakerMachine — open', () => {
  it('ignores calls that report while open', () => {
    const b = start();
    for (let i = 0; i < 3; i++) b.fail();
    const before = b.ctx();
    b.succeed();
    b.succeed();
    b.fail('rate_limited', 999_999);
    expect(b.value()).toBe('open');
    expect(b.ctx()).toEqual(before);
  });

  it('moves to halfOpen after openMs by the injected clock, not a moment earlier', () => {
    const b = start();
    const openedAt = b.clock.now();
    for (let i = 0; i < 3; i++) b.fail();
    expect(b.ctx().openedAt).toBe(openedAt);
    expect(b.ctx().openUntil).toBe(openedAt + 30_000);
    b.clock.advance(29_999);
    expect(b.value()).toBe('open');
    b.clock.advance(1);
    expect(b.value()).toBe('halfOpen');
  });

  it('a Retry-After longer than openMs extends the cooldown; a shorter one does not shorten it', () => {
    const b = start();
    b.fail();
    b.fail();
    b.fail('rate_limited', 90_000);
    expect(b.ctx().openUntil).toBe(b.clock.now() + 90_000);
    b.clock.advance(30_000);
    expect(b.value()).toBe('open');
    b.clock.advance(60_000);
    expect(b.value()).toBe('halfOpen');

    const c = start();
    c.fail();
    c.fail();
    c.fail('rate_limited', 1_000);
    expect(c.ctx().openUntil).toBe(c.clock.now() + 30_000);
  });

  it('a stall opens for stallOpenMs (5 s by default, openMs when shorter); a failed probe after it reopens for openMs', () => {
    const b = start();
    const stall = () =>
      b.actor.send({ type: 'CALL_FAILED', at: b.clock.now(), kind: 'timeout', stall: true });
    stall();
    expect(b.ctx()).toMatchObject({ openReason: 'stalled', openUntil: b.clock.now() + 5_000 });
    b.clock.advance(5_000);
    expect(b.value()).toBe('halfOpen');
    b.actor.send({ type: 'PROBE_STARTED', at: b.clock.now() });
    b.actor.send({ type: 'PROBE_FAILED', at: b.clock.now() });
    // The stall's quick second look found it still down: the ordinary cooldown from now on.
    expect(b.ctx().openUntil).toBe(b.clock.now() + 30_000);

    const short = start({ openMs: 2_000, stallOpenMs: 5_000 });
    short.actor.send({ type: 'CALL_FAILED', at: short.clock.now(), kind: 'timeout', stall: true });
    expect(short.ctx().openUntil).toBe(short.clock.now() + 2_000);
    // A Retry-After longer than the stall's cooldown still wins.
    const told = start();
    told.actor.send({
      type: 'CALL_FAILED',
      at: told.clock.now(),
      kind: 'timeout',
      stall: true,
      retryAfterMs: 12_000,
    });
    expect(told.ctx().openUntil).toBe(told.clock.now() + 12_000);
  });

  it('TICK moves open to halfOpen once at >= openUntil', () => {
    const b = start();
    for (let i = 0; i < 3; i++) b.fail();
    const until = b.ctx().openUntil!;
    b.actor.send({ type: 'TICK', at: until - 1 });
    expect(b.value()).toBe('open');
    b.actor.send({ type: 'TICK', at: until });
    expect(b.value()).toBe('halfOpen');
  });
});

describe('breakerMachine — halfOpen', () => {
  it('admits one probe at a time', () => {
    const b = startHalfOpen();
    const at = b.clock.now();
    expect(b.actor.getSnapshot().can({ type: 'PROBE_STARTED', at })).toBe(true);
    b.actor.send({ type: 'PROBE_STARTED', at });
    expect(b.ctx().probeInFlight).toBe(true);
    expect(b.actor.getSnapshot().can({ type: 'PROBE_STARTED', at })).toBe(false);
    b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    expect(b.ctx().probeInFlight).toBe(false);
    expect(b.actor.getSnapshot().can({ type: 'PROBE_STARTED', at })).toBe(true);
  });

  it('closes after 2 consecutive good probes, with a clean window', () => {
    const b = startHalfOpen();
    const at = b.clock.now();
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    expect(b.value()).toBe('halfOpen');
    expect(b.ctx().goodProbes).toBe(1);
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    expect(b.value()).toBe('closed');
    expect(b.ctx()).toMatchObject({
      outcomes: [],
      consecutive: 0,
      openUntil: null,
      goodProbes: 0,
      openCount: 1,
    });
    // The faults from before the outage no longer count: two more 429s do not reopen it.
    b.fail();
    b.fail();
    expect(b.value()).toBe('closed');
  });

  it('a probe result without a probe in flight is ignored', () => {
    const b = startHalfOpen();
    const at = b.clock.now();
    b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    b.actor.send({ type: 'PROBE_FAILED', at });
    expect(b.value()).toBe('halfOpen');
    expect(b.ctx().goodProbes).toBe(0);
  });

  it('a bad probe reopens with a fresh cooldown and the good-probe count starts over', () => {
    const b = startHalfOpen();
    let at = b.clock.now();
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_FAILED', at, retryAfterMs: 45_000 });
    expect(b.value()).toBe('open');
    expect(b.ctx()).toMatchObject({
      openedAt: at,
      openUntil: at + 45_000,
      openReason: 'probe_failed',
      openCount: 2,
    });
    b.clock.advance(44_999);
    expect(b.value()).toBe('open');
    b.clock.advance(1);
    expect(b.value()).toBe('halfOpen');
    expect(b.ctx().goodProbes).toBe(0);
    at = b.clock.now();
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    expect(b.value()).toBe('halfOpen');
  });

  it('a probe answered with a 429 reopens for its Retry-After alone, not openMs, and does not double the next opening', () => {
    const b = startHalfOpen({ openMs: 30_000 });
    let at = b.clock.now();
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_FAILED', at, retryAfterMs: 3_000, rateLimited: true });
    expect(b.value()).toBe('open');
    expect(b.ctx().openUntil).toBe(at + 3_000);
    expect(b.ctx().failedProbes ?? 0).toBe(0);
    b.clock.advance(3_000);
    expect(b.value()).toBe('halfOpen');
    // A probe that fails without an answer still reopens for openMs, undoubled by the 429 before it.
    at = b.clock.now();
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_FAILED', at });
    expect(b.ctx().openUntil).toBe(at + 30_000);
  });

  it('probes answered with a 429 and a tiny Retry-After are spaced at least 1 s, doubling per such probe up to openMs; closing resets it', () => {
    const b = startHalfOpen({ openMs: 10_000 });
    const lengths: number[] = [];
    for (let i = 0; i < 6; i++) {
      const at = b.clock.now();
      b.actor.send({ type: 'PROBE_STARTED', at });
      b.actor.send({ type: 'PROBE_FAILED', at, retryAfterMs: 0, rateLimited: true });
      expect(b.value()).toBe('open');
      lengths.push(b.ctx().openUntil! - at);
      b.clock.advance(b.ctx().openUntil! - at);
      expect(b.value()).toBe('halfOpen');
    }
    expect(lengths).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    // A longer Retry-After still wins over the floor.
    let at = b.clock.now();
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_FAILED', at, retryAfterMs: 25_000, rateLimited: true });
    expect(b.ctx().openUntil).toBe(at + 25_000);
    b.clock.advance(25_000);
    for (let i = 0; i < 2; i++) {
      at = b.clock.now();
      b.actor.send({ type: 'PROBE_STARTED', at });
      b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    }
    expect(b.value()).toBe('closed');
    expect(b.ctx().limitedProbes).toBe(0);
  });

  it('each failed probe after the first doubles the minimum cooldown up to maxOpenMs; a longer Retry-After still wins; closing resets it', () => {
    const b = startHalfOpen({ openMs: 10_000, maxOpenMs: 35_000 });
    const lengths: number[] = [];
    const failProbe = (retryAfterMs?: number) => {
      const at = b.clock.now();
      b.actor.send({ type: 'PROBE_STARTED', at });
      b.actor.send({ type: 'PROBE_FAILED', at, ...(retryAfterMs ? { retryAfterMs } : {}) });
      expect(b.value()).toBe('open');
      lengths.push(b.ctx().openUntil! - at);
      b.clock.advance(b.ctx().openUntil! - at);
      expect(b.value()).toBe('halfOpen');
    };
    for (let i = 0; i < 5; i++) failProbe();
    expect(lengths).toEqual([10_000, 20_000, 35_000, 35_000, 35_000]);
    failProbe(50_000);
    expect(lengths[5]).toBe(50_000);
    expect(b.ctx().failedProbes).toBe(6);
    // Two good probes close it; the next opening starts over at openMs.
    for (let i = 0; i < 2; i++) {
      const at = b.clock.now();
      b.actor.send({ type: 'PROBE_STARTED', at });
      b.actor.send({ type: 'PROBE_SUCCEEDED', at });
    }
    expect(b.value()).toBe('closed');
    for (let i = 0; i < 3; i++) b.fail('rate_limited');
    b.clock.advance(10_000);
    lengths.length = 0;
    failProbe();
    expect(lengths).toEqual([10_000]);
  });

  it("FORCE_OPEN with another process's failed probes backs this breaker off as if it had failed them; a smaller count changes nothing", () => {
    const b = startHalfOpen({ openMs: 10_000, maxOpenMs: 300_000 });
    // Another process of the pool probed and failed twice: its breaker reopened until `until`.
    const until = b.clock.now() + 20_000;
    b.actor.send({ type: 'FORCE_OPEN', at: b.clock.now(), untilMs: until, failedProbes: 2 });
    expect(b.ctx()).toMatchObject({ openUntil: until, failedProbes: 2 });
    b.actor.send({ type: 'FORCE_OPEN', at: b.clock.now(), untilMs: until, failedProbes: 1 });
    expect(b.ctx().failedProbes).toBe(2);
    b.clock.advance(20_000);
    expect(b.value()).toBe('halfOpen');
    // This process's probe fails next: the third failed probe of the pool, 4 × openMs.
    const at = b.clock.now();
    b.actor.send({ type: 'PROBE_STARTED', at });
    b.actor.send({ type: 'PROBE_FAILED', at });
    expect(b.ctx().openUntil! - at).toBe(40_000);
  });

  it('maxOpenMs equal to openMs keeps every cooldown at openMs', () => {
    const b = startHalfOpen({ openMs: 10_000, maxOpenMs: 10_000 });
    for (let i = 0; i < 4; i++) {
      const at = b.clock.now();
      b.actor.send({ type: 'PROBE_STARTED', at });
      b.actor.send({ type: 'PROBE_FAILED', at });
      expect(b.ctx().openUntil! - at).toBe(10_000);
      b.clock.advance(10_000);
    }
  });

  it('ignores ordinary calls while half-open', () => {
    const b = startHalfOpen();
    b.fail();
    b.fail();
    b.fail();
    b.succeed();
    expect(b.value()).toBe('halfOpen');
  });
});

describe('breakerMachine — FORCE_OPEN and RESET', () => {
  it('FORCE_OPEN opens from closed until the given instant', () => {
    const b = start();
    const until = b.clock.now() + 3_600_000;
    b.actor.send({ type: 'FORCE_OPEN', at: b.clock.now(), untilMs: until });
    expect(b.value()).toBe('open');
    expect(b.ctx()).toMatchObject({ openUntil: until, openReason: 'forced', openCount: 1 });
    b.clock.advance(3_599_999);
    expect(b.value()).toBe('open');
    b.clock.advance(1);
    expect(b.value()).toBe('halfOpen');
  });

  it('FORCE_OPEN while open extends the cooldown and restarts the timer, but never shortens it', () => {
    const b = start();
    for (let i = 0; i < 3; i++) b.fail();
    const first = b.ctx().openUntil!;
    b.clock.advance(10_000);
    b.actor.send({ type: 'FORCE_OPEN', at: b.clock.now(), untilMs: b.clock.now() + 600_000 });
    const extended = b.ctx().openUntil!;
    expect(extended).toBe(b.clock.now() + 600_000);
    b.clock.advance(first - b.clock.now() + 1);
    expect(b.value()).toBe('open');
    b.actor.send({ type: 'FORCE_OPEN', at: b.clock.now(), untilMs: b.clock.now() + 1_000 });
    expect(b.ctx().openUntil).toBe(extended);
    expect(b.ctx().openCount).toBe(1);
    b.clock.advance(extended - b.clock.now() - 1);
    expect(b.value()).toBe('open');
    b.clock.advance(1);
    expect(b.value()).toBe('halfOpen');
  });

  it('FORCE_OPEN from halfOpen drops the probe state', () => {
    const b = startHalfOpen();
    b.actor.send({ type: 'PROBE_STARTED', at: b.clock.now() });
    b.actor.send({ type: 'FORCE_OPEN', at: b.clock.now(), untilMs: b.clock.now() + 120_000 });
    expect(b.value()).toBe('open');
    expect(b.ctx()).toMatchObject({ probeInFlight: false, openReason: 'forced', openCount: 2 });
  });

  it('RESET closes from any state with a clean window and keeps the open count', () => {
    const b = start();
    for (let i = 0; i < 3; i++) b.fail();
    b.actor.send({ type: 'RESET' });
    expect(b.value()).toBe('closed');
    expect(b.ctx()).toMatchObject({ outcomes: [], consecutive: 0, openUntil: null, openCount: 1 });
    // The cancelled cooldown timer does not fire later.
    b.clock.advance(60_000);
    expect(b.value()).toBe('closed');
  });
});

describe('breakerMachine — persistence', () => {
  it('a persisted open breaker restores with its deadline and leaves open on TICK', () => {
    const b = start();
    for (let i = 0; i < 3; i++) b.fail('network', 40_000);
    const persisted = JSON.parse(JSON.stringify(b.actor.getPersistedSnapshot()));
    const until = b.ctx().openUntil!;
    b.actor.stop();

    const clock = createManualClock(b.clock.now() + 5_000);
    const restored = createActor(breakerMachine, { snapshot: persisted, input: {}, clock }).start();
    expect(restored.getSnapshot().value).toBe('open');
    expect(restored.getSnapshot().context).toMatchObject({
      openUntil: until,
      lastFault: 'network',
      openCount: 1,
    });
    restored.send({ type: 'TICK', at: until - 1 });
    expect(restored.getSnapshot().value).toBe('open');
    restored.send({ type: 'TICK', at: until });
    expect(restored.getSnapshot().value).toBe('halfOpen');
    restored.send({ type: 'PROBE_STARTED', at: until });
    restored.send({ type: 'PROBE_SUCCEEDED', at: until });
    restored.send({ type: 'PROBE_STARTED', at: until });
    restored.send({ type: 'PROBE_SUCCEEDED', at: until });
    expect(restored.getSnapshot().value).toBe('closed');
  });

  it('a persisted closed breaker keeps its window and streak', () => {
    const b = start();
    b.fail();
    b.fail();
    const persisted = JSON.parse(JSON.stringify(b.actor.getPersistedSnapshot()));
    const restored = createActor(breakerMachine, {
      snapshot: persisted,
      input: {},
      clock: createManualClock(b.clock.now()),
    });
    restored.start();
    restored.send({ type: 'CALL_FAILED', at: b.clock.now(), kind: 'timeout' });
    expect(restored.getSnapshot().value).toBe('open');
  });
});

describe('breakerMachine — input validation', () => {
  it('rejects bad thresholds with a ConfigError naming the field', () => {
    const bad: Array<[BreakerInput, string]> = [
      [{ failureRateThreshold: 1.5 }, 'failureRateThreshold'],
      [{ windowMs: 0 }, 'windowMs'],
      [{ minCallsInWindow: 0 }, 'minCallsInWindow'],
      [{ consecutiveToOpen: 2.5 }, 'consecutiveToOpen'],
      [{ openMs: -1 }, 'openMs'],
      [{ stallOpenMs: -1 }, 'stallOpenMs'],
      [{ probesToClose: 0 }, 'probesToClose'],
    ];
    for (const [input, field] of bad) {
      let caught: unknown;
      try {
        resolveBreakerConfig(input);
      } catch (e) {
        caught = e;
      }
      expect(isConfigError(caught)).toBe(true);
      expect((caught as Error).message).toContain(field);
    }
    expect(resolveBreakerConfig({ openMs: undefined }).openMs).toBe(30_000);
  });
});

describe('breakerMachine — model-based', () => {
  type ModelEvent = BreakerEvent;

  // Every event a caller can send, timed from the snapshot so time never runs backwards.
  const eventsFor = (s: BreakerSnapshot): ModelEvent[] => {
    const at = s.context.openUntil ?? 1_000;
    return [
      { type: 'CALL_SUCCEEDED', at },
      { type: 'CALL_FAILED', at, kind: 'rate_limited' },
      { type: 'CALL_FAILED', at, kind: 'server_error' },
      { type: 'CALL_FAILED', at, kind: 'bad_request' },
      { type: 'PROBE_STARTED', at },
      { type: 'PROBE_SUCCEEDED', at },
      { type: 'PROBE_FAILED', at },
      { type: 'TICK', at },
      { type: 'FORCE_OPEN', at, untilMs: at + 600_000 },
      { type: 'RESET' },
    ];
  };
  // Abstract away the unbounded parts of context (call counts) so the traversal terminates.
  const serializeState = (s: BreakerSnapshot) => {
    const failures = s.context.outcomes.reduce((n, b) => n + b.failures, 0);
    const { consecutive, goodProbes, probeInFlight } = s.context;
    return JSON.stringify([s.value, consecutive, failures, goodProbes, probeInFlight]);
  };
  const options = {
    events: eventsFor as (s: BreakerSnapshot) => BreakerEvent[],
    serializeState,
    serializeEvent: (e: BreakerEvent) => JSON.stringify(e),
    limit: 10_000,
  };

  it('the reachable graph takes every transition of the chart', () => {
    const adjacency = getAdjacencyMap(breakerMachine, options);
    const taken = new Set<string>();
    for (const { state, transitions } of Object.values(adjacency)) {
      const edges = Object.values(transitions) as Array<{ event: BreakerEvent; state: BreakerSnapshot }>;
      for (const { event, state: next } of edges) {
        const changed =
          JSON.stringify([state.value, state.context]) !== JSON.stringify([next.value, next.context]);
        if (changed) taken.add(`${String(state.value)} ${event.type} ${String(next.value)}`);
      }
    }
    const expected = [
      'closed CALL_SUCCEEDED closed',
      'closed CALL_SUCCEEDED open',
      'closed CALL_FAILED closed',
      'closed CALL_FAILED open',
      'closed FORCE_OPEN open',
      'open TICK halfOpen',
      'open FORCE_OPEN open',
      'open RESET closed',
      'halfOpen PROBE_STARTED halfOpen',
      'halfOpen PROBE_SUCCEEDED halfOpen',
      'halfOpen PROBE_SUCCEEDED closed',
      'halfOpen PROBE_FAILED open',
      'halfOpen FORCE_OPEN open',
      'halfOpen RESET closed',
    ];
    for (const edge of expected) expect(taken, edge).toContain(edge);
    // Nothing else changes anything: calls never touch halfOpen or open, probes never touch closed or open.
    const housekeeping = ['closed TICK closed', 'closed RESET closed'];
    expect([...taken].filter((e) => !expected.includes(e) && !housekeeping.includes(e))).toEqual([]);
  });

  it('every shortest path replays identically on a live actor', () => {
    const paths = getShortestPaths(breakerMachine, options);
    const values = new Set(paths.map((p) => String(p.state.value)));
    expect(values).toEqual(new Set(['closed', 'open', 'halfOpen']));
    for (const path of paths) {
      const actor = createActor(breakerMachine, { input: {} }).start();
      // Step 0 is `xstate.init`; the graph keeps one representative snapshot per abstract state, so
      // the replay is compared on that abstraction.
      expect(path.steps[0]?.event.type).toBe('xstate.init');
      for (const step of path.steps.slice(1)) {
        actor.send(step.event as ModelEvent);
        expect(serializeState(actor.getSnapshot())).toBe(serializeState(step.state));
      }
      expect(serializeState(actor.getSnapshot())).toBe(serializeState(path.state));
      actor.stop();
    }
  });
});
