import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { systemClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createBreakwaterExecutor } from '../../src/runs/breakwater-executor.ts';
import { utteranceOf } from '../../src/runs/run-restore.ts';
import { runRounds } from '../../src/runs/round-runner.ts';
import { storeCallMemo } from '../../src/runs/store-call-memo.ts';
import type { RoundPlan, ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;
let database: BreakwaterDatabase;
let store: RunStore;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 21 } });
  database = await openDatabase({ dataDir: ':memory:' });
  store = createRunStore(database);
});
afterAll(async () => {
  await database.close();
  await emulator.close();
});

const agents = ['Kai', 'Yuna', 'Miso'];
const items = [
  { id: 'U01', title: 'Payment API 5xx spike', kind: 'urgent' },
  { id: 'U02', title: 'Queue backlog in settlement', kind: 'urgent' },
  { id: 'C01', title: 'Quarterly capacity plan', kind: 'composite' },
];
const plans: RoundPlan[] = [1, 2].map((round) => ({
  round,
  turns: items.flatMap((item) => agents.map((agent) => ({ itemId: item.id, agent, item }))),
}));

function spec(): ScenarioSpec {
  return {
    name: 'mini-rounds',
    runtime: { endpoints: [], chains: {} },
    agents: agents.map((name) => ({ name, chain: 'main' })),
    rounds: { count: 2, items },
  };
}

async function executor(runId: string) {
  return createBreakwaterExecutor({
    config: {
      endpoints: [
        emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o'),
        emulatorEndpoint(emulator, 'backup', 'anthropic', 'claude-sonnet-4-6'),
      ],
      chains: { main: ['primary', 'backup'] },
    },
    agents: agents.map((name) => ({
      name,
      chain: 'main',
      role: `You are ${name}.`,
      memory: { desk: `${name}-desk` },
    })),
    clock: systemClock,
    memo: await storeCallMemo(store, runId, 1),
  });
}

describe('round runner', () => {
  it('commits each round once, with one turn per (round, item, agent), and later rounds see the others’ answers', async () => {
    const runId = `rr-${Date.now()}`;
    await store.createRun({
      runId,
      scenario: 'mini-rounds',
      totalRounds: 2,
      machineVersion: AGENT_MACHINE_VERSION,
    });
    const ex = await executor(runId);
    const events: RuntimeEvent[] = [];
    const unsubscribe = ex.subscribeEvents((e) => events.push(e));
    const run = await runRounds({
      runId,
      spec: spec(),
      plans,
      executor: ex,
      store,
      clock: systemClock,
      agents,
      machineVersion: AGENT_MACHINE_VERSION,
      emit: (e) => events.push(e),
    });
    unsubscribe();
    const live = ex.memory('Kai');
    await ex.stop();
    expect(run.status).toBe('completed');
    expect(run.currentRound).toBe(2);
    const turns = await store.listTurns(runId);
    expect(turns).toHaveLength(2 * items.length * agents.length);
    expect(new Set(turns.map((t) => `${t.round}:${t.itemId}:${t.agent}`)).size).toBe(turns.length);
    const round2 = turns.find((t) => t.round === 2 && t.itemId === 'U01' && t.agent === 'Kai')!;
    const promptText = (round2.prompt as { text: string }).text;
    expect(promptText).toContain('In the previous round the others said:');
    expect(promptText).toContain('- Yuna:');
    expect(promptText).toContain('- Miso:');
    expect(promptText).not.toContain('- Kai:');
    // Every agent's state row is committed (settings, utterances and last turn are not in it), and its memory
    // window is its last turns in the log, in the order it finished them: the same window it holds in memory.
    const states = await store.loadAgentStates(runId, { machineVersion: AGENT_MACHINE_VERSION });
    expect(Object.keys(states).sort()).toEqual([...agents].sort());
    expect(states.Kai!.slots).toEqual({ desk: 'Kai-desk' });
    expect(states.Kai!.snapshot).toMatchObject({ status: 'active', value: 'idle' });
    expect(Object.keys(states.Kai!.snapshot.context as object).sort()).toEqual(['turn']);
    const kai = (await store.recentTurns(runId, { agents: ['Kai'], limit: 100 })).Kai!;
    expect(kai.map((t) => t.agentSeq)).toEqual(Array.from({ length: 2 * items.length }, (_, i) => i + 1));
    const window = live.utterances.length;
    expect(window).toBeGreaterThan(0);
    expect(kai.slice(-window).map(utteranceOf)).toEqual(live.utterances);
    expect(await store.recallCall(`${runId}:1:U01:Kai:call0`)).toBeDefined();
    expect(events.filter((e) => e.type === 'round.committed').map((e) => e.data)).toEqual([
      { round: 1, turns: 9 },
      { round: 2, turns: 9 },
    ]);
    expect(events.filter((e) => e.type === 'turn.completed')).toHaveLength(18);
  });
});
