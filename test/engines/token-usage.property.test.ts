import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Usage } from '../../src/engines/engine-types.ts';
import {
  addUsage,
  bestInput,
  bestOutput,
  decodeUsage,
  describeUsage,
  NO_USAGE,
  pacingTokens,
  usageOf,
} from '../../src/engines/token-usage.ts';

/*
 * The arithmetic of usage over any mix of calls: a count stays what the providers reported, and is unknown (null)
 * as soon as one call did not report it, never a sum that hides a guess; the estimate is there exactly for the
 * unknown counts, and pacing (which may estimate) charges the same tokens however the calls are grouped.
 */

const count = fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined });
const callUsage: fc.Arbitrary<Usage> = fc
  .record({
    input: count,
    output: count,
    estIn: fc.integer({ min: 0, max: 100_000 }),
    estOut: fc.integer({ min: 0, max: 100_000 }),
  })
  .map((r) => usageOf(r.input, r.output, { inputTokens: r.estIn, outputTokens: r.estOut }));

describe('usage arithmetic', () => {
  it('a sum keeps reported counts exact, unknown as soon as one part is, the estimate apart', () => {
    fc.assert(
      fc.property(fc.array(callUsage, { maxLength: 12 }), (parts) => {
        const sum = parts.reduce(addUsage, NO_USAGE);
        const allInput = parts.every((u) => u.inputTokens !== null);
        const allOutput = parts.every((u) => u.outputTokens !== null);
        expect(sum.inputTokens).toBe(allInput ? parts.reduce((n, u) => n + u.inputTokens!, 0) : null);
        expect(sum.outputTokens).toBe(allOutput ? parts.reduce((n, u) => n + u.outputTokens!, 0) : null);
        expect(sum.source).toBe(
          allInput && allOutput ? 'reported' : !allInput && !allOutput ? 'unknown' : 'partial',
        );
        // The estimate exists exactly for the unknown counts, and estimates the whole of that count.
        expect(sum.estimated?.inputTokens).toBe(
          allInput ? undefined : parts.reduce((n, u) => n + bestInput(u), 0),
        );
        expect(sum.estimated?.outputTokens).toBe(
          allOutput ? undefined : parts.reduce((n, u) => n + bestOutput(u), 0),
        );
        if (allInput && allOutput) expect(sum.estimated).toBeUndefined();
        // Pacing charges every token once, reported or estimated, whatever the grouping.
        expect(pacingTokens(sum)).toBe(parts.reduce((n, u) => n + pacingTokens(u), 0));
        const half = Math.floor(parts.length / 2);
        const regrouped = addUsage(
          parts.slice(0, half).reduce(addUsage, NO_USAGE),
          parts.slice(half).reduce(addUsage, NO_USAGE),
        );
        expect(regrouped).toEqual(sum);
        // What is stored reads back the same.
        expect(decodeUsage(JSON.parse(JSON.stringify(sum)))).toEqual(sum);
        // A person never reads an unknown count as a number.
        const line = describeUsage(sum);
        if (sum.source !== 'reported') expect(line).toMatch(/unknown .*\(not reported; .*estimated\)$/);
        else expect(line).toBe(`${sum.inputTokens} input + ${sum.outputTokens} output tokens`);
      }),
      { seed: 31_2026, numRuns: 400 },
    );
  });

  it('a usage stored before the flag (two numbers) reads as reported; anything else as no usage', () => {
    expect(decodeUsage({ inputTokens: 12, outputTokens: 40 })).toEqual({
      inputTokens: 12,
      outputTokens: 40,
      source: 'reported',
    });
    for (const bad of [null, undefined, 7, 'x', {}, { inputTokens: -1, outputTokens: 2 }, { inputTokens: 1 }])
      expect(decodeUsage(bad)).toBeNull();
  });
});
