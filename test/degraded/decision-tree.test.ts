import { describe, expect, it } from 'vitest';
import { decisionTree } from '../../src/degraded/decision-tree.ts';

interface Ticket {
  readonly item: { readonly severity: number; readonly system: string };
}

const triage = decisionTree<Ticket>(
  [
    {
      name: 'sev1',
      when: (c) => c.item.severity === 1,
      answer: (c) => ({
        summary: `Escalate ${c.item.system} to on-call now.`,
        fields: { action: 'escalate' },
      }),
    },
    {
      when: (c) => c.item.system === 'billing',
      answer: () => ({
        summary: 'Route to the billing queue.',
        fields: { action: 'route', queue: 'billing' },
      }),
    },
  ],
  (c) => ({ summary: `Queue ${c.item.system} for the next review.`, fields: { action: 'queue' } }),
);

describe('decisionTree', () => {
  it('the first matching rule answers, marked as a decision-tree answer with its rule', () => {
    const a = triage({ item: { severity: 1, system: 'billing' } });
    expect(a).toEqual({
      summary: 'Escalate billing to on-call now.',
      fields: { action: 'escalate' },
      source: 'decision_tree',
      reason: 'decision tree: sev1',
      basis: 'decision tree: sev1',
    });
    const b = triage({ item: { severity: 3, system: 'billing' } });
    expect(b.fields).toEqual({ action: 'route', queue: 'billing' });
    expect(b.basis).toBe('decision tree: rule 2');
  });

  it('falls back when no rule matches', () => {
    const a = triage({ item: { severity: 4, system: 'search' } });
    expect(a.summary).toBe('Queue search for the next review.');
    expect(a.basis).toBe('decision tree: fallback');
  });

  it('answers are frozen and keep a reason the rule gave', () => {
    const tree = decisionTree<number>(
      [{ when: (n) => n > 0, answer: () => ({ summary: 'up', reason: 'positive' }) }],
      () => ({
        summary: 'down',
        source: 'cache',
      }),
    );
    const up = tree(1);
    expect(up.reason).toBe('positive');
    expect(Object.isFrozen(up)).toBe(true);
    // A rule cannot pass its answer off as something else.
    expect(tree(-1).source).toBe('decision_tree');
  });
});
