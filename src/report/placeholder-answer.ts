/**
 * Seed 003's failure mode: every agent's answer collapsed into "AI credit being coordinated — waiting
 * for backup engine". breakwater must never answer like that; the report counts such answers.
 */

/**
 * The placeholder texts of seed 003, in English and in the original Korean.
 *
 * @example
 * ```ts
 * PLACEHOLDER_PATTERNS.some((p) => p.test('AI credit being coordinated')); // true
 * ```
 */
export const PLACEHOLDER_PATTERNS: readonly RegExp[] = Object.freeze([
  /AI credit being coordinated/i,
  /waiting for (the )?backup (AI )?engine/i,
  /AI 크레딧 조율 중/,
  /백업 AI 엔진 전환 대기/,
]);

/**
 * The text of a stored answer: a string as it is, an object's `text` field, else empty.
 *
 * @example
 * ```ts
 * answerText({ text: 'Raise the limit.' }); // 'Raise the limit.'
 * answerText(null); // ''
 * ```
 */
export function answerText(answer: unknown): string {
  if (typeof answer === 'string') return answer;
  if (answer && typeof answer === 'object') {
    const text = (answer as { text?: unknown }).text;
    if (typeof text === 'string') return text;
  }
  return '';
}

/**
 * Whether a turn's answer is a placeholder: the seed's text, or nothing at all from a turn that did not
 * fail (a failed turn says what went wrong instead of answering).
 *
 * @example
 * ```ts
 * isPlaceholderAnswer({ text: 'AI credit being coordinated — waiting for backup engine' }, 'answered'); // true
 * isPlaceholderAnswer({ text: '' }, 'failed'); // false
 * ```
 */
export function isPlaceholderAnswer(answer: unknown, outcome: string): boolean {
  if (outcome === 'failed' || outcome === 'cancelled') return false;
  const text = answerText(answer);
  if (text.trim() === '') return true;
  return PLACEHOLDER_PATTERNS.some((p) => p.test(text));
}
