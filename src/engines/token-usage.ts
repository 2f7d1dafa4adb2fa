import type { Usage, UsageSource } from './engine-types.ts';

/*
 * Token usage as the provider reported it, with breakwater's estimate of what it did not report kept apart. One
 * owner of the arithmetic, so the turn, the store, the report, the spans and the AI SDK read usage alike, and
 * nothing turns an estimate into a measured count on the way.
 */

/** An estimate: characters ÷ 4 (rounded up), the rule of thumb the providers quote for English text. */
export function estimateTokens(chars: number): number {
  return Math.ceil(Math.max(0, chars) / 4);
}

/**
 * A call's usage from the counts its provider reported (`undefined`/`null`: not reported) and breakwater's estimates
 * of both (used only for a count that is missing).
 *
 * @example
 * ```ts
 * usageOf(undefined, undefined, { inputTokens: 12, outputTokens: 40 });
 * // { inputTokens: null, outputTokens: null, source: 'unknown', estimated: { inputTokens: 12, outputTokens: 40 } }
 * ```
 */
export function usageOf(
  inputTokens: number | null | undefined,
  outputTokens: number | null | undefined,
  estimate: { readonly inputTokens: number; readonly outputTokens: number },
): Usage {
  const input = isCount(inputTokens) ? inputTokens : null;
  const output = isCount(outputTokens) ? outputTokens : null;
  const usage: Usage = { inputTokens: input, outputTokens: output, source: sourceOf(input, output) };
  if (input !== null && output !== null) return Object.freeze(usage);
  return Object.freeze({
    ...usage,
    estimated: Object.freeze({
      ...(input === null ? { inputTokens: estimate.inputTokens } : {}),
      ...(output === null ? { outputTokens: estimate.outputTokens } : {}),
    }),
  });
}

/** Both counts reported: `reportedUsage(12, 40)`. */
export function reportedUsage(inputTokens: number, outputTokens: number): Usage {
  return Object.freeze({ inputTokens, outputTokens, source: 'reported' });
}

/**
 * The usage of a turn that made no upstream call yet (or none at all: plain code, a degraded answer): nothing was
 * sent, so nothing was used, and that is known.
 */
export const NO_USAGE: Usage = reportedUsage(0, 0);

/**
 * Two usages together (a turn's calls): a count is known only when both are; an unknown one's estimate is the
 * known parts plus the estimates of the others, so it estimates the whole.
 *
 * @example
 * ```ts
 * addUsage(reportedUsage(10, 5), usageOf(10, undefined, { inputTokens: 9, outputTokens: 7 }));
 * // { inputTokens: 20, outputTokens: null, source: 'partial', estimated: { outputTokens: 12 } }
 * ```
 */
export function addUsage(a: Usage, b: Usage): Usage {
  const input = a.inputTokens !== null && b.inputTokens !== null ? a.inputTokens + b.inputTokens : null;
  const output = a.outputTokens !== null && b.outputTokens !== null ? a.outputTokens + b.outputTokens : null;
  return usageOf(input, output, {
    inputTokens: bestInput(a) + bestInput(b),
    outputTokens: bestOutput(a) + bestOutput(b),
  });
}

/** Input tokens to pace with: the reported count, else the estimate. Never shown as measured. */
export function bestInput(u: Usage): number {
  return u.inputTokens ?? u.estimated?.inputTokens ?? 0;
}

/** Output tokens to pace with: the reported count, else the estimate. Never shown as measured. */
export function bestOutput(u: Usage): number {
  return u.outputTokens ?? u.estimated?.outputTokens ?? 0;
}

/**
 * The tokens a call used as far as pacing (TPM accounting) needs them: the reported counts where there are some,
 * the estimates elsewhere. Pacing may estimate; reports must not, and read the counts instead.
 *
 * @example
 * ```ts
 * bucket.refund(reserved - pacingTokens(result.usage), now);
 * ```
 */
export function pacingTokens(u: Usage): number {
  return bestInput(u) + bestOutput(u);
}

/** Which counts are the provider's. */
export function sourceOf(inputTokens: number | null, outputTokens: number | null): UsageSource {
  if (inputTokens !== null && outputTokens !== null) return 'reported';
  return inputTokens === null && outputTokens === null ? 'unknown' : 'partial';
}

/**
 * A usage read back from storage (a turn row, a memoized call, an agent snapshot) as a {@link Usage}: today's shape
 * as it is; one stored before usage could be unknown (`{ inputTokens, outputTokens }` numbers, no `source`) as
 * reported, which is what it claimed to be. Anything else (a hand-edited row) is `null`: no usage, not a guess.
 *
 * @example
 * ```ts
 * decodeUsage({ inputTokens: 12, outputTokens: 40 }); // { inputTokens: 12, outputTokens: 40, source: 'reported' }
 * ```
 */
export function decodeUsage(raw: unknown): Usage | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  const input = r.inputTokens;
  const output = r.outputTokens;
  if (!(isCount(input) || input === null) || !(isCount(output) || output === null)) return null;
  const est = (r.estimated && typeof r.estimated === 'object' ? r.estimated : {}) as Record<string, unknown>;
  return usageOf(input, output, {
    inputTokens: isCount(est.inputTokens) ? est.inputTokens : 0,
    outputTokens: isCount(est.outputTokens) ? est.outputTokens : 0,
  });
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0;
}

/**
 * One line for people: the reported counts, and for a count not reported `unknown` with the estimate labelled.
 *
 * @example
 * ```ts
 * describeUsage(usageOf(12, undefined, { inputTokens: 0, outputTokens: 40 }));
 * // '12 input + unknown output tokens (not reported; ≈40 output estimated)'
 * ```
 */
export function describeUsage(u: Usage): string {
  const count = (n: number | null) => (n === null ? 'unknown' : String(n));
  const line = `${count(u.inputTokens)} input + ${count(u.outputTokens)} output tokens`;
  if (u.inputTokens !== null && u.outputTokens !== null) return line;
  const est = [
    ...(u.inputTokens === null ? [`≈${u.estimated?.inputTokens ?? 0} input`] : []),
    ...(u.outputTokens === null ? [`≈${u.estimated?.outputTokens ?? 0} output`] : []),
  ];
  return `${line} (not reported; ${est.join(' + ')} estimated)`;
}
