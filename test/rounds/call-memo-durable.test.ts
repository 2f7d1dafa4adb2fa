import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { systemClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { storeCallMemo } from '../../src/runs/store-call-memo.ts';
import type { CallMemo } from '../../src/runtime/agent-actors.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * The call memo with the real store behind it: an answer is durable before its turn is reported done, the
 * memo is read before a token is asked for (never while holding one), and a memoized answer takes no token.
 */

let emulator: Emulator;
let database: BreakwaterDatabase;
let store: RunStore;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 5 } });
  database = await openDatabase({ dataDir: ':memory:' });
  store = createRunStore(database);
});
afterAll(async () => {
  await database.close();
  await emulator.close();
});

/** The real store memo, watched: when each write landed, and how many tokens were held at each read. */
function watched(real: CallMemo, supervisor: () => Supervisor | undefined) {
  const landed = new Set<string>();
  const heldAtRecall: number[] = [];
  const memo: CallMemo = {
    recall(key) {
      heldAtRecall.push(supervisor()?.tokens().held ?? 0);
      return real.recall(key);
    },
    async remember(key, value) {
      await real.remember(key, value);
      landed.add(key);
    },
  };
  return { memo, landed, heldAtRecall };
}

function runtime(memo: CallMemo) {
  const supervisor = createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o')],
      chains: { main: ['primary'] },
    },
    { clock: systemClock, memo },
  );
  return { supervisor };
}

describe('the call memo', () => {
  it('is durable before the turn is reported done, and is read holding no token', async () => {
    const runId = `memo-durable-${Date.now()}`;
    await store.createRun({ runId, scenario: 'memo', totalRounds: 1, machineVersion: AGENT_MACHINE_VERSION });
    let sup: Supervisor | undefined;
    const w = watched(await storeCallMemo(store, runId, 1), () => sup);
    const { supervisor } = runtime(w.memo);
    sup = supervisor;
    const durableAtCompletion: boolean[] = [];
    supervisor.subscribeEvents((e) => {
      if (e.type === 'turn.completed')
        durableAtCompletion.push(w.landed.has(`${runId}:1:I${durableAtCompletion.length + 1}:Kai:call0`));
    });
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
    for (const item of ['I1', 'I2', 'I3']) {
      const key = `${runId}:1:${item}:Kai`;
      const turn = await kai.ask(`What about ${item}?`, { key, turnId: key });
      expect(turn.outcome).toBe('answered');
      // Reported done: its answer is in the database already.
      expect(await store.recallCall(`${key}:call0`)).toMatchObject({ text: turn.answer.text });
    }
    expect(durableAtCompletion).toEqual([true, true, true]);
    expect(w.heldAtRecall).toHaveLength(3);
    expect(w.heldAtRecall).toEqual([0, 0, 0]);
    await supervisor.stop();
  });

  it('a memoized answer (a resumed round) is given back with no token taken and nothing sent upstream', async () => {
    const runId = `memo-resume-${Date.now()}`;
    await store.createRun({ runId, scenario: 'memo', totalRounds: 1, machineVersion: AGENT_MACHINE_VERSION });
    const key = `${runId}:1:I1:Kai`;
    // The first process got the answer and died before its round committed.
    const first = runtime(await storeCallMemo(store, runId, 1));
    const answered = await first.supervisor
      .spawnAgent({ name: 'Kai', chain: 'main' })
      .ask('What now?', { key, turnId: key });
    await first.supervisor.stop();

    const second = runtime(await storeCallMemo(store, runId, 1));
    const granted: string[] = [];
    second.supervisor.subscribeEvents((e) => {
      if (e.type === 'token.granted') granted.push(String(e.agent));
    });
    const callsBefore = emulator.stats().totalCalls;
    const again = await second.supervisor
      .spawnAgent({ name: 'Kai', chain: 'main' })
      .ask('What now?', { key, turnId: key });
    expect(again.outcome).toBe('answered');
    expect(again.answer.text).toBe(answered.answer.text);
    expect(again.attempts).toBe(0);
    expect(emulator.stats().totalCalls).toBe(callsBefore);
    expect(granted).toEqual([]);
    await second.supervisor.stop();
  });
});
