import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDuration, formatZonedDateTime } from '../../src/clock/format-time.ts';

/* Time as text has one owner: each form the product prints, as it printed it before the copies were merged. */

describe('time as text', () => {
  it('an instant in a zone reads as YYYY-MM-DD HH:MM:SS there, as Intl writes it (fast-check, fixed seed)', () => {
    const zones = [
      'UTC',
      'Asia/Seoul',
      'America/New_York',
      'Europe/Berlin',
      'Australia/Lord_Howe',
      'Asia/Kolkata',
    ];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), fc.constantFrom(...zones), (t, zone) => {
        const intl = new Intl.DateTimeFormat('sv-SE', {
          timeZone: zone,
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
          second: '2-digit',
        }).format(new Date(t));
        expect(formatZonedDateTime(t, zone)).toBe(intl);
      }),
      { seed: 42, numRuns: 300 },
    );
    expect(formatZonedDateTime(Date.parse('2026-08-16T22:30:00Z'), 'Asia/Seoul')).toBe('2026-08-17 07:30:00');
    expect(formatZonedDateTime(Date.parse('2026-08-16T22:30:00.045Z'), 'UTC', { milliseconds: true })).toBe(
      '2026-08-16 22:30:00.045',
    );
  });

  it('a duration in each style', () => {
    expect([42_000, 185_000, 7_620_000].map((ms) => formatDuration(ms, 'compact'))).toEqual([
      '42s',
      '3m 5s',
      '2h 7m',
    ]);
    expect([850, 4_200, 38_000, 720_000, 7_200_000].map((ms) => formatDuration(ms, 'short'))).toEqual([
      '850ms',
      '4.2s',
      '38s',
      '12m',
      '2h',
    ]);
    expect([42_000, 185_000, -1].map((ms) => formatDuration(ms, 'spaced'))).toEqual([
      '42 s',
      '3 min 5 s',
      '—',
    ]);
    expect([7_200_000, 120_000, 90_000, 1_500].map((ms) => formatDuration(ms, 'exact'))).toEqual([
      '2 h',
      '2 min',
      '90 s',
      '1500 ms',
    ]);
  });
});
