import type { Fault } from './fault.ts';
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
 * The usage of a turn that made no upstream call yet (or none at all: plain code, a degraded answer without a call):
 * nothing was sent, so nothing was used, and that is known.
 */
export const NO_USAGE: Usage = reportedUsage(0, 0);

/**
 * A usage of counts and estimates as they are: `inputTokens` / `outputTokens` the reported part (`null`: no part of
 * it was reported), `estimated` breakwater's estimate of the part that was not (a key only for a count not wholly
 * reported). The source follows from them.
 */
function usageFrom(
  inputTokens: number | null,
  outputTokens: number | null,
  estimated: { inputTokens?: number | undefined; outputTokens?: number | undefined },
): Usage {
  const est = {
    ...(estimated.inputTokens !== undefined || inputTokens === null
      ? { inputTokens: estimated.inputTokens ?? 0 }
      : {}),
    ...(estimated.outputTokens !== undefined || outputTokens === null
      ? { outputTokens: estimated.outputTokens ?? 0 }
      : {}),
  };
  const usage: Usage = { inputTokens, outputTokens, source: 'reported' };
  const complete = est.inputTokens === undefined && est.outputTokens === undefined;
  if (complete) return Object.freeze(usage);
  const withEst: Usage = { ...usage, estimated: Object.freeze(est) };
  return Object.freeze({ ...withEst, source: usageSource(withEst) });
}

/**
 * Two usages together (a turn's calls): each count is the sum of the parts reported (`null` while no call reported a
 * part of it), and the estimate covers only the parts that were not reported. Some calls reported and some not:
 * `partial`, the reported counts kept.
 *
 * @example
 * ```ts
 * addUsage(reportedUsage(10, 5), usageOf(undefined, undefined, { inputTokens: 9, outputTokens: 7 }));
 * // { inputTokens: 10, outputTokens: 5, source: 'partial', estimated: { inputTokens: 9, outputTokens: 7 } }
 * ```
 */
export function addUsage(a: Usage, b: Usage): Usage {
  // Unknown + a known 0 is still unknown (a call refused with a 429 adds nothing to a cut call's unknown count), so a
  // count reads `null` until some call reported a part of it; NO_USAGE (a turn's start) changes nothing.
  const sum = (x: number | null, y: number | null) =>
    x === null ? (y === 0 ? null : y) : y === null ? (x === 0 ? null : x) : x + y;
  const est = (x: number | undefined, y: number | undefined) =>
    x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0);
  return usageFrom(sum(a.inputTokens, b.inputTokens), sum(a.outputTokens, b.outputTokens), {
    inputTokens: est(unreportedInput(a), unreportedInput(b)),
    outputTokens: est(unreportedOutput(a), unreportedOutput(b)),
  });
}

/** The estimate of the input tokens not reported (`undefined`: all were). */
function unreportedInput(u: Usage): number | undefined {
  return u.estimated?.inputTokens ?? (u.inputTokens === null ? 0 : undefined);
}

/** The estimate of the output tokens not reported (`undefined`: all were). */
function unreportedOutput(u: Usage): number | undefined {
  return u.estimated?.outputTokens ?? (u.outputTokens === null ? 0 : undefined);
}

/**
 * The usage of a call that ended in `fault`, by what its provider bills. Refused with an HTTP status (a 429, a 5xx,
 * a 4xx), or never sent (refused connection, nothing left our side): nothing was used, a reported 0. Cut after it was
 * sent (a stall, a dropped connection, a stream cut, a cancellation) without usage: unknown, with `estimate` (the
 * request's prompt ÷ 4, the text it had written ÷ 4) apart.
 *
 * @example
 * ```ts
 * faultUsage({ kind: 'timeout', provider: 'openai', message: 'body idle' }, { inputTokens: 30, outputTokens: 0 });
 * // { inputTokens: null, outputTokens: null, source: 'unknown', estimated: { inputTokens: 30, outputTokens: 0 } }
 * ```
 */
export function faultUsage(
  fault: Fault,
  estimate: { readonly inputTokens: number; readonly outputTokens: number },
): Usage {
  return wasCutAfterSending(fault) ? usageOf(null, null, estimate) : NO_USAGE;
}

/** Connection errors that mean the request never reached a server. */
const NEVER_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'lease_lost', 'byok_expired']);

/**
 * Whether `fault` cut a call the provider may have read (and billed) without an HTTP status saying it refused it: no
 * status (a stall, a dropped connection, a stream cut, an error event inside a 200 stream, a cancellation), unless the
 * call never left (a refused connection, nothing sent) or our side refused it before sending (a bad or too large
 * request with no status is the SDK's own check).
 */
export function wasCutAfterSending(fault: Fault): boolean {
  if (fault.status !== undefined) return false;
  if (fault.code !== undefined && NEVER_SENT_CODES.has(fault.code)) return false;
  return fault.kind !== 'bad_request' && fault.kind !== 'request_too_large';
}

/** Input tokens to pace with: the reported part plus the estimate of the rest. Never shown as measured. */
export function bestInput(u: Usage): number {
  return (u.inputTokens ?? 0) + (unreportedInput(u) ?? 0);
}

/** Output tokens to pace with: the reported part plus the estimate of the rest. Never shown as measured. */
export function bestOutput(u: Usage): number {
  return (u.outputTokens ?? 0) + (unreportedOutput(u) ?? 0);
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

/** Which counts of one call are the provider's (a single call reports a count whole or not at all). */
export function sourceOf(inputTokens: number | null, outputTokens: number | null): UsageSource {
  if (inputTokens !== null && outputTokens !== null) return 'reported';
  return inputTokens === null && outputTokens === null ? 'unknown' : 'partial';
}

/**
 * Which of a usage's counts are the provider's: `reported` (both wholly), `unknown` (no part of either), `partial`
 * (the rest: a count reported in part, some of a turn's calls unreported). Derived, not read from `source`: a usage
 * stored before usage could be unknown has none.
 */
export function usageSource(u: Usage): UsageSource {
  const inputDone = u.inputTokens !== null && u.estimated?.inputTokens === undefined;
  const outputDone = u.outputTokens !== null && u.estimated?.outputTokens === undefined;
  if (inputDone && outputDone) return 'reported';
  return u.inputTokens === null && u.outputTokens === null ? 'unknown' : 'partial';
}

/** Whether a count of `u` is wholly reported (the measured names may carry it). */
export function isWhole(u: Usage, count: 'inputTokens' | 'outputTokens'): boolean {
  return u[count] !== null && u.estimated?.[count] === undefined;
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
  // An estimate beside a count is the part of it not reported (a turn some of whose calls reported): kept.
  return usageFrom(input, output, {
    inputTokens: isCount(est.inputTokens) ? est.inputTokens : undefined,
    outputTokens: isCount(est.outputTokens) ? est.outputTokens : undefined,
  });
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0;
}

/**
 * One line for people: the reported counts, and for a count not (wholly) reported `unknown` or its reported part,
 * with the estimate of the rest labelled.
 *
 * @example
 * ```ts
 * describeUsage(usageOf(12, undefined, { inputTokens: 0, outputTokens: 40 }));
 * // '12 input + unknown output tokens (not reported; ≈40 output estimated)'
 * describeUsage(addUsage(reportedUsage(10, 5), usageOf(null, null, { inputTokens: 9, outputTokens: 7 })));
 * // '10 input + 5 output tokens (not all reported; ≈9 input + ≈7 output estimated for the rest)'
 * ```
 */
export function describeUsage(u: Usage): string {
  const count = (n: number | null) => (n === null ? 'unknown' : String(n));
  const line = `${count(u.inputTokens)} input + ${count(u.outputTokens)} output tokens`;
  if (usageSource(u) === 'reported') return line;
  const est = [
    ...(u.estimated?.inputTokens !== undefined ? [`≈${u.estimated.inputTokens} input`] : []),
    ...(u.estimated?.outputTokens !== undefined ? [`≈${u.estimated.outputTokens} output`] : []),
  ];
  const someReported =
    (u.inputTokens !== null && u.estimated?.inputTokens !== undefined) ||
    (u.outputTokens !== null && u.estimated?.outputTokens !== undefined);
  return someReported
    ? `${line} (not all reported; ${est.join(' + ')} estimated for the rest)`
    : `${line} (not reported; ${est.join(' + ')} estimated)`;
}
