/**
 * Precompiled decision trees: when no engine can answer, an agent still gives a structured answer
 * from plain rules over what it knows (seed 003, layer 4) — never a placeholder.
 */
import type { DegradedAnswer } from '../core/turn.ts';

/** A decision tree over a context `C`: always answers. */
export type DecisionTree<C> = (context: C) => DegradedAnswer;

/** What a rule returns: a {@link DegradedAnswer} whose `source` and `reason` the builder may fill. */
export type DegradedAnswerDraft = Omit<DegradedAnswer, 'source' | 'reason'> &
  Partial<Pick<DegradedAnswer, 'source' | 'reason'>>;

/** One rule of a {@link decisionTree}: the first rule whose `when` holds answers. */
export interface DecisionRule<C> {
  readonly when: (context: C) => boolean;
  readonly answer: (context: C) => DegradedAnswerDraft;
  /** Shown as the answer's basis. Default `rule <n>` (1-based). */
  readonly name?: string;
}

/**
 * Builds a {@link DecisionTree} from ordered rules and a fallback. Every answer is frozen and marked
 * `source: 'decision_tree'`; `reason` defaults to the rule that answered.
 *
 * @example
 * ```ts
 * const triage = decisionTree<{ item: { severity: number } }>(
 *   [{ name: 'sev1', when: (c) => c.item.severity >= 1, answer: () => ({ summary: 'Escalate to on-call now.', fields: { action: 'escalate' } }) }],
 *   () => ({ summary: 'Queue for the next review.', fields: { action: 'queue' } }),
 * );
 * triage({ item: { severity: 1 } }).fields; // { action: 'escalate' }
 * ```
 */
export function decisionTree<C>(
  rules: readonly DecisionRule<C>[],
  fallback: (context: C) => DegradedAnswerDraft,
): DecisionTree<C> {
  const frozen = Object.freeze([...rules]);
  return (context: C) => {
    for (const [i, rule] of frozen.entries()) {
      if (rule.when(context)) return finish(rule.answer(context), rule.name ?? `rule ${i + 1}`);
    }
    return finish(fallback(context), 'fallback');
  };
}

function finish(draft: DegradedAnswerDraft, ruleName: string): DegradedAnswer {
  const basis = draft.basis ?? `decision tree: ${ruleName}`;
  return Object.freeze({
    ...draft,
    ...(draft.fields ? { fields: Object.freeze({ ...draft.fields }) } : {}),
    source: 'decision_tree' as const,
    reason: draft.reason ?? basis,
    basis,
  });
}
