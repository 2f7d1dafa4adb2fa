/**
 * "When may I come back?" — read from every place a provider says it: the `retry-after-ms` and
 * `retry-after` headers, OpenAI's `x-ratelimit-reset-*` Go durations, Anthropic's
 * `anthropic-ratelimit-*-reset` RFC 3339 instants, Gemini's protobuf `retryDelay`, and the
 * "Please try again in 1.574s" sentences inside error messages.
 *
 * Every function here is pure and total: malformed input gives `undefined`, never a throw.
 * Results are whole milliseconds rounded up, so a caller that waits exactly that long is never early.
 */

const GO_UNIT_MS: Readonly<Record<string, number>> = Object.freeze({
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  μs: 0.001,
  ns: 0.000_001,
});

// Longest units first inside the alternation so `ms` is not read as `m` + `s`.
const GO_PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|h|m|s)/y;

/** Rounds up to whole ms, forgiving float noise such as `1.574 * 1000 = 1574.0000000000002`. */
function ceilMs(ms: number): number {
  return Math.max(0, Math.ceil(ms - 1e-6));
}

/**
 * Parses a Go `time.Duration` string (OpenAI's `x-ratelimit-reset-*` format) into milliseconds.
 * Accepts every unit Go prints (`h`, `m`, `s`, `ms`, `us`/`µs`, `ns`), fractions, and the bare `0`.
 *
 * @returns the duration in whole ms (rounded up), or `undefined` when `text` is not a Go duration.
 * @example
 * ```ts
 * parseGoDuration('6m0s');      // 360000
 * parseGoDuration('2m59.56s');  // 179560
 * parseGoDuration('12ms');      // 12
 * parseGoDuration('soon');      // undefined
 * ```
 */
export function parseGoDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  if (s.length === 0) return undefined;
  let total = 0;
  GO_PART.lastIndex = 0;
  while (GO_PART.lastIndex < s.length) {
    const start = GO_PART.lastIndex;
    const m = GO_PART.exec(s);
    if (!m || m.index !== start) return undefined;
    total += Number(m[1]) * (GO_UNIT_MS[m[2] as string] as number);
  }
  return Number.isFinite(total) ? ceilMs(total) : undefined;
}

/**
 * Parses a protobuf JSON `Duration` (Gemini's `RetryInfo.retryDelay`): decimal seconds with an `s`
 * suffix, up to nanosecond precision.
 *
 * @returns whole ms (rounded up), or `undefined` when `text` is not a protobuf duration.
 * @example
 * ```ts
 * parseProtoDuration('47s');           // 47000
 * parseProtoDuration('1.203608125s');  // 1204
 * ```
 */
export function parseProtoDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)s\s*$/.exec(text);
  if (!m) return undefined;
  return ceilMs(Number(m[1]) * 1_000);
}

const TEXT_GO_DURATION =
  /\b(?:retry|try\s+again)\s+(?:in|after)\s+((?:(?:\d+(?:\.\d+)?)(?:ns|us|µs|ms|h|m|s))+)(?![a-z])/i;
const TEXT_WORD_DURATION =
  /\b(?:retry|try\s+again)\s+(?:in|after)\s+(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|minutes?|mins?|hours?)\b/i;

/**
 * Finds a retry delay written inside an error message, as Gemini (`Please retry in 53.016342224s.`)
 * and OpenAI (`Please try again in 1.574s.`, `… in 20ms`, `… in 6m0s`) write it.
 * Also reads the spelled-out form (`try again in 30 seconds`).
 *
 * @returns whole ms (rounded up), or `undefined` when the message names no delay.
 * @example
 * ```ts
 * retryAfterFromText('Rate limit reached … Please try again in 1.574s. Visit …'); // 1574
 * ```
 */
export function retryAfterFromText(message: string): number | undefined {
  const go = TEXT_GO_DURATION.exec(message);
  if (go) return parseGoDuration(go[1] as string);
  const word = TEXT_WORD_DURATION.exec(message);
  if (!word) return undefined;
  const n = Number(word[1]);
  const unit = (word[2] as string).toLowerCase();
  const factor = /^(?:ms|milli)/.test(unit)
    ? 1
    : unit.startsWith('h')
      ? 3_600_000
      : unit.startsWith('min')
        ? 60_000
        : 1_000;
  return ceilMs(n * factor);
}

/**
 * Parses an RFC 3339 / ISO 8601 instant (Anthropic's `anthropic-ratelimit-*-reset`) to epoch ms.
 * Only full date-times are accepted: a bare number is not a date here.
 *
 * @example
 * ```ts
 * parseRfc3339('2025-08-21T12:40:59Z'); // 1755780059000
 * ```
 */
export function parseRfc3339(text: string): number | undefined {
  const s = text.trim();
  if (!/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})$/.test(s))
    return undefined;
  const at = Date.parse(s.replace(' ', 'T'));
  return Number.isFinite(at) ? at : undefined;
}

/**
 * Reads a `retry-after` value: delta seconds (integer or decimal) or an HTTP-date.
 *
 * @returns ms from `now` (0 when the date is already past), or `undefined` when unreadable.
 * @example
 * ```ts
 * parseRetryAfterValue('12', now);                              // 12000
 * parseRetryAfterValue('Wed, 21 Oct 2026 07:28:00 GMT', now);   // ms until then
 * ```
 */
export function parseRetryAfterValue(value: string, now: number): number | undefined {
  const s = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(s)) return ceilMs(Number(s) * 1_000);
  // HTTP-date (IMF-fixdate and the two obsolete forms all contain a weekday or month name).
  if (!/[A-Za-z]{3}/.test(s)) return undefined;
  const at = Date.parse(s);
  return Number.isFinite(at) ? ceilMs(at - now) : undefined;
}

/**
 * Reads `retry-after-ms` then `retry-after`: the two headers the SDKs themselves honour.
 *
 * @returns ms from `now`, or `undefined` when neither header is present and readable.
 * @example
 * ```ts
 * retryAfterHeaderMs(new Headers({ 'retry-after-ms': '300', 'retry-after': '1' }), Date.now()); // 300
 * ```
 */
export function retryAfterHeaderMs(headers: Headers, now: number): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\s*\d+(?:\.\d+)?\s*$/.test(ms)) return ceilMs(Number(ms));
  const ra = headers.get('retry-after');
  return ra === null ? undefined : parseRetryAfterValue(ra, now);
}

function remainingIsZero(headers: Headers, name: string): boolean {
  const v = headers.get(name);
  return v !== null && v.trim() !== '' && Number(v) === 0;
}

/** The latest reset among OpenAI dimensions whose remaining is 0 (both must clear before a retry works). */
function openAiResetMs(headers: Headers): number | undefined {
  let best: number | undefined;
  for (const dim of ['requests', 'tokens']) {
    if (!remainingIsZero(headers, `x-ratelimit-remaining-${dim}`)) continue;
    const reset = headers.get(`x-ratelimit-reset-${dim}`);
    const ms = reset === null ? undefined : parseGoDuration(reset);
    if (ms !== undefined) best = Math.max(best ?? 0, ms);
  }
  return best;
}

const ANTHROPIC_DIMENSIONS = ['requests', 'tokens', 'input-tokens', 'output-tokens'] as const;

function anthropicResetMs(headers: Headers, now: number): number | undefined {
  let best: number | undefined;
  for (const dim of ANTHROPIC_DIMENSIONS) {
    if (!remainingIsZero(headers, `anthropic-ratelimit-${dim}-remaining`)) continue;
    const reset = headers.get(`anthropic-ratelimit-${dim}-reset`);
    const at = reset === null ? undefined : parseRfc3339(reset);
    if (at !== undefined) best = Math.max(best ?? 0, ceilMs(at - now));
  }
  return best;
}

/**
 * How long the response headers say to wait before retrying, in ms from `now`. Sources, first
 * match wins: `retry-after-ms` → `retry-after` (seconds, decimal seconds, or HTTP-date) → OpenAI
 * `x-ratelimit-reset-requests|tokens` (Go duration, only for a dimension whose remaining is 0) →
 * Anthropic `anthropic-ratelimit-*-reset` (RFC 3339, only for a dimension whose remaining is 0).
 *
 * @param now epoch ms the HTTP-date and RFC 3339 instants are measured from.
 * @returns ms to wait (≥ 0), or `undefined` when the headers say nothing.
 * @example
 * ```ts
 * retryAfterFromHeaders(new Headers({ 'retry-after': '12' }), Date.now()); // 12000
 * retryAfterFromHeaders(new Headers({ 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '6m0s' }), Date.now()); // 360000
 * ```
 */
export function retryAfterFromHeaders(headers: Headers, now: number): number | undefined {
  return retryAfterHeaderMs(headers, now) ?? openAiResetMs(headers) ?? anthropicResetMs(headers, now);
}
