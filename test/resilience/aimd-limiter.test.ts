import { describe, expect, it } from 'vitest';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { AimdLimiter } from '../../src/resilience/aimd-limiter.ts';

/** Fills the limiter, then releases every held slot with the outcome the endpoint would give. */
function round(limiter: AimdLimiter, outcomeFor: (inFlight: number) => 'success' | 'overload'): number {
  let held = 0;
  while (limiter.tryAcquire()) held++;
  const outcome = outcomeFor(held);
  for (let i = 0; i < held; i++) limiter.release(outcome);
  return held;
}

describe('AimdLimiter', () => {
  it('starts at max and admits exactly limit calls', () => {
    const limiter = new AimdLimiter({ max: 4 });
    expect(limiter.limit).toBe(4);
    expect([1, 2, 3, 4, 5].map(() => limiter.tryAcquire())).toEqual([true, true, true, true, false]);
    expect(limiter.inFlight).toBe(4);
    limiter.release('other');
    expect(limiter.inFlight).toBe(3);
    expect(limiter.limit).toBe(4);
  });

  it('halves on overload, and a burst of overloads from one window counts once', () => {
    const limiter = new AimdLimiter({ max: 8 });
    for (let i = 0; i < 8; i++) limiter.tryAcquire();
    for (let i = 0; i < 8; i++) limiter.release('overload');
    expect(limiter.limit).toBe(4); // not 8 · 0.5^8 → 1
    limiter.tryAcquire();
    limiter.release('overload');
    expect(limiter.limit).toBe(2); // the next window's overload decreases again
  });

  it('never goes below min', () => {
    const limiter = new AimdLimiter({ max: 16, min: 2 });
    for (let i = 0; i < 50; i++) {
      limiter.tryAcquire();
      limiter.release('overload');
    }
    expect(limiter.limit).toBe(2);
  });

  it('increases by about one per limit successes, never above max', () => {
    const limiter = new AimdLimiter({ max: 10, initial: 4 });
    round(limiter, () => 'success'); // 4 successes at limit ~4: +~1
    expect(limiter.limit).toBe(4);
    expect(limiter.state().value).toBeGreaterThan(4.9);
    for (let i = 0; i < 50; i++) round(limiter, () => 'success');
    expect(limiter.limit).toBe(10);
    expect(limiter.state().value).toBeLessThanOrEqual(10);
    for (let i = 0; i < 1_000; i++) {
      expect(limiter.tryAcquire()).toBe(true);
      limiter.release('success');
    }
    expect(limiter.limit).toBe(10);
  });

  it('converges near the endpoint capacity and never admits more than max', () => {
    // The endpoint accepts 6 concurrent calls; above that every call in the round is rejected.
    const limiter = new AimdLimiter({ max: 20, initial: 20 });
    const heldPerRound: number[] = [];
    for (let r = 0; r < 200; r++) {
      heldPerRound.push(round(limiter, (n) => (n > 6 ? 'overload' : 'success')));
    }
    expect(Math.max(...heldPerRound)).toBeLessThanOrEqual(20);
    const late = heldPerRound.slice(100);
    // AIMD saw-tooth: between 6 · 0.5 and 7, never the initial 20 again.
    expect(Math.max(...late)).toBeLessThanOrEqual(7);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(3);
    const average = late.reduce((a, b) => a + b, 0) / late.length;
    expect(average).toBeGreaterThan(4.5);
  });

  it('a release without an acquire keeps inFlight at 0', () => {
    const limiter = new AimdLimiter({ max: 3 });
    limiter.release('other');
    expect(limiter.inFlight).toBe(0);
  });

  it('rejects bad options with a ConfigError', () => {
    const bad = [
      { max: 0 },
      { max: 4, min: 5 },
      { max: 4, initial: 9 },
      { max: 4, decreaseFactor: 1 },
      { max: 2.5 },
    ];
    for (const options of bad) {
      let caught: unknown;
      try {
        new AimdLimiter(options);
      } catch (e) {
        caught = e;
      }
      expect(isConfigError(caught)).toBe(true);
    }
  });
});
