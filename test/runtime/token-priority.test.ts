import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 6, latency: { minMs: 20, maxMs: 20 } } });
});
afterAll(async () => {
  await emulator.close();
});

describe('supervisor token order', () => {
  it('grants by tier priority (analysis before ops), first come first served inside a tier', async () => {
    const grants: string[] = [];
    const supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini')],
        chains: { main: ['mini'] },
        tiers: ['analysis', 'ops'],
        concurrency: { limit: 1 },
      },
      {
        onEvent: (e: RuntimeEvent) => {
          if (e.type === 'token.granted') grants.push(e.agent);
        },
      },
    );
    const ops = ['codex', 'orchestrator', 'flusher-llm'].map((name) =>
      supervisor.spawnAgent({ name, chain: 'main', tier: 'ops' }),
    );
    const analysts = ['analyst-macro', 'analyst-technical', 'cowork'].map((name) =>
      supervisor.spawnAgent({ name, chain: 'main', tier: 'analysis' }),
    );
    // The ops agents ask first; one of them gets the only token, the rest queue behind it.
    const asks = [...ops, ...analysts].map((a) => a.ask(`work of ${a.name}`));
    const turns = await Promise.all(asks);
    await supervisor.stop();
    expect(turns.every((t) => t.outcome === 'answered')).toBe(true);
    expect(grants[0]).toBe('codex');
    // Every analyst was served before any waiting ops agent, each tier in arrival order.
    expect(grants.slice(1)).toEqual([
      'analyst-macro',
      'analyst-technical',
      'cowork',
      'orchestrator',
      'flusher-llm',
    ]);
    // Never more than the one token in flight, by the emulator's own record.
    expect(emulator.stats().maxInFlight).toBe(1);
  });
});
