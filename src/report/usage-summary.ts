import { decodeUsage, usageSource } from '../core/token-usage.ts';

/**
 * One token count (input or output) over a run's stored turns: what the providers reported, and apart from it the
 * turns whose count nobody reported, with breakwater's estimate of those.
 *
 * @example
 * ```ts
 * const { reported, unreportedTurns, estimated } = report.usage!.output;
 * ```
 */
export interface TokenTotal {
  /** Sum of the counts the providers reported (of a turn some of whose calls reported nothing, the part reported). */
  readonly reported: number;
  /** Turns whose count was not wholly reported (a call cut after it was sent, a server that sends none). */
  readonly unreportedTurns: number;
  /**
   * breakwater's estimate (characters ÷ 4) of what those turns' unreported calls used: an estimate, never measured;
   * 0 without them.
   */
  readonly estimated: number;
}

/**
 * Token usage of a run's stored turns, measured and estimated kept apart.
 *
 * @example
 * ```ts
 * if (report.usage && report.usage.unknownTurns > 0) console.log('some usage was not reported');
 * ```
 */
export interface UsageSummary {
  /** Stored turns that carry usage (rows without any are not counted). */
  readonly turns: number;
  /** Of `turns`, those with both counts reported whole. */
  readonly reportedTurns: number;
  /** Of `turns`, those with a count not wholly reported (`partial` or `unknown`). */
  readonly unknownTurns: number;
  readonly input: TokenTotal;
  readonly output: TokenTotal;
}

/**
 * Sums the usage of stored turns (`TurnRecord.usage`, or a `TurnInput`'s): reported counts in `reported`, the
 * estimates of unreported ones apart. Rows stored before usage could be unknown count as reported.
 *
 * @example
 * ```ts
 * summarizeUsage(await store.listTurns(runId)).output.reported;
 * ```
 */
export function summarizeUsage(turns: readonly { readonly usage?: unknown }[]): UsageSummary {
  let counted = 0;
  let reportedTurns = 0;
  const input = { reported: 0, unreportedTurns: 0, estimated: 0 };
  const output = { reported: 0, unreportedTurns: 0, estimated: 0 };
  for (const t of turns) {
    const u = decodeUsage(t.usage);
    if (!u) continue;
    counted++;
    if (usageSource(u) === 'reported') reportedTurns++;
    add(input, u.inputTokens, u.estimated?.inputTokens);
    add(output, u.outputTokens, u.estimated?.outputTokens);
  }
  return Object.freeze({
    turns: counted,
    reportedTurns,
    unknownTurns: counted - reportedTurns,
    input: Object.freeze(input),
    output: Object.freeze(output),
  });
}

function add(
  total: { reported: number; unreportedTurns: number; estimated: number },
  reported: number | null,
  estimated: number | undefined,
): void {
  // A count with an estimate was not wholly reported; its reported part (if any) still counts as reported.
  if (reported !== null) total.reported += reported;
  if (reported === null || estimated !== undefined) {
    total.unreportedTurns++;
    total.estimated += estimated ?? 0;
  }
}

/**
 * The summary as one line: reported counts, then the unreported ones labelled as estimates.
 *
 * @example
 * ```ts
 * formatUsageSummary(summary);
 * // 'tokens 2 of 3 turns reported: input 1200, output 300 + 1 turn not wholly reported (≈40 output estimated, not measured)'
 * ```
 */
export function formatUsageSummary(s: UsageSummary): string {
  const head = `tokens ${s.reportedTurns} of ${s.turns} turns reported: input ${s.input.reported}, output ${s.output.reported}`;
  if (s.unknownTurns === 0) return head;
  const est = [
    ...(s.input.unreportedTurns > 0 ? [`≈${s.input.estimated} input`] : []),
    ...(s.output.unreportedTurns > 0 ? [`≈${s.output.estimated} output`] : []),
  ];
  const turns = `${s.unknownTurns} turn${s.unknownTurns === 1 ? '' : 's'}`;
  return `${head} + ${turns} not wholly reported (${est.join(' + ')} estimated, not measured)`;
}
