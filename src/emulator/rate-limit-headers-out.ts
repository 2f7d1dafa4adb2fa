import type { DimensionState, QuotaSnapshot } from './quota-windows.ts';

/**
 * Limits reported for a dimension the profile leaves unlimited. Real providers always report a
 * limit, so the headers say "a large tier" and count down from it; the emulator never enforces it.
 */
export const NOMINAL_LIMITS = Object.freeze({
  anthropic: { rpm: 4_000, itpm: 2_000_000, otpm: 400_000 },
  openai: { rpm: 10_000, tpm: 30_000_000 },
});

/** Go-style duration, as OpenAI's `x-ratelimit-reset-*` headers use: `12ms`, `1s`, `17.28s`, `6m0s`, `1h2m3.5s`. */
export function goDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = (total % 60_000) / 1000;
  const sec = `${Number(s.toFixed(3))}s`;
  if (h > 0) return `${h}h${m}m${sec}`;
  if (m > 0) return `${m}m${sec}`;
  return sec;
}

/** Seconds for `retry-after`: an integer when whole, else a decimal (`0.984`). */
export function retryAfterSeconds(realMs: number): string {
  const ms = Math.max(0, Math.ceil(realMs));
  return ms % 1000 === 0 ? String(ms / 1000) : String(Number((ms / 1000).toFixed(3)));
}

/** `retry-after` and `retry-after-ms` for a wait of `realMs`. */
export function retryAfterHeaders(realMs: number): Record<string, string> {
  return {
    'retry-after': retryAfterSeconds(realMs),
    'retry-after-ms': String(Math.max(0, Math.ceil(realMs))),
  };
}

/** RFC 3339 UTC, without a fraction when the time is a whole second (as Anthropic sends it). */
export function rfc3339(epochMs: number): string {
  return new Date(Math.ceil(epochMs)).toISOString().replace('.000Z', 'Z');
}

interface Reported {
  limit: number;
  remaining: number;
  resetInMs: number;
}

const report = (d: DimensionState, nominal: number): Reported => {
  const limit = d.limit ?? nominal;
  return { limit, remaining: Math.max(0, limit - d.used), resetInMs: d.resetInMs };
};

/**
 * Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`.
 * `toReal` converts emulated ms to real ms; `nowMs` is the wall clock's now (reset instants are
 * wall-clock on the wire, as Anthropic sends them).
 */
export function anthropicRateLimitHeaders(
  snap: QuotaSnapshot,
  toReal: (ms: number) => number,
  nowMs: number,
): Record<string, string> {
  const n = NOMINAL_LIMITS.anthropic;
  const requests = report(snap.rpm, n.rpm);
  const input = report(snap.itpm, n.itpm);
  const output = report(snap.otpm, n.otpm);
  // "tokens" is the most restrictive token limit currently in effect.
  const tokens =
    snap.tpm.limit !== null
      ? report(snap.tpm, 0)
      : input.remaining / input.limit <= output.remaining / output.limit
        ? input
        : output;
  const out: Record<string, string> = {};
  const put = (name: string, r: Reported) => {
    out[`anthropic-ratelimit-${name}-limit`] = String(r.limit);
    out[`anthropic-ratelimit-${name}-remaining`] = String(r.remaining);
    out[`anthropic-ratelimit-${name}-reset`] = rfc3339(nowMs + toReal(r.resetInMs));
  };
  put('requests', requests);
  put('tokens', tokens);
  put('input-tokens', input);
  put('output-tokens', output);
  return out;
}

/** OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` with Go-duration resets (real time). */
export function openaiRateLimitHeaders(
  snap: QuotaSnapshot,
  toReal: (ms: number) => number,
): Record<string, string> {
  const n = NOMINAL_LIMITS.openai;
  const requests = report(snap.rpm, n.rpm);
  const tokenDim = snap.tpm.limit !== null ? snap.tpm : snap.itpm.limit !== null ? snap.itpm : snap.tpm;
  const tokens = report(tokenDim, n.tpm);
  return {
    'x-ratelimit-limit-requests': String(requests.limit),
    'x-ratelimit-limit-tokens': String(tokens.limit),
    'x-ratelimit-remaining-requests': String(requests.remaining),
    'x-ratelimit-remaining-tokens': String(tokens.remaining),
    'x-ratelimit-reset-requests': goDuration(toReal(requests.resetInMs)),
    'x-ratelimit-reset-tokens': goDuration(toReal(tokens.resetInMs)),
  };
}
