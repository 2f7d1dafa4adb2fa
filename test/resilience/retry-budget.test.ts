import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { RetryBudget } from '../../src/resilience/retry-budget.ts';
import { createSeededRandom } from './seeded-random.ts';

describe('RetryBudget', () => {
  it('under 100 % failure, retries never exceed max(min, ratio × calls) in the window ending at any granted retry', () => {
    const random = createSeededRandom(7);
    const clock = createManualClock(0);
    const budget = new RetryBudget({ ratio: 0.2, windowMs: 60_000, minRetriesPerWindow: 3 });
    const calls: number[] = [];
    const retries: number[] = [];
    let denied = 0;
    // Ten minutes of a storm: every call fails and every failure asks for up to 3 retries.
    while (clock.now() < 600_000) {
      clock.advance(Math.floor(random() * 2_000));
      budget.recordCall(clock.now());
      calls.push(clock.now());
      for (let attempt = 0; attempt < 3; attempt++) {
        clock.advance(Math.floor(random() * 300));
        if (!budget.tryRetry(clock.now())) {
          denied++;
          break;
        }
        retries.push(clock.now());
      }
    }
    const inWindow = (times: number[], t: number) => times.filter((x) => x > t - 60_000 && x <= t).length;
    for (const t of retries) {
      expect(inWindow(retries, t)).toBeLessThanOrEqual(Math.max(3, Math.floor(0.2 * inWindow(calls, t))));
    }
    // Overall the storm added at most ratio × calls (+ the per-window minimum), not 3 × calls.
    const windows = Math.ceil(600_000 / 60_000);
    expect(retries.length).toBeLessThanOrEqual(0.2 * calls.length + 3 * windows);
    expect(retries.length / calls.length).toBeLessThan(0.3);
    expect(denied).toBeGreaterThan(0);
  });

  it('allows the minimum on a quiet endpoint, then refuses', () => {
    const budget = new RetryBudget({ minRetriesPerWindow: 3 });
    budget.recordCall(0);
    expect([budget.tryRetry(1), budget.tryRetry(2), budget.tryRetry(3), budget.tryRetry(4)]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(budget.state(4)).toEqual({ calls: 1, retries: 3, allowed: 3 });
  });

  it('grows with traffic: 50 calls at ratio 0.2 fund 10 retries', () => {
    const budget = new RetryBudget({ ratio: 0.2, minRetriesPerWindow: 0 });
    for (let i = 0; i < 50; i++) budget.recordCall(i);
    let granted = 0;
    while (budget.tryRetry(100)) granted++;
    expect(granted).toBe(10);
  });

  it('retries and calls leave the window, so the budget recovers', () => {
    const budget = new RetryBudget({ ratio: 0, minRetriesPerWindow: 2, windowMs: 10_000 });
    expect(budget.tryRetry(0)).toBe(true);
    expect(budget.tryRetry(5_000)).toBe(true);
    expect(budget.tryRetry(9_999)).toBe(false);
    expect(budget.tryRetry(10_000)).toBe(true); // the retry at 0 left the window
    expect(budget.tryRetry(10_001)).toBe(false);
  });

  it('a retry never funds another retry', () => {
    const budget = new RetryBudget({ ratio: 1, minRetriesPerWindow: 0 });
    budget.recordCall(0);
    expect(budget.tryRetry(1)).toBe(true);
    expect(budget.tryRetry(2)).toBe(false);
  });

  it('rejects bad options with a ConfigError', () => {
    for (const options of [{ ratio: -0.1 }, { windowMs: 0 }, { minRetriesPerWindow: 1.5 }]) {
      expect(() => new RetryBudget(options)).toThrow(/RetryBudget/);
      try {
        new RetryBudget(options);
      } catch (e) {
        expect(isConfigError(e)).toBe(true);
      }
    }
  });
});
