import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { createSeededRandom } from './seeded-random.ts';
import { TokenBucket } from '../../src/resilience/token-bucket.ts';

/** The largest number of takes inside any window `(t - windowMs, t]`. */
function maxInAnyWindow(times: readonly number[], windowMs: number): number {
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while (times[lo]! <= times[hi]! - windowMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

describe('TokenBucket', () => {
  it('paces 120 requests at 60/min so that no sliding minute holds more than 60', () => {
    const clock = createManualClock(0);
    const bucket = new TokenBucket({ capacity: 60 });
    const taken: number[] = [];
    while (taken.length < 120) {
      const wait = bucket.waitTime(1, clock.now());
      if (wait > 0) clock.advance(wait);
      expect(bucket.tryTake(1, clock.now())).toBe(true);
      taken.push(clock.now());
    }
    expect(maxInAnyWindow(taken, 60_000)).toBe(60);
    // A full burst is allowed after a quiet minute, and the second 60 wait for the first to leave.
    expect(taken[59]).toBe(0);
    expect(taken[60]).toBe(60_000);
  });

  it('holds the sliding-window guarantee under irregular arrivals and mixed costs', () => {
    const random = createSeededRandom(42);
    const clock = createManualClock(1_000_000);
    const bucket = new TokenBucket({ capacity: 10_000 });
    const takes: Array<{ at: number; cost: number }> = [];
    for (let i = 0; i < 2_000; i++) {
      clock.advance(Math.floor(random() * 3_000));
      const cost = 200 + Math.floor(random() * 2_000);
      if (bucket.tryTake(cost, clock.now())) takes.push({ at: clock.now(), cost });
    }
    expect(takes.length).toBeGreaterThan(100);
    for (const { at } of takes) {
      const inWindow = takes.filter((t) => t.at > at - 60_000 && t.at <= at).reduce((n, t) => n + t.cost, 0);
      expect(inWindow).toBeLessThanOrEqual(10_000);
    }
  });

  it('waitTime says exactly when the units come back', () => {
    const clock = createManualClock(0);
    const bucket = new TokenBucket({ capacity: 3, windowMs: 1_000 });
    bucket.tryTake(1, 0);
    clock.advance(200);
    bucket.tryTake(2, clock.now());
    expect(bucket.tryTake(1, clock.now())).toBe(false);
    expect(bucket.waitTime(1, clock.now())).toBe(800); // the unit taken at 0 leaves at 1000
    expect(bucket.waitTime(2, clock.now())).toBe(1_000); // then the 2 taken at 200 must leave too
    expect(bucket.tryTake(1, 999)).toBe(false);
    expect(bucket.tryTake(1, 1_000)).toBe(true);
  });

  it('clamps a cost above the capacity instead of never fitting', () => {
    const bucket = new TokenBucket({ capacity: 100 });
    expect(bucket.waitTime(500, 0)).toBe(0);
    expect(bucket.tryTake(500, 0)).toBe(true);
    expect(bucket.state(0)).toEqual({ capacity: 100, available: 0 });
    const wait = bucket.waitTime(500, 1);
    expect(Number.isFinite(wait)).toBe(true);
    expect(wait).toBe(59_999);
  });

  it('a bucket with unknown capacity never blocks', () => {
    const bucket = new TokenBucket();
    for (let i = 0; i < 10_000; i++) expect(bucket.tryTake(1_000, 0)).toBe(true);
    expect(bucket.waitTime(1e9, 0)).toBe(0);
    expect(bucket.capacity).toBeUndefined();
    expect(bucket.state(0)).toEqual({});
  });

  it('the first header gives an unknown bucket its capacity and its remaining units', () => {
    const bucket = new TokenBucket();
    bucket.observe({ limit: 50, remaining: 10 }, 0);
    expect(bucket.state(0)).toEqual({ capacity: 50, available: 10 });
    for (let i = 0; i < 10; i++) expect(bucket.tryTake(1, 1)).toBe(true);
    expect(bucket.tryTake(1, 1)).toBe(false);
  });

  it('header correction lowers the tokens, and never raises them', () => {
    const bucket = new TokenBucket({ capacity: 60 });
    bucket.tryTake(5, 0);
    expect(bucket.state(0).available).toBe(55);
    bucket.observe({ remaining: 20 }, 100);
    expect(bucket.state(100).available).toBe(20);
    bucket.observe({ remaining: 59 }, 200); // stale or optimistic: ignored
    expect(bucket.state(200).available).toBe(20);
    // The correction leaves the window like real usage would.
    expect(bucket.state(60_100).available).toBe(60);
  });

  it('a header limit replaces the configured capacity', () => {
    const bucket = new TokenBucket({ capacity: 1_000 });
    bucket.observe({ limit: 40 }, 0);
    expect(bucket.capacity).toBe(40);
    for (let i = 0; i < 40; i++) bucket.tryTake(1, 0);
    expect(bucket.tryTake(1, 0)).toBe(false);
  });

  it('remaining 0 with resetAt holds everything until resetAt, then the window is full again', () => {
    const clock = createManualClock(0);
    const bucket = new TokenBucket({ capacity: 60 });
    bucket.tryTake(1, 0);
    bucket.observe({ limit: 60, remaining: 0, resetAt: 20_000 }, 0);
    expect(bucket.tryTake(1, 0)).toBe(false);
    expect(bucket.waitTime(1, 0)).toBe(20_000);
    clock.advance(19_999);
    expect(bucket.tryTake(1, clock.now())).toBe(false);
    expect(bucket.waitTime(1, clock.now())).toBe(1);
    expect(bucket.state(clock.now())).toEqual({ capacity: 60, available: 0, holdUntil: 20_000 });
    clock.advance(1);
    expect(bucket.state(clock.now())).toEqual({ capacity: 60, available: 60 });
    expect(bucket.tryTake(60, clock.now())).toBe(true);
  });

  it('remaining 0 holds even a bucket whose capacity is unknown', () => {
    const bucket = new TokenBucket();
    bucket.observe({ remaining: 0, resetAt: 5_000 }, 0);
    expect(bucket.waitTime(1, 1_000)).toBe(4_000);
    expect(bucket.tryTake(1, 4_999)).toBe(false);
    expect(bucket.tryTake(1, 5_000)).toBe(true);
  });

  it('a resetAt in the past does not hold', () => {
    const bucket = new TokenBucket({ capacity: 10 });
    bucket.observe({ remaining: 0, resetAt: 500 }, 1_000);
    expect(bucket.state(1_000)).toEqual({ capacity: 10, available: 0 });
    expect(bucket.waitTime(1, 1_000)).toBe(60_000);
  });

  it('refund gives back unused units but never more than the capacity', () => {
    const bucket = new TokenBucket({ capacity: 10_000 });
    bucket.tryTake(4_000, 0);
    bucket.refund(3_000, 10);
    expect(bucket.state(10).available).toBe(9_000);
    bucket.refund(50_000, 20);
    expect(bucket.state(20).available).toBe(10_000);
  });

  it('charge records usage above the estimate, overdrawing the window', () => {
    const bucket = new TokenBucket({ capacity: 1_000 });
    bucket.tryTake(800, 0);
    bucket.charge(500, 10);
    expect(bucket.state(10).available).toBe(0);
    expect(bucket.tryTake(1, 10)).toBe(false);
    expect(bucket.waitTime(1, 10)).toBe(59_990); // 300 over: the 800 taken at 0 must leave first
  });

  it('time never runs backwards inside a bucket', () => {
    const bucket = new TokenBucket({ capacity: 1, windowMs: 1_000 });
    bucket.tryTake(1, 5_000);
    expect(bucket.tryTake(1, 100)).toBe(false);
    expect(bucket.waitTime(1, 100)).toBe(1_000);
  });

  it('rejects a bad capacity or window with a ConfigError', () => {
    for (const options of [{ capacity: 0 }, { capacity: Number.NaN }, { windowMs: -1 }]) {
      let caught: unknown;
      try {
        new TokenBucket(options);
      } catch (e) {
        caught = e;
      }
      expect(isConfigError(caught)).toBe(true);
    }
  });
});
