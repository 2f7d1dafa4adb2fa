/**
 * How a run's turn keys are spelled. `1`: the parts joined with `:` as they are (runs stored before keys were
 * escaped: ambiguous when a part holds a `:`); `2`: each part escaped ({@link escapeKeyPart}) before the join.
 * A run stores the format it was created with (`runs.config.keyFormat`); absent means `1`.
 */
export type TurnKeyFormat = 1 | 2;

/** The format new runs are created with. */
export const TURN_KEY_FORMAT: TurnKeyFormat = 2;

/** What identifies one turn of a run. */
export interface TurnKeyParts {
  readonly runId: string;
  readonly round: number;
  readonly itemId: string;
  readonly agent: string;
}

/**
 * A key part with `%` and `:` percent-escaped, so that after the join every `:` is a separator and the key
 * splits back into exactly its parts: item `I1` + agent `I1:Kai` and item `I1:I1` + agent `Kai` no longer meet
 * in `…:I1:I1:Kai`. Only these two characters change, so a key of plain names reads as it always did.
 *
 * @example
 * ```ts
 * escapeKeyPart('I1:Kai'); // 'I1%3AKai'
 * ```
 */
export function escapeKeyPart(part: string): string {
  return part.replaceAll('%', '%25').replaceAll(':', '%3A');
}

/**
 * A turn's key — the call memo's prefix, the upstream idempotency keys (`<key>:call<n>`, `<key>:tool<n>:<id>`) and
 * the turn's id in events. Unambiguous for format 2: distinct (run, round, item, agent) never give one key, and
 * no turn key followed by `:call<n>` equals another's.
 *
 * @example
 * ```ts
 * turnKey({ runId: 'r1', round: 2, itemId: 'I3', agent: 'Kai' }); // 'r1:2:I3:Kai'
 * ```
 */
export function turnKey(parts: TurnKeyParts, format: TurnKeyFormat = TURN_KEY_FORMAT): string {
  return `${roundKeyPrefix(parts.runId, parts.round, format)}${part(parts.itemId, format)}:${part(parts.agent, format)}`;
}

/**
 * The prefix every key of one round of a run starts with (the memo of an interrupted round is read by it).
 *
 * @example
 * ```ts
 * const memo = await store.recallCallsByPrefix(runId, roundKeyPrefix(runId, 3));
 * ```
 */
export function roundKeyPrefix(
  runId: string,
  round: number,
  format: TurnKeyFormat = TURN_KEY_FORMAT,
): string {
  return `${part(runId, format)}:${round}:`;
}

/**
 * The key format a stored run's config names (`keyFormat`), `1` for runs stored before it was recorded.
 *
 * @example
 * ```ts
 * const format = keyFormatOf(run.config);
 * ```
 */
export function keyFormatOf(config: unknown): TurnKeyFormat {
  const value = (config as { keyFormat?: unknown } | null | undefined)?.keyFormat;
  return value === 2 ? 2 : 1;
}

function part(text: string, format: TurnKeyFormat): string {
  return format === 1 ? text : escapeKeyPart(text);
}
