import type { CallRecord, EmulatorKey, QuotaLimits } from '../../src/emulator/emulator-types.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';

/**
 * The quota lower bound on a scenario's makespan: no policy can finish its logical calls faster than
 * - requests ÷ ΣRPM,
 * - tokens ÷ ΣTPM,
 * - calls × mean latency ÷ concurrency,
 * summed over the endpoints the agents may use (every endpoint of every chain).
 *
 * Where an endpoint has no quota in a dimension, what it can take there follows from its other limits: a
 * local server without an RPM quota serves at most `maxNumSeqs ÷ mean latency` requests (vLLM's
 * `max_num_seqs`), and an endpoint without a token quota at most its request rate × tokens per call.
 * `concurrency` is the runtime's global concurrency limit (every call of every agent holds one of its tokens).
 * Credit is ignored (a generous bound: the primary pool dying only makes the true optimum later).
 */
export interface QuotaBound {
  readonly boundMs: number;
  readonly binding: 'requests' | 'tokens' | 'concurrency';
  readonly terms: { readonly requestsMs: number; readonly tokensMs: number; readonly concurrencyMs: number };
  readonly logicalCalls: number;
  readonly tokens: number;
  readonly sumRpm: number;
  readonly sumTpm: number;
  readonly meanLatencyMs: number;
  readonly concurrency: number;
  readonly endpoints: readonly { id: string; rpm: number; tpm: number; derived: readonly string[] }[];
}

function quotasFor(spec: ScenarioSpec, apiKey: string | undefined, model: string): QuotaLimits {
  const key: EmulatorKey | undefined = spec.emulator?.keys?.find((k) => k.key === apiKey);
  return key?.quotas?.models?.[model] ?? key?.quotas?.default ?? spec.emulator?.defaultQuotas ?? {};
}

/** Computes the bound for `logicalCalls` calls needing `tokens` tokens in all. */
export function quotaBound(spec: ScenarioSpec, logicalCalls: number, tokens: number): QuotaBound {
  const used = new Set(Object.values(spec.runtime.chains).flat());
  const latency = spec.emulator?.latency ?? {};
  const meanLatencyMs = ((latency.minMs ?? 0) + (latency.maxMs ?? latency.minMs ?? 0)) / 2;
  const tokensPerCall = logicalCalls > 0 ? tokens / logicalCalls : 0;
  const endpoints = spec.runtime.endpoints
    .filter((e) => used.has(e.id))
    .map((e) => {
      const q = quotasFor(spec, e.apiKey, e.model);
      const derived: string[] = [];
      let rpm = q.rpm ?? Number.POSITIVE_INFINITY;
      if (!Number.isFinite(rpm) && e.emulator === 'vllm') {
        const seqs = spec.emulator?.servers?.vllm?.maxNumSeqs;
        if (seqs && meanLatencyMs > 0) {
          rpm = (seqs * 60_000) / meanLatencyMs;
          derived.push(`rpm = maxNumSeqs ${seqs} ÷ mean latency ${meanLatencyMs} ms`);
        }
      }
      let tpm = q.tpm ?? (q.itpm != null || q.otpm != null ? (q.itpm ?? 0) + (q.otpm ?? 0) : undefined);
      if (tpm == null) {
        tpm = rpm * tokensPerCall;
        derived.push('tpm = rpm × tokens per call');
      } else if (q.tpm == null) derived.push('tpm = itpm + otpm');
      return { id: e.id, rpm, tpm, derived };
    });
  const sumRpm = endpoints.reduce((n, e) => n + e.rpm, 0);
  const sumTpm = endpoints.reduce((n, e) => n + e.tpm, 0);
  const concurrency = spec.runtime.concurrency?.limit ?? 3;
  const terms = {
    requestsMs: (logicalCalls / sumRpm) * 60_000,
    tokensMs: (tokens / sumTpm) * 60_000,
    concurrencyMs: (logicalCalls * meanLatencyMs) / concurrency,
  };
  const boundMs = Math.max(terms.requestsMs, terms.tokensMs, terms.concurrencyMs);
  const binding =
    boundMs === terms.concurrencyMs ? 'concurrency' : boundMs === terms.requestsMs ? 'requests' : 'tokens';
  return {
    boundMs,
    binding,
    terms,
    logicalCalls,
    tokens,
    sumRpm,
    sumTpm,
    meanLatencyMs,
    concurrency,
    endpoints,
  };
}

/**
 * Logical calls and the tokens they needed, from the emulator's call records: calls are grouped by
 * `logicalKey(idempotencyKey)` (retries of one logical call share it); each group's tokens are those of its
 * first 200; groups that never got one count the mean.
 */
export function logicalCallsOf(
  calls: readonly CallRecord[],
  logicalKey: (idempotencyKey: string) => string | undefined,
): { logicalCalls: number; tokens: number; answered: number } {
  const tokens = new Map<string, number | undefined>();
  for (const c of calls) {
    const key = c.idempotencyKey ? logicalKey(c.idempotencyKey) : undefined;
    if (key === undefined) continue;
    if (!tokens.has(key)) tokens.set(key, undefined);
    if (c.status === 200 && tokens.get(key) === undefined) tokens.set(key, c.inputTokens + c.outputTokens);
  }
  const known = [...tokens.values()].filter((t): t is number => t !== undefined);
  const mean = known.length > 0 ? known.reduce((a, b) => a + b, 0) / known.length : 0;
  let total = 0;
  for (const t of tokens.values()) total += t ?? mean;
  return { logicalCalls: tokens.size, tokens: total, answered: known.length };
}
