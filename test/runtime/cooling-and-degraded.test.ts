import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { driveUntil, emulatorEndpoint, settle } from '../support/runtime-harness.ts';

let emulator: Emulator;
let clock: ManualClock;
let supervisor: Supervisor | undefined;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:32:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 5 }, clock });
});
afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
  emulator.clearFaults();
  emulator.reset();
});
afterAll(async () => {
  await emulator.close();
});

function twoEndpointRuntime() {
  return createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6'),
        emulatorEndpoint(emulator, 'flash', 'gemini', 'gemini-2.5-flash'),
      ],
      chains: { premium: ['sonnet', 'flash'] },
      agentDefaults: { maxWaitMs: 10_000, probeIntervalMs: 5_000 },
    },
    { clock, random: () => 0.5 },
  );
}

describe('every endpoint cooling', () => {
  it('earliest back in 2 s, max wait 10 s: the agent cools (no token held), then succeeds', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 2_000, count: 1 });
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'gemini' }, retryAfterMs: 5_000, count: 1 });
    supervisor = twoEndpointRuntime();
    const agent = supervisor.spawnAgent({ name: 'analyst-macro', chain: 'premium', tier: 'analysis' });
    let turn: Turn | undefined;
    void agent.ask('rates outlook').then((t) => (turn = t));
    await settle(() => agent.state() === 'cooling');
    expect(supervisor.tokens().held).toBe(0);
    await driveUntil(clock, () => turn !== undefined, { stepMs: 250 });
    expect(turn!.outcome).toBe('answered');
    expect(turn!.endpointId).toBe('sonnet');
    expect(turn!.faults.map((f) => f.kind)).toEqual(['rate_limited', 'rate_limited']);
    expect(turn!.waitMs).toBeGreaterThanOrEqual(2_000);
    expect(turn!.waitMs).toBeLessThan(5_000);
  });

  it('earliest back in 60 s: answers degraded, labelled, and recovers by itself later', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 60_000, count: 1 });
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'gemini' }, retryAfterMs: 60_000, count: 1 });
    supervisor = twoEndpointRuntime();
    const agent = supervisor.spawnAgent({
      name: 'analyst-macro',
      chain: 'premium',
      tier: 'analysis',
      memory: { focus: 'rates' },
    });
    const turn = await agent.ask('rates outlook');
    expect(turn.outcome).toBe('degraded');
    expect(turn.degraded).toBe(true);
    expect(turn.degradedReason).toMatch(/max wait/);
    expect(turn.answer.degraded).toBeDefined();
    expect(turn.answer.text).not.toMatch(/waiting for backup engine|credit being coordinated/i);
    expect(agent.state()).toBe('degraded');
    // Nobody asks it anything: once the cooldowns pass, its own health check brings it back.
    await driveUntil(clock, () => agent.state() === 'idle', { stepMs: 1_000, maxSimulatedMs: 120_000 });
    const again = await agent.ask('rates outlook, again');
    expect(again.outcome).toBe('answered');
  });
});
