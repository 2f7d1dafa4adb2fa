import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenario } from '../../src/runs/run-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';

/*
 * `breakwater run … --stream` hands the run's one stop signal to every agent's streamed ask. With a listener per ask
 * on it, Node printed `MaxListenersExceededWarning: 11 abort listeners added to [AbortSignal]` as soon as 11 agents
 * streamed at once. The run below streams 14 agents under one signal and listens for that warning.
 */

let database: BreakwaterDatabase;
beforeAll(async () => {
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await database.close();
});

const AGENTS = 14;

const spec: ScenarioSpec = {
  name: 'stream-listeners',
  runtime: {
    endpoints: [
      {
        id: 'primary',
        provider: 'openai',
        model: 'gpt-4o',
        emulator: 'openai',
        apiKey: 'sk-listeners-000000000001',
      },
    ],
    chains: { main: ['primary'] },
    concurrency: { limit: 4 },
  },
  agents: Array.from({ length: AGENTS }, (_, i) => ({ name: `A${i}`, chain: 'main' })),
  rounds: { count: 2, items: [{ id: 'I1', title: 'First' }] },
  emulator: { seed: 5 },
};

describe('a streamed run under one stop signal', () => {
  it('adds no abort listener per agent: no MaxListenersExceededWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const stop = new AbortController();
    try {
      await runScenario({
        scenario: spec,
        runId: 'stream-listeners',
        database,
        virtualTime: true,
        stream: true,
        signal: stop.signal,
      });
      // A warning is emitted on the next tick after the listener that crossed the limit.
      await new Promise<void>((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    const turns = await createRunStore(database).listTurns('stream-listeners');
    // Every agent streamed its turns (the run really had 14 asks on the one signal).
    expect(turns).toHaveLength(AGENTS * 2);
    expect(turns.filter((t) => t.outcome === 'answered')).toHaveLength(AGENTS * 2);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual(
      [],
    );
  });
});
