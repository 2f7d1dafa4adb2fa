import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemOf, SEED_DECISION_TREES } from '../../agents/seed-agents.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { roundPrompt } from '../../src/runs/round-prompt.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { loadScenario, resolveScenario } from '../../src/scenarios/load-scenario.ts';
import { scenarioAgents } from '../../src/scenarios/scenario-tools.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 2 } });
});
afterAll(async () => {
  await emulator.close();
});

describe('the seeds’ agents in agents/', () => {
  it('reads the agenda item out of a round prompt', () => {
    const prompt = roundPrompt(
      { id: 'U04', kind: 'urgent', title: 'Primary LLM provider returning 429s on the shared key' },
      2,
      3,
      [],
    );
    expect(itemOf(prompt)).toEqual({
      id: 'U04',
      kind: 'urgent',
      title: 'Primary LLM provider returning 429s on the shared key',
    });
    expect(itemOf('Send the outbox.')).toEqual({});
  });

  it('every agent8-storm agent gets its decision tree from agents/', () => {
    const defs = scenarioAgents(loadScenario(resolveScenario('agent8-storm')));
    for (const d of defs) expect('decisionTree' in d && typeof d.decisionTree === 'function').toBe(true);
  });

  it('with every engine down, an agent answers from its own tree: structured, labelled, never a placeholder', async () => {
    // The only endpoint's credit is gone: no engine can answer.
    emulator.addFault({ kind: 'credit_exhausted', match: { flavor: 'openai' } });
    const supervisor = createSupervisor({
      endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o')],
      chains: { premium: ['primary'] },
    });
    const kai = supervisor.spawnAgent({
      name: 'Kai',
      chain: 'premium',
      memory: { escalation: 'page the owning team lead after 15 minutes without progress' },
      decisionTree: SEED_DECISION_TREES.Kai!,
    });
    const turn = await kai.ask(
      roundPrompt({ id: 'U01', kind: 'urgent', title: 'Checkout API p99 latency above 4 s' }, 1, 3, []),
    );
    await supervisor.stop();
    expect(turn.outcome).toBe('degraded');
    expect(turn.faults.map((f) => f.kind)).toEqual(['credit_exhausted']);
    expect(turn.answer.degraded?.source).toBe('decision_tree');
    expect(turn.answer.degraded?.fields).toMatchObject({ item: 'U01', deadlineMinutes: 15 });
    expect(turn.answer.text).toContain('U01 Checkout API p99 latency above 4 s');
    expect(turn.answer.text).toContain('page the owning team lead');
    expect(turn.answer.text).not.toMatch(/credit being coordinated|waiting for backup engine/i);
  });
});
