import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { systemClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import type { ParsedEndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { Engine, EngineRequest } from '../../src/core/engine-types.ts';
import { createBreakwaterExecutor } from '../../src/runs/breakwater-executor.ts';
import { toTurnInput } from '../../src/runs/round-runner.ts';
import { applyRunRestore, loadRunRestore } from '../../src/runs/run-restore.ts';
import { storeCallMemo } from '../../src/runs/store-call-memo.ts';
import { durableAgentState } from '../../src/runtime/agent-snapshot.ts';
import type { LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import type { AgentMemory } from '../../src/core/turn.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import type { TurnInput } from '../../src/store/store-types.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;
let database: BreakwaterDatabase;
let store: RunStore;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 33 } });
  database = await openDatabase({ dataDir: ':memory:' });
  store = createRunStore(database);
});
afterAll(async () => {
  await database.close();
  await emulator.close();
});

/** Real engines, with every request they are handed written down (what each engine was asked). */
function recordingEngines() {
  const seen: { endpointId: string; request: Omit<EngineRequest, 'signal'> }[] = [];
  const build = (config: ParsedEndpointConfig): Engine => {
    const real = createEngine(config);
    return {
      endpoint: real.endpoint,
      call(request) {
        const { signal: _signal, ...plain } = request;
        seen.push({ endpointId: config.id, request: structuredClone(plain) });
        return real.call(request);
      },
    };
  };
  return { seen, build };
}

const kai: LlmAgentDefinition = {
  name: 'Kai',
  role: 'You are Kai, the incident commander.',
  chain: 'main',
  tier: 'analysis',
  memory: { incident: 'INC-4471 payment API 5xx', owner: 'payments-oncall' },
  tools: {
    lookup_metric: {
      description: 'Read a service metric',
      parameters: { type: 'object', properties: { metric: { type: 'string' } }, required: ['metric'] },
      run: async (args) => ({ metric: args.metric, value: 0.042 }),
    },
  },
};

function config(emu: Emulator) {
  return {
    endpoints: [
      emulatorEndpoint(emu, 'engine-a', 'openai', 'gpt-4o'),
      emulatorEndpoint(emu, 'engine-b', 'anthropic', 'claude-sonnet-4-6'),
    ],
    chains: { main: ['engine-a', 'engine-b'] },
  };
}

function expectFullContext(request: Omit<EngineRequest, 'signal'>, memory: AgentMemory) {
  const text = JSON.stringify(request);
  for (const u of memory.utterances) {
    expect(text).toContain(JSON.stringify(u.prompt).slice(1, -1));
    expect(text).toContain(JSON.stringify(u.answer).slice(1, -1));
  }
  for (const [k, v] of Object.entries(memory.slots)) expect(request.system).toContain(`${k}: ${v}`);
  for (const r of memory.toolResults) expect(request.system).toContain(r.result);
}

describe('engine swap keeps the whole working memory', () => {
  it('engine A dies; the prompt engine B gets equals the one A was sent, with every utterance, slot and tool result', async () => {
    const runId = `swap-${Date.now()}`;
    const { seen, build } = recordingEngines();
    const executor = createBreakwaterExecutor({
      config: config(emulator),
      agents: [kai],
      clock: systemClock,
      createEngine: build,
    });
    const first = await executor.ask({
      agent: 'Kai',
      prompt: 'What is the error rate now?',
      key: `${runId}:1`,
      turnId: `${runId}:1`,
      meta: {},
    });
    expect(first.endpointId).toBe('engine-a');
    expect(first.messages.some((m) => m.role === 'tool_result')).toBe(true);
    await executor.ask({
      agent: 'Kai',
      prompt: 'Should we roll back?',
      key: `${runId}:2`,
      turnId: `${runId}:2`,
      meta: {},
    });
    const memory = executor.memory('Kai');
    expect(memory.utterances).toHaveLength(2);
    expect(memory.toolResults.length).toBeGreaterThan(0);

    // Engine A dies (its server refuses connections); the agent moves to engine B.
    const dead = emulator.addFault({ kind: 'connection_refused', match: { flavor: 'openai' } });
    seen.length = 0;
    const third = await executor.ask({
      agent: 'Kai',
      prompt: 'Status for the exec summary?',
      key: `${runId}:3`,
      turnId: `${runId}:3`,
      meta: {},
    });
    emulator.removeFault(dead);
    expect(third.outcome).toBe('fallback');
    expect(third.endpointId).toBe('engine-b');
    const toA = seen.find((s) => s.endpointId === 'engine-a')!.request;
    const toB = seen.find((s) => s.endpointId === 'engine-b')!.request;
    expect(toB).toEqual(toA);
    expectFullContext(toB, memory);
    await executor.stop();
  });

  it('after a crash, the agent restored from its state row and its last turns sends exactly the whole prompt it would have sent, with more turns than historyTurns behind it', async () => {
    const runId = `resume-${Date.now()}`;
    // A window of 2: after 4 turns, the prompt repeats only the last 2; the first 2 are in the log only.
    const shortKai: LlmAgentDefinition = { ...kai, historyTurns: 2 };
    await store.createRun({ runId, scenario: 'swap', totalRounds: 2, machineVersion: AGENT_MACHINE_VERSION });
    const original = recordingEngines();
    const before = createBreakwaterExecutor({
      config: config(emulator),
      agents: [shortKai],
      clock: systemClock,
      createEngine: original.build,
      memo: await storeCallMemo(store, runId, 1),
    });
    const questions = [
      'What is the error rate now?',
      'Should we roll back?',
      'Who owns the payment gateway?',
      'Is the queue draining?',
    ];
    const turns: TurnInput[] = [];
    for (const [i, prompt] of questions.entries()) {
      const key = `${runId}:1:q${i}:Kai`;
      const turn = await before.ask({ agent: 'Kai', prompt, key, turnId: key, meta: {} });
      expect(turn.outcome).toBe('answered');
      turns.push({ ...toTurnInput(`q${i}`, key, turn), agentOrder: i });
    }
    const memory = before.memory('Kai');
    expect(memory.utterances.map((u) => u.prompt)).toEqual(questions.slice(2));
    await store.commitRound({
      runId,
      round: 1,
      turns,
      states: [
        {
          agent: 'Kai',
          machineVersion: AGENT_MACHINE_VERSION,
          ...durableAgentState(before.persistedSnapshot('Kai')),
        },
      ],
      health: before.durableHealth?.(),
    });
    // What the original process would have sent next:
    original.seen.length = 0;
    const next = `${runId}:2:e:Kai`;
    await before.ask({
      agent: 'Kai',
      prompt: 'Status for the exec summary?',
      key: next,
      turnId: next,
      meta: {},
    });
    const wouldHaveSent = original.seen[0]!.request;
    const callsOfThatTurn = original.seen.length;
    await before.stop();

    // The crash: a new process rebuilds Kai from the database only.
    const restore = await loadRunRestore(
      store,
      runId,
      [shortKai],
      (d) => (d as LlmAgentDefinition).historyTurns ?? 6,
    );
    expect(restore.agents.Kai!.memory).toEqual(memory);
    const after = recordingEngines();
    const resumed = createBreakwaterExecutor({
      config: config(emulator),
      agents: [shortKai],
      clock: systemClock,
      createEngine: after.build,
      restored: restore.agents,
    });
    applyRunRestore(resumed.supervisor, restore);
    const callsBefore = emulator.stats().totalCalls;
    const turn = await resumed.ask({
      agent: 'Kai',
      prompt: 'Status for the exec summary?',
      key: next,
      turnId: next,
      meta: {},
    });
    expect(turn.outcome).toBe('answered');
    // The whole request: system prompt (role, slots, tool results), the two remembered exchanges, the question.
    expect(after.seen[0]!.request).toEqual(wouldHaveSent);
    expectFullContext(after.seen[0]!.request, memory);
    const sent = JSON.stringify(after.seen[0]!.request);
    for (const q of questions.slice(0, 2)) expect(sent).not.toContain(q);
    for (const q of questions.slice(2)) expect(sent).toContain(q);
    // The rest of the turn (the tool round trip) runs the same way, with no extra upstream call.
    expect(after.seen.map((s) => s.request)).toEqual(original.seen.map((s) => s.request));
    expect(emulator.stats().totalCalls).toBe(callsBefore + callsOfThatTurn);
    await resumed.stop();
  });
});
