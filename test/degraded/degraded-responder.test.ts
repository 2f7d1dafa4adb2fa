import { describe, expect, it } from 'vitest';
import { AnswerCache } from '../../src/degraded/answer-cache.ts';
import { decisionTree } from '../../src/degraded/decision-tree.ts';
import { createDegradedResponder, type DegradedSituation } from '../../src/degraded/degraded-responder.ts';

const PLACEHOLDER = /waiting for backup engine|credit being coordinated/i;

const kaiTree = decisionTree<DegradedSituation>(
  [
    {
      name: 'fx',
      when: (c) => /fx|환율/i.test(c.prompt),
      answer: (c) => ({
        summary: `Hold the hedge ratio at ${String(c.memory?.hedge ?? '50 %')}.`,
        fields: { action: 'hold' },
      }),
    },
  ],
  () => ({ summary: 'No rule for this item: keep the current positions.', fields: { action: 'none' } }),
);

describe('createDegradedResponder', () => {
  it('answers from the cache first, marked as cache with its similarity', () => {
    const cache = new AnswerCache();
    cache.remember('Kai', 'Summarize the FX desk risks', 'USD/KRW above 1400: hedge ratio to 60 %.', 5);
    const responder = createDegradedResponder({ cache, trees: { Kai: kaiTree } });
    const a = responder.answer('Kai', 'summarize FX desk risks for today', {}, 'all engines open');
    expect(a.source).toBe('cache');
    expect(a.summary).toBe('USD/KRW above 1400: hedge ratio to 60 %.');
    expect(a.reason).toBe('all engines open');
    expect(a.similarity).toBeCloseTo(4 / Math.sqrt(30), 10);
    expect(a.fields).toMatchObject({
      cachedPrompt: 'Summarize the FX desk risks',
      exact: false,
      rememberedAt: 5,
    });
    expect(a.basis).toContain('similar prompt');
    expect(Object.isFrozen(a)).toBe(true);
  });

  it('falls back to the agent’s decision tree, which sees the agent, prompt, reason and memory', () => {
    const seen: DegradedSituation[] = [];
    const tree = (c: DegradedSituation) => {
      seen.push(c);
      return kaiTree(c);
    };
    const responder = createDegradedResponder({ cache: new AnswerCache(), trees: { Kai: tree } });
    const a = responder.answer('Kai', 'FX hedge today?', { memory: { hedge: '70 %' } }, 'credit exhausted');
    expect(a).toMatchObject({
      source: 'decision_tree',
      summary: 'Hold the hedge ratio at 70 %.',
      fields: { action: 'hold' },
      reason: 'credit exhausted',
      basis: 'decision tree: fx',
    });
    expect(seen[0]).toEqual({
      memory: { hedge: '70 %' },
      agent: 'Kai',
      prompt: 'FX hedge today?',
      reason: 'credit exhausted',
    });
  });

  it('trees registered after creation are used (the runtime fills them as agents spawn)', () => {
    const trees: Record<string, typeof kaiTree> = {};
    const responder = createDegradedResponder({ trees });
    trees.Kai = kaiTree;
    expect(responder.answer('Kai', 'fx?', {}, 'r').source).toBe('decision_tree');
  });

  it('otherwise gives a structured summary of the agent’s memory and the item — never a placeholder', () => {
    const responder = createDegradedResponder({ cache: new AnswerCache(), trees: { Kai: kaiTree } });
    const a = responder.answer(
      'Andrew',
      'Issue 7: payment gateway latency',
      {
        memory: { owner: 'payments team', lastStatus: 'p95 2.4 s since 07:10', empty: '' },
        item: { id: 'ISSUE-7', title: 'Payment gateway latency' },
      },
      'all engines open; no BYOK key',
    );
    expect(a.source).toBe('summary');
    expect(a.summary).not.toMatch(PLACEHOLDER);
    expect(a.summary).toContain('Payment gateway latency');
    expect(a.summary).toContain('owner: payments team');
    expect(a.summary).toContain('lastStatus: p95 2.4 s since 07:10');
    expect(a.summary).toContain('all engines open; no BYOK key');
    expect(a.fields).toEqual({
      agent: 'Andrew',
      item: { id: 'ISSUE-7', title: 'Payment gateway latency' },
      memory: { owner: 'payments team', lastStatus: 'p95 2.4 s since 07:10' },
    });
    expect(a.basis).toBe('memory slots: owner, lastStatus');
  });

  it('with no memory and no item, the summary still names the item from the prompt', () => {
    const a = createDegradedResponder().answer('Juno', 'Draft the 08:00 briefing', {}, 'all engines open');
    expect(a.source).toBe('summary');
    expect(a.summary).toContain('Item: Draft the 08:00 briefing');
    expect(a.summary).toContain('Juno holds no memory slots');
    expect(a.summary).not.toMatch(PLACEHOLDER);
  });

  it('a tree that throws or answers nothing does not leave the agent without an answer', () => {
    const responder = createDegradedResponder({
      trees: {
        Rex: () => {
          throw new Error('tree bug');
        },
        Dani: () => ({ summary: '', source: 'decision_tree', reason: '' }),
      },
    });
    const rex = responder.answer('Rex', 'p', { memory: { a: 'b' } }, 'r');
    expect(rex.source).toBe('summary');
    expect(rex.fields?.treeError).toBe('tree bug');
    expect(responder.answer('Dani', 'p', {}, 'r').source).toBe('summary');
  });

  it('an agent named like an Object property does not pick up a prototype function as its tree', () => {
    const a = createDegradedResponder({ trees: {} }).answer('constructor', 'p', {}, 'r');
    expect(a.source).toBe('summary');
  });

  it('masks provider key shapes in every answer', () => {
    const key = 'sk-proj-abcdefghijklmnopqrstuvwx1234';
    const a = createDegradedResponder().answer(
      'Kai',
      'p',
      { memory: { byok: `key is ${key}` } },
      `bad key ${key}`,
    );
    expect(JSON.stringify(a)).not.toContain(key);
    expect(JSON.stringify(a)).toContain('sk-proj-…1234');
  });
});
