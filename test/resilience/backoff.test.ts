import { describe, expect, it } from 'vitest';
import { backoffDelay, retryDelay } from '../../src/resilience/backoff.ts';
import { createSeededRandom } from './seeded-random.ts';

describe('backoffDelay', () => {
  it('is uniform in [0, min(max, base · 2^attempt)] (full jitter)', () => {
    expect(backoffDelay(0, { random: () => 0 })).toBe(0);
    expect(backoffDelay(0, { random: () => 0.999_999_9 })).toBe(500);
    expect(backoffDelay(3, { random: () => 0.5 })).toBe(2_000);
    expect(backoffDelay(3, { baseMs: 100, random: () => 0.25 })).toBe(200);
    expect(backoffDelay(10, { random: () => 0.999_999_9 })).toBe(30_000); // 512 000 capped at 30 000
    expect(backoffDelay(5_000, { random: () => 0.5 })).toBe(15_000); // no overflow to NaN/Infinity
    expect(backoffDelay(4, { maxMs: 1_000, random: () => 1 })).toBe(1_000);
  });

  it('is deterministic for an injected random and spreads a herd', () => {
    const a = Array.from({ length: 8 }, (_, i) => backoffDelay(i, { random: createSeededRandom(1) }));
    const b = Array.from({ length: 8 }, (_, i) => backoffDelay(i, { random: createSeededRandom(1) }));
    expect(a).toEqual(b);
    const rng = createSeededRandom(99);
    const herd = Array.from({ length: 100 }, () => backoffDelay(4, { random: rng }));
    for (const d of herd) {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(8_000);
    }
    // Eight agents that failed together do not come back together.
    expect(new Set(herd).size).toBeGreaterThan(90);
  });

  it('treats a negative or fractional attempt as its floor, at least 0', () => {
    expect(backoffDelay(-3, { random: () => 0.5 })).toBe(250);
    expect(backoffDelay(2.7, { random: () => 0.5 })).toBe(1_000);
  });
});

describe('retryDelay', () => {
  it('honours Retry-After: never earlier than the provider said', () => {
    expect(retryDelay({ retryAfterMs: 20_000 }, 0, { random: () => 0.9 })).toBe(20_000);
    expect(retryDelay({ retryAfterMs: 100 }, 3, { random: () => 0.5 })).toBe(2_000);
    expect(retryDelay({}, 1, { random: () => 0.5 })).toBe(500);
    const rng = createSeededRandom(3);
    for (let attempt = 0; attempt < 20; attempt++) {
      expect(retryDelay({ retryAfterMs: 7_000 }, attempt, { random: rng })).toBeGreaterThanOrEqual(7_000);
    }
  });
});
