import { describe, expect, it } from 'vitest';
import {
  parseGoDuration,
  parseProtoDuration,
  parseRetryAfterValue,
  parseRfc3339,
  retryAfterFromHeaders,
  retryAfterFromText,
} from '../../src/engines/wire/retry-after.ts';

describe('parseGoDuration (OpenAI x-ratelimit-reset-*)', () => {
  it.each([
    ['12ms', 12],
    ['1s', 1_000],
    ['17.28s', 17_280],
    ['6m0s', 360_000],
    ['2m59.56s', 179_560],
    ['1h2m3.5s', 3_723_500],
    ['0', 0],
    ['0s', 0],
    ['5m', 300_000],
    ['1.5h', 5_400_000],
    ['1m30s', 90_000],
    ['250us', 1],
    ['250µs', 1],
    ['1500000ns', 2],
    ['.5s', 500],
    [' 1s ', 1_000],
  ])('%s → %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  it.each(['', 'soon', '1', '1x', 's', '1s2', '-1s', '1 s', '1sm', 'ms', '1h-2m'])('rejects %j', (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});

describe('parseProtoDuration (Gemini RetryInfo.retryDelay)', () => {
  it.each([
    ['47s', 47_000],
    ['53s', 53_000],
    ['1.203608125s', 1_204],
    ['57.238747106s', 57_239],
    ['0s', 0],
    ['0.000000001s', 1],
  ])('%s → %d ms', (text, ms) => {
    expect(parseProtoDuration(text)).toBe(ms);
  });

  it.each(['', '47', '1m', '1.5ms', 's', 'abc', '-1s'])('rejects %j', (text) => {
    expect(parseProtoDuration(text)).toBeUndefined();
  });
});

describe('retryAfterFromText (delays inside error messages)', () => {
  it.each([
    ['You exceeded your current quota … Please retry in 53.016342224s.', 53_017],
    ['Rate limit reached for o4-mini … Please try again in 1.574s. Visit https://platform.openai.com', 1_574],
    ['Rate limit reached … Please try again in 20ms.', 20],
    ['Rate limit reached … Please try again in 6m0s.', 360_000],
    ['Rate limit reached … Please try again in 1m30.5s.', 90_500],
    ['Too many requests, please try again in 30 seconds', 30_000],
    ['Quota hit; retry after 2 minutes', 120_000],
    ['Slow down and retry in 1 hour', 3_600_000],
    ['try again in 500 milliseconds', 500],
  ])('%s → %d ms', (text, ms) => {
    expect(retryAfterFromText(text)).toBe(ms);
  });

  it.each([
    'The model is overloaded. Please try again later.',
    'Resource has been exhausted (e.g. check quota).',
    'Internal server error',
    '',
    'in 5s',
  ])('finds nothing in %j', (text) => {
    expect(retryAfterFromText(text)).toBeUndefined();
  });
});

describe('parseRetryAfterValue and parseRfc3339', () => {
  const now = Date.parse('2026-10-21T07:27:30Z');

  it('reads integer and decimal seconds', () => {
    expect(parseRetryAfterValue('12', now)).toBe(12_000);
    expect(parseRetryAfterValue('0.25', now)).toBe(250);
    expect(parseRetryAfterValue(' 3 ', now)).toBe(3_000);
  });

  it('reads an HTTP-date relative to now, and a past date as 0', () => {
    expect(parseRetryAfterValue('Wed, 21 Oct 2026 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfterValue('Wed, 21 Oct 2026 07:00:00 GMT', now)).toBe(0);
  });

  it('rejects garbage and negative numbers', () => {
    expect(parseRetryAfterValue('soon', now)).toBeUndefined();
    expect(parseRetryAfterValue('-5', now)).toBeUndefined();
    expect(parseRetryAfterValue('', now)).toBeUndefined();
    expect(parseRetryAfterValue('Foo, 99 Bar 2026', now)).toBeUndefined();
  });

  it('parses RFC 3339 instants and refuses non-dates', () => {
    expect(parseRfc3339('2025-08-21T12:40:59Z')).toBe(Date.UTC(2025, 7, 21, 12, 40, 59));
    expect(parseRfc3339('2025-08-21T12:40:59.500+02:00')).toBe(Date.UTC(2025, 7, 21, 10, 40, 59, 500));
    expect(parseRfc3339('1755780059')).toBeUndefined();
    expect(parseRfc3339('2025-08-21')).toBeUndefined();
    expect(parseRfc3339('2025-13-45T99:99:99Z')).toBeUndefined();
  });
});

describe('retryAfterFromHeaders: retry-after-ms → retry-after → x-ratelimit-reset-* → anthropic-ratelimit-*-reset', () => {
  const now = Date.parse('2025-08-21T12:40:29Z');
  const h = (init: Record<string, string>) => new Headers(init);

  it('prefers retry-after-ms over everything', () => {
    expect(
      retryAfterFromHeaders(
        h({
          'retry-after-ms': '300',
          'retry-after': '12',
          'x-ratelimit-remaining-tokens': '0',
          'x-ratelimit-reset-tokens': '6m0s',
        }),
        now,
      ),
    ).toBe(300);
    expect(retryAfterFromHeaders(h({ 'retry-after-ms': '12.5' }), now)).toBe(13);
  });

  it('then retry-after: seconds, decimal seconds, HTTP-date', () => {
    expect(retryAfterFromHeaders(h({ 'retry-after': '12' }), now)).toBe(12_000);
    expect(retryAfterFromHeaders(h({ 'retry-after': '1.5' }), now)).toBe(1_500);
    expect(retryAfterFromHeaders(h({ 'retry-after': 'Thu, 21 Aug 2025 12:41:29 GMT' }), now)).toBe(60_000);
  });

  it('falls through an unreadable retry-after-ms', () => {
    expect(retryAfterFromHeaders(h({ 'retry-after-ms': 'soon', 'retry-after': '2' }), now)).toBe(2_000);
  });

  it('then OpenAI resets, only for a dimension whose remaining is 0, taking the later one', () => {
    const base = {
      'x-ratelimit-remaining-requests': '59',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '17.28s',
    };
    expect(retryAfterFromHeaders(h(base), now)).toBe(17_280);
    expect(
      retryAfterFromHeaders(
        h({ ...base, 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '2m59.56s' }),
        now,
      ),
    ).toBe(179_560);
    expect(
      retryAfterFromHeaders(h({ ...base, 'x-ratelimit-remaining-tokens': '149984' }), now),
    ).toBeUndefined();
  });

  it('then Anthropic RFC 3339 resets, only where remaining is 0', () => {
    const headers = h({
      'anthropic-ratelimit-requests-remaining': '999',
      'anthropic-ratelimit-requests-reset': '2025-08-21T12:45:00Z',
      'anthropic-ratelimit-input-tokens-remaining': '0',
      'anthropic-ratelimit-input-tokens-reset': '2025-08-21T12:40:59Z',
      'anthropic-ratelimit-output-tokens-remaining': '0',
      'anthropic-ratelimit-output-tokens-reset': '2025-08-21T12:40:39Z',
    });
    expect(retryAfterFromHeaders(headers, now)).toBe(30_000);
  });

  it('a reset already past waits 0, not a negative time', () => {
    const headers = h({
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': '2025-08-21T12:00:00Z',
    });
    expect(retryAfterFromHeaders(headers, now)).toBe(0);
  });

  it('says nothing when the headers say nothing', () => {
    expect(retryAfterFromHeaders(h({}), now)).toBeUndefined();
    expect(
      retryAfterFromHeaders(h({ 'x-should-retry': 'true', 'request-id': 'req_1' }), now),
    ).toBeUndefined();
    expect(
      retryAfterFromHeaders(
        h({ 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': 'later' }),
        now,
      ),
    ).toBeUndefined();
  });
});
