import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Usage } from '../../src/core/engine-types.ts';
import type { Fault } from '../../src/core/fault.ts';
import {
  addUsage,
  bestInput,
  bestOutput,
  decodeUsage,
  describeUsage,
  faultUsage,
  NO_USAGE,
  pacingTokens,
  usageOf,
} from '../../src/core/token-usage.ts';

/*
 * The arithmetic of usage over any mix of calls: a count is the sum of what the providers reported, unknown (null)
 * only when no call reported it, never a sum that hides a guess; the estimate covers exactly the calls that did not
 * report it (a turn whose primary was cut and whose backup answered keeps the backup's counts, flagged partial), and
 * pacing (which may estimate) charges the same tokens however the calls are grouped.
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
  it('a sum keeps the reported counts, null only when no part reported, the estimate of the rest apart', () => {
    fc.assert(
      fc.property(fc.array(callUsage, { maxLength: 12 }), (parts) => {
        const sum = parts.reduce(addUsage, NO_USAGE);
        const reportedSum = (k: 'inputTokens' | 'outputTokens') => parts.reduce((n, u) => n + (u[k] ?? 0), 0);
        const allOf = (k: 'inputTokens' | 'outputTokens') => parts.every((u) => u[k] !== null);
        // Unknown plus a reported 0 is unknown: a count is null while some call did not report it and the others
        // reported 0 of it (NO_USAGE, a turn's start, changes nothing).
        const known = (k: 'inputTokens' | 'outputTokens') => allOf(k) || reportedSum(k) > 0;
        expect(sum.inputTokens).toBe(known('inputTokens') ? reportedSum('inputTokens') : null);
        expect(sum.outputTokens).toBe(known('outputTokens') ? reportedSum('outputTokens') : null);
        const whole = allOf('inputTokens') && allOf('outputTokens');
        expect(sum.source).toBe(
          whole ? 'reported' : !known('inputTokens') && !known('outputTokens') ? 'unknown' : 'partial',
        );
        // The estimate exists exactly for the counts some call did not report, and covers those calls only.
        const estOf = (k: 'inputTokens' | 'outputTokens') =>
          parts.reduce((n, u) => n + (u[k] === null ? (u.estimated?.[k] ?? 0) : 0), 0);
        expect(sum.estimated?.inputTokens).toBe(allOf('inputTokens') ? undefined : estOf('inputTokens'));
        expect(sum.estimated?.outputTokens).toBe(allOf('outputTokens') ? undefined : estOf('outputTokens'));
        if (whole) expect(sum.estimated).toBeUndefined();
        expect(bestInput(sum)).toBe(parts.reduce((n, u) => n + bestInput(u), 0));
        expect(bestOutput(sum)).toBe(parts.reduce((n, u) => n + bestOutput(u), 0));
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
        if (sum.source === 'unknown') expect(line).toMatch(/^unknown .*\(not reported; .*estimated\)$/);
        else if (sum.source === 'partial')
          expect(line).toMatch(/\(not (all )?reported; .*estimated( for the rest)?\)$/);
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

  it('a failed call: a reported 0 when refused with a status or never sent, unknown when cut after it was sent', () => {
    const est = { inputTokens: 30, outputTokens: 3 };
    const unknown = { inputTokens: null, outputTokens: null, source: 'unknown', estimated: est };
    const f = (kind: Fault['kind'], extra: Partial<Fault> = {}): Fault => ({
      kind,
      provider: 'openai',
      message: 'm',
      ...extra,
    });
    for (const refused of [
      f('rate_limited', { status: 429 }),
      f('server_error', { status: 500 }),
      f('bad_request', { status: 400 }),
      f('network', { code: 'ECONNREFUSED' }),
      f('auth', { code: 'byok_expired' }),
      f('bad_request'),
    ])
      expect(faultUsage(refused, est)).toEqual(NO_USAGE);
    // A stall (no headers, a body that stopped), a dropped connection, an error event inside a 200 stream.
    for (const cut of [f('timeout'), f('network'), f('overloaded'), f('cancelled')])
      expect(faultUsage(cut, est)).toEqual(unknown);
  });
});
