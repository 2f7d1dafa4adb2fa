import { describe, expect, it } from 'vitest';
import { GEMINI_DAILY_RESET_ZONE, msUntilDailyReset } from '../../src/engines/wire/daily-quota-reset.ts';
import { readRateLimitState } from '../../src/engines/wire/rate-limit-headers.ts';
import { capRetryAfter, DEFAULT_MAX_RETRY_AFTER_MS } from '../../src/engines/wire/retry-after-cap.ts';

/*
 * Instants on the wire are wall-clock; a run's clock may be a scenario's, months away. These pin the
 * conversion (wall instant → distance from the wall now → the same distance on the run's clock), the
 * cap on provider-given waits, and the end of a provider's day.
 */

/** The run's clock: agent8-storm's `start:`, in the past. */
const RUN_NOW = Date.parse('2026-03-02T09:00:00+09:00');
/** The wall clock when the response arrived: ~9 months later. */
const WALL_NOW = Date.parse('2026-12-01T10:00:00Z');
const HOUR = 3_600_000;

describe('capRetryAfter', () => {
  it('keeps a wait at or under the cap, cuts a longer one and remembers what was asked', () => {
    expect(DEFAULT_MAX_RETRY_AFTER_MS).toBe(15 * 60_000);
    expect(capRetryAfter(7_000)).toEqual({ retryAfterMs: 7_000 });
    expect(capRetryAfter(DEFAULT_MAX_RETRY_AFTER_MS)).toEqual({ retryAfterMs: DEFAULT_MAX_RETRY_AFTER_MS });
    // The 274-day cooldown of issue 18.
    expect(capRetryAfter(23_678_666_615)).toEqual({ retryAfterMs: 900_000, cappedFromMs: 23_678_666_615 });
    expect(capRetryAfter(120_000, 60_000)).toEqual({ retryAfterMs: 60_000, cappedFromMs: 120_000 });
  });
});

describe('readRateLimitState places wall-clock resets on the run clock', () => {
  const iso = (ms: number) => new Date(ms).toISOString();

  it('an Anthropic reset 7 s after the wall now is 7 s after the run now, whatever the run clock says', () => {
    const state = readRateLimitState(
      'anthropic',
      new Headers({
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': iso(WALL_NOW + 7_000),
      }),
      RUN_NOW,
      { wallNow: WALL_NOW },
    );
    expect(state.requests).toEqual({ limit: 50, remaining: 0, resetAt: RUN_NOW + 7_000 });
  });

  it('a reset already past is now; an absurd one is held to the cap (default and per call)', () => {
    const headers = new Headers({
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': iso(WALL_NOW - 60_000),
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': iso(WALL_NOW + 274 * 24 * HOUR),
    });
    const state = readRateLimitState('anthropic', headers, RUN_NOW, { wallNow: WALL_NOW });
    expect(state.requests?.resetAt).toBe(RUN_NOW);
    expect(state.tokens?.resetAt).toBe(RUN_NOW + DEFAULT_MAX_RETRY_AFTER_MS);
    const tight = readRateLimitState('anthropic', headers, RUN_NOW, {
      wallNow: WALL_NOW,
      maxResetInMs: 30_000,
    });
    expect(tight.tokens?.resetAt).toBe(RUN_NOW + 30_000);
    // The cut is never silent: the longest wait asked for is kept.
    expect(state.cappedFromMs).toBe(274 * 24 * HOUR);
    expect(tight.cappedFromMs).toBe(274 * 24 * HOUR);
  });

  it('an HTTP-date retry-after is read against the wall now; Go-duration resets are capped too', () => {
    const state = readRateLimitState(
      'openai',
      new Headers({
        'retry-after': new Date(WALL_NOW + 9_000).toUTCString(),
        'x-ratelimit-remaining-tokens': '0',
        'x-ratelimit-reset-tokens': '2h0m0s',
        'x-ratelimit-reset-requests': '1.5s',
      }),
      RUN_NOW,
      { wallNow: WALL_NOW },
    );
    expect(state.retryAfterMs).toBe(9_000);
    expect(state.tokens?.resetAt).toBe(RUN_NOW + DEFAULT_MAX_RETRY_AFTER_MS);
    expect(state.requests?.resetAt).toBe(RUN_NOW + 1_500);
    expect(state.cappedFromMs).toBe(2 * HOUR);
    // Nothing past the cap: nothing said.
    const fine = readRateLimitState('openai', new Headers({ 'x-ratelimit-reset-requests': '1.5s' }), RUN_NOW);
    expect(fine.cappedFromMs).toBeUndefined();
  });

  it('without a separate wall now, the run clock is taken as the wall clock (a run on real time)', () => {
    const state = readRateLimitState(
      'anthropic',
      new Headers({ 'anthropic-ratelimit-requests-reset': iso(WALL_NOW + 5_000) }),
      WALL_NOW,
    );
    expect(state.requests?.resetAt).toBe(WALL_NOW + 5_000);
  });
});

describe('msUntilDailyReset (Gemini per-day quotas: midnight America/Los_Angeles)', () => {
  it('counts to the next Pacific midnight: PST, PDT, and across a month and a year end', () => {
    expect(GEMINI_DAILY_RESET_ZONE).toBe('America/Los_Angeles');
    // 22:30 PST on 1 March → 00:00 PST on 2 March.
    expect(msUntilDailyReset(Date.parse('2026-03-02T06:30:00Z'), 'America/Los_Angeles')).toBe(1.5 * HOUR);
    // 12:00 PDT on 17 August → 12 h.
    expect(msUntilDailyReset(Date.parse('2026-08-17T19:00:00Z'), 'America/Los_Angeles')).toBe(12 * HOUR);
    // 23:00 PST on 31 December → 00:00 on 1 January.
    expect(msUntilDailyReset(Date.parse('2027-01-01T07:00:00Z'), 'America/Los_Angeles')).toBe(HOUR);
  });

  it('a day with a DST change is as long as it is: 23 h on 8 March 2026, 25 h on 1 November', () => {
    expect(msUntilDailyReset(Date.parse('2026-03-08T08:00:00Z'), 'America/Los_Angeles')).toBe(23 * HOUR);
    expect(msUntilDailyReset(Date.parse('2026-11-01T07:00:00Z'), 'America/Los_Angeles')).toBe(25 * HOUR);
  });

  it('at midnight exactly the next reset is a whole day away, never 0', () => {
    expect(msUntilDailyReset(Date.parse('2026-08-17T07:00:00Z'), 'America/Los_Angeles')).toBe(24 * HOUR);
  });
});
