import { describe, expect, it } from 'vitest';
import { AnswerCache, promptTokens, tokenSetCosine } from '../../src/degraded/answer-cache.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';

describe('AnswerCache', () => {
  it('an exact hit ignores case and whitespace and has similarity 1', () => {
    const cache = new AnswerCache();
    cache.remember('Kai', 'Summarize the FX desk risks', 'USD/KRW above 1400: hedge ratio to 60 %.', 1_000);
    expect(cache.lookup('Kai', '  summarize the   fx desk RISKS ')).toEqual({
      prompt: 'Summarize the FX desk risks',
      answer: 'USD/KRW above 1400: hedge ratio to 60 %.',
      at: 1_000,
      similarity: 1,
      exact: true,
    });
  });

  it('otherwise returns the most similar earlier prompt of the same agent, with its similarity', () => {
    const cache = new AnswerCache();
    cache.remember('Kai', 'Summarize the FX desk risks', 'fx answer');
    cache.remember('Kai', 'List open incidents on the payments API', 'incidents answer');
    cache.remember('Yuna', 'Summarize the FX desk risks for today', 'Yuna fx answer');
    const hit = cache.lookup('Kai', 'summarize FX desk risks for today');
    expect(hit?.answer).toBe('fx answer');
    expect(hit?.exact).toBe(false);
    // {summarize, fx, desk, risks} shared of 5 and 6 words: 4 / √30
    expect(hit?.similarity).toBeCloseTo(4 / Math.sqrt(30), 10);
    // Never another agent's answer.
    expect(cache.lookup('Miso', 'Summarize the FX desk risks')).toBeUndefined();
  });

  it('below the minimum similarity there is no hit', () => {
    const cache = new AnswerCache({ minSimilarity: 0.3 });
    cache.remember('Kai', 'quarterly earnings of Samsung Electronics', 'earnings answer');
    expect(cache.lookup('Kai', 'weather in Busan tomorrow')).toBeUndefined();
    expect(cache.lookup('Kai', 'Samsung weather in Busan tomorrow')).toBeUndefined(); // 1 / √(4·5) ≈ 0.22
    expect(cache.lookup('Kai', 'Samsung weather in Busan tomorrow', 0.2)?.answer).toBe('earnings answer');
  });

  it('works on non-Latin text', () => {
    const cache = new AnswerCache();
    cache.remember('Hana', '오늘 환율 리스크 요약', '환율 1400원 상회');
    expect(cache.lookup('Hana', '환율 리스크 요약 부탁')?.answer).toBe('환율 1400원 상회');
  });

  it('is bounded per agent and evicts the least recently used', () => {
    const cache = new AnswerCache({ maxPerAgent: 3 });
    cache.remember('Kai', 'alpha one', 'a');
    cache.remember('Kai', 'bravo two', 'b');
    cache.remember('Kai', 'charlie three', 'c');
    cache.lookup('Kai', 'alpha one'); // alpha is now the most recently used
    cache.remember('Kai', 'delta four', 'd');
    expect(cache.size('Kai')).toBe(3);
    expect(cache.lookup('Kai', 'bravo two')).toBeUndefined();
    expect(cache.lookup('Kai', 'alpha one')?.answer).toBe('a');
    for (let i = 0; i < 10; i++) cache.remember('Yuna', `prompt number ${i}`, `answer ${i}`);
    expect(cache.size('Yuna')).toBe(3);
    expect(cache.size()).toBe(6);
  });

  it('remembering the same prompt again replaces the answer', () => {
    const cache = new AnswerCache();
    cache.remember('Kai', 'rates outlook', 'old');
    cache.remember('Kai', 'Rates  outlook', 'new');
    expect(cache.size('Kai')).toBe(1);
    expect(cache.lookup('Kai', 'rates outlook')?.answer).toBe('new');
  });

  it('a batch with repeated prompts files as if each answer were filed in turn', () => {
    // Nothing is read between the remembers, so all of them are filed together at the export.
    const cache = new AnswerCache({ maxPerAgent: 3 });
    cache.remember('Kai', 'alpha', 'a1', 1);
    cache.remember('Kai', 'bravo', 'b1', 2);
    cache.remember('Kai', 'alpha', 'a2', 3);
    cache.remember('Kai', 'charlie', 'c1', 4);
    cache.remember('Kai', 'delta', 'd1', 5);
    cache.remember('Kai', 'bravo', '  ', 6); // empty: keeps nothing, replaces nothing
    expect(cache.export().agents.Kai).toEqual([
      { prompt: 'alpha', answer: 'a2', at: 3 },
      { prompt: 'charlie', answer: 'c1', at: 4 },
      { prompt: 'delta', answer: 'd1', at: 5 },
    ]);
    const other = new AnswerCache({ maxPerAgent: 3 });
    other.remember('Kai', 'bravo', 'b1', 1);
    other.remember('Kai', 'bravo', ' ', 2);
    other.remember('Kai', 'Bravo', 'b2', 3);
    other.remember('Kai', 'bravo', 'b3', 4);
    expect(other.export().agents.Kai).toEqual([{ prompt: 'bravo', answer: 'b3', at: 4 }]);
  });

  it('does not remember empty answers', () => {
    const cache = new AnswerCache();
    cache.remember('Kai', 'rates outlook', '   ');
    expect(cache.size()).toBe(0);
  });

  it('masks provider key shapes before remembering', () => {
    const key = 'sk-ant-api03-abcdefghijklmnop9876';
    const cache = new AnswerCache();
    cache.remember('Kai', `/byok anthropic ${key}`, `stored ${key}`);
    expect(JSON.stringify(cache.export())).not.toContain(key);
    expect(cache.lookup('Kai', `/byok anthropic ${key}`)?.exact).toBe(true);
  });

  it('export and import round-trip as plain JSON, keeping recency order', () => {
    const cache = new AnswerCache({ maxPerAgent: 2 });
    cache.remember('Kai', 'alpha one', 'a', 1);
    cache.remember('Kai', 'bravo two', 'b', 2);
    cache.lookup('Kai', 'alpha one');
    cache.remember('Juno', 'charlie three', 'c');
    const data = JSON.parse(JSON.stringify(cache.export()));
    expect(data).toEqual({
      version: 1,
      agents: {
        Kai: [
          { prompt: 'bravo two', answer: 'b', at: 2 },
          { prompt: 'alpha one', answer: 'a', at: 1 },
        ],
        Juno: [{ prompt: 'charlie three', answer: 'c' }],
      },
    });
    const restored = new AnswerCache({ maxPerAgent: 2 });
    restored.import(data);
    expect(restored.export()).toEqual(data);
    restored.remember('Kai', 'delta four', 'd');
    expect(restored.lookup('Kai', 'bravo two')).toBeUndefined(); // bravo was least recently used
  });

  it('import rejects malformed data with a ConfigError naming the entry, and changes nothing', () => {
    const cache = new AnswerCache();
    cache.remember('Kai', 'alpha one', 'a');
    const bad = {
      version: 1,
      agents: {
        Kai: [
          { prompt: 'x', answer: 'y' },
          { prompt: 'z', answer: 3 },
        ],
      },
    };
    let caught: unknown;
    try {
      cache.import(bad as never);
    } catch (e) {
      caught = e;
    }
    expect(isConfigError(caught)).toBe(true);
    expect((caught as Error).message).toContain('agents.Kai[1].answer');
    expect(cache.size()).toBe(1);
    expect(() => cache.import({ version: 2 } as never)).toThrow(/version/);
  });

  it('token-set cosine is symmetric, 1 for equal sets and 0 for disjoint or empty ones', () => {
    const a = promptTokens('Rates, FX and credit!');
    const b = promptTokens('credit rates');
    expect([...a]).toEqual(['rates', 'fx', 'and', 'credit']);
    expect(tokenSetCosine(a, b)).toBeCloseTo(2 / Math.sqrt(8), 10);
    expect(tokenSetCosine(b, a)).toBe(tokenSetCosine(a, b));
    expect(tokenSetCosine(a, a)).toBe(1);
    expect(tokenSetCosine(a, promptTokens('weather'))).toBe(0);
    expect(tokenSetCosine(a, new Set())).toBe(0);
  });
});
