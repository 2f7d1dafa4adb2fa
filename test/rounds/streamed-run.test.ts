import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenario } from '../../src/runs/run-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';

/*
 * `breakwater run --stream`: the same scenario run plain and streamed (virtual clock, in-process emulator, PGlite in
 * memory) commits the same turns; while it streams, each agent's text is seen growing, and ends empty.
 */

let database: BreakwaterDatabase;
beforeAll(async () => {
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await database.close();
});

const spec: ScenarioSpec = {
  name: 'stream-drill',
  runtime: {
    endpoints: [
      {
        id: 'primary',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        emulator: 'anthropic',
        apiKey: 'sk-stream-0000000000000001',
      },
      {
        id: 'backup',
        provider: 'openai',
        model: 'gpt-4o',
        emulator: 'openai',
        apiKey: 'sk-stream-0000000000000002',
      },
    ],
    chains: { main: ['primary', 'backup'] },
  },
  agents: [
    { name: 'Kai', chain: 'main' },
    { name: 'Yuna', chain: 'main' },
  ],
  rounds: {
    count: 2,
    items: [
      { id: 'I1', title: 'First' },
      { id: 'I2', title: 'Second' },
    ],
  },
  emulator: { seed: 8 },
};

describe('a streamed run', () => {
  it('commits the same turns as a plain run, and shows each agent its growing text', async () => {
    const store = createRunStore(database);
    const seen = new Map<string, string[]>();
    await runScenario({
      scenario: spec,
      runId: 'streamed-run',
      database,
      virtualTime: true,
      stream: true,
      onText: (agent, text) => seen.set(agent, [...(seen.get(agent) ?? []), text]),
    });
    await runScenario({ scenario: spec, runId: 'plain-run', database, virtualTime: true });
    const shape = (t: Awaited<ReturnType<typeof store.listTurns>>[number]) => ({
      round: t.round,
      position: t.position,
      itemId: t.itemId,
      agent: t.agent,
      prompt: t.prompt,
      answer: t.answer,
      outcome: t.outcome,
      endpointId: t.endpointId,
      usage: t.usage,
      faults: t.faults,
    });
    const plain = (await store.listTurns('plain-run')).map(shape);
    const streamed = (await store.listTurns('streamed-run')).map(shape);
    expect(plain.length).toBe(8);
    expect(streamed).toEqual(plain);
    for (const agent of ['Kai', 'Yuna']) {
      const texts = seen.get(agent) ?? [];
      // Grows delta by delta within a turn, and is cleared when the turn ends.
      expect(texts.length).toBeGreaterThan(8);
      expect(texts[texts.length - 1]).toBe('');
      const grown = texts.find(
        (t, i) => i > 0 && t.length > texts[i - 1]!.length && texts[i - 1]!.length > 0,
      );
      expect(grown).toBeDefined();
    }
  });
});
