import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fieldValues, formatField, shiftCron } from '../../src/planner/cron-shift.ts';
import { expandCron } from '../../src/planner/plan-jobs.ts';

const ZONE = 'Asia/Seoul';
const FROM = Date.parse('2026-08-17T00:00:00+09:00');
const MIN = 60_000;

describe('shiftCron', () => {
  it('moves minutes, carries into the hour, and keeps the rest of the expression', () => {
    expect(shiftCron('0,30 7-9 * * 1-5', 10)).toBe('10,40 7-9 * * 1-5');
    expect(shiftCron('50 7 * * *', 15)).toBe('5 8 * * *');
    expect(shiftCron('5 7 * * 1-5', -10)).toBe('55 6 * * 1-5');
    expect(shiftCron('*/2 * * * *', 1)).toBe('1-59/2 * * * *');
    expect(shiftCron('*/15 7-15 * * 1-5', 1)).toBe('1-46/15 7-15 * * 1-5');
    expect(shiftCron('0 30 7 * * *', 5)).toBe('0 35 7 * * *');
  });

  it('refuses a move one expression cannot say, or one that crosses midnight on a restricted day', () => {
    expect(shiftCron('0,30 7 * * 1-5', 40)).toBeUndefined();
    expect(shiftCron('50 23 * * 1-5', 15)).toBeUndefined();
    expect(shiftCron('55 23 L * *', 10)).toBeUndefined();
    expect(shiftCron('0 9 L * *', 5)).toBe('5 9 L * *');
  });

  it('field values and their shortest form round-trip', () => {
    expect(fieldValues('*/20', { min: 0, max: 59 })).toEqual([0, 20, 40]);
    expect(fieldValues('5/20', { min: 0, max: 59 })).toEqual([5, 25, 45]);
    expect(formatField([0, 20, 40], { min: 0, max: 59 })).toBe('*/20');
    expect(formatField([3, 4, 5], { min: 0, max: 59 })).toBe('3-5');
    expect(formatField([1, 7], { min: 0, max: 59 })).toBe('1,7');
  });

  it('a shifted cron fires exactly where the original fired, moved (random crons, fixed seed)', () => {
    const minuteField = fc.oneof(
      fc.integer({ min: 0, max: 59 }).map(String),
      fc.integer({ min: 2, max: 30 }).map((s) => `*/${s}`),
      fc.uniqueArray(fc.integer({ min: 0, max: 59 }), { minLength: 2, maxLength: 4 }).map((a) => a.join(',')),
    );
    const hourField = fc.oneof(
      fc.constant('*'),
      fc.integer({ min: 0, max: 23 }).map(String),
      fc
        .tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 3 }))
        .map(([a, n]) => `${a}-${a + n}`),
    );
    const dow = fc.constantFrom('*', '1-5', '0,6');
    fc.assert(
      fc.property(minuteField, hourField, dow, fc.integer({ min: -90, max: 90 }), (m, h, d, shift) => {
        const cron = `${m} ${h} * * ${d}`;
        const moved = shiftCron(cron, shift);
        if (moved === undefined) return;
        // Three days around a weekend, far enough from the edges for any shift.
        const from = FROM + 2 * 60 * MIN;
        const to = FROM + 3 * 24 * 60 * MIN;
        const want = expandCron(cron, ZONE, from - shift * MIN, to - shift * MIN).map((t) => t + shift * MIN);
        expect(expandCron(moved, ZONE, from, to)).toEqual(want);
      }),
      { seed: 20, numRuns: 300 },
    );
  });
});
