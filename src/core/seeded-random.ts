/**
 * A tiny seeded PRNG (mulberry32) so that answers, latency and fault probabilities replay
 * identically for the same seed — a flaky emulator would make every test that uses it flaky.
 */

/** A source of uniform numbers in [0, 1). */
export interface SeededRandom {
  next(): number;
  /** Uniform integer in [min, max] (inclusive). */
  int(min: number, max: number): number;
}

/**
 * Creates a mulberry32 generator.
 *
 * @example
 * ```ts
 * const rng = createSeededRandom(42);
 * rng.next(); // same value on every run
 * ```
 */
export function createSeededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
  };
}

/** A 32-bit FNV-1a hash, used to derive per-content seeds (answers must not depend on call order). */
export function hash32(text: string, seed = 0): number {
  return hash32Of([text], seed);
}

/**
 * {@link hash32} of the parts joined, without joining them: a call's system prompt can be tens of KB, and a copy of it
 * per call only to hash it was garbage the size of every request.
 *
 * @example
 * ```ts
 * hash32Of(['a', 'b'], 7) === hash32('ab', 7); // true
 * ```
 */
export function hash32Of(parts: readonly string[], seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (const text of parts) {
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return h >>> 0;
}
