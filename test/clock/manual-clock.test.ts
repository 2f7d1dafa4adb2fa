import { describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { holdClock } from '../../src/clock/virtual-clock.ts';
import { driveUntil } from '../support/runtime-harness.ts';

// `ManualClock` is public (breakwater/testing): a user's own one, written before hold/park/busy existed, still fits.

/** A hand-written ManualClock with only the members a user would write: no hold, park or busy. */
function usersOwnClock(): ManualClock {
  const inner = createManualClock(1_000);
  return {
    now: () => inner.now(),
    setTimeout: (fn, ms) => inner.setTimeout(fn, ms),
    clearTimeout: (t) => inner.clearTimeout(t),
    advance: (ms) => inner.advance(ms),
    runNext: () => inner.runNext(),
    pending: () => inner.pending(),
  };
}

describe('ManualClock', () => {
  it("a user's own clock without hold/park/busy is never busy: driveUntil moves it, holdClock is a no-op", async () => {
    const clock = usersOwnClock();
    let fired = false;
    clock.setTimeout(() => {
      fired = true;
    }, 5_000);
    holdClock(clock)();
    await driveUntil(clock, () => fired, { stepMs: 1_000, maxSimulatedMs: 10_000 });
    expect(fired).toBe(true);
    expect(clock.now()).toBe(6_000);
  });

  it("createManualClock's is busy while real work holds it and no simulated wait parks it", () => {
    const clock = createManualClock(0);
    expect(clock.busy?.()).toBe(false);
    const unhold = clock.hold?.();
    expect(clock.busy?.()).toBe(true);
    const unpark = clock.park?.();
    expect(clock.busy?.()).toBe(false);
    unpark?.();
    unhold?.();
    expect(clock.busy?.()).toBe(false);
  });
});
