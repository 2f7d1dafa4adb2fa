import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { driveUntil, emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;
let clock: ManualClock;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({
    clock,
    profile: {
      seed: 11,
      keys: [
        { alias: 'paced', key: 'sk-test-paced-000000000000', quotas: { default: { rpm: 60 } } },
        { alias: 'a', key: 'sk-test-a-000000000000' },
        { alias: 'b', key: 'sk-test-b-000000000000' },
        { alias: 'c', key: 'sk-test-c-000000000000' },
      ],
    },
  });
});
afterAll(async () => {
  await emulator.close();
});

describe('retry storm', () => {
  it('under 100 % 503 from every endpoint, upstream calls ÷ logical calls stays within the retry budget', async () => {
    emulator.reset();
    const storm = emulator.addFault({ kind: 'overloaded' });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'a', 'anthropic', 'claude-sonnet-4-6', 'sk-test-a-000000000000'),
          emulatorEndpoint(emulator, 'b', 'openai', 'gpt-4o', 'sk-test-b-000000000000'),
          emulatorEndpoint(emulator, 'c', 'gemini', 'gemini-2.5-pro', 'sk-test-c-000000000000'),
        ],
        chains: { premium: ['a', 'b', 'c'] },
        concurrency: { limit: 3 },
        retry: { budgetRatio: 0.1, minRetriesPerWindow: 3 },
      },
      { clock, random: () => 0.5 },
    );
    const agents = ['Kai', 'Yuna', 'Miso', 'Dani', 'Juno', 'Hana', 'Rex', 'Andrew'].map((name) =>
      supervisor.spawnAgent({ name, chain: 'premium', tier: 'analysis' }),
    );
    const turns: Turn[] = [];
    const logical = 40;
    for (let i = 0; i < logical; i++)
      void agents[i % agents.length]!.ask(`item ${i}`).then((t) => turns.push(t));
    await driveUntil(clock, () => turns.length === logical, { stepMs: 200, maxSimulatedMs: 25_000 });
    const upstream = emulator.stats().totalCalls;
    expect(turns.every((t) => t.outcome === 'degraded')).toBe(true);
    expect(upstream / logical).toBeLessThanOrEqual(1.2);
    expect(upstream).toBeGreaterThan(0);
    emulator.removeFault(storm);
    await supervisor.stop();
  });
});

describe('global concurrency tokens', () => {
  it('with 8 agents and tokens = 3, no instant has more than 3 calls in flight (the emulator’s own record)', async () => {
    const realEmulator = await startEmulator({ profile: { seed: 2, latency: { minMs: 15, maxMs: 40 } } });
    try {
      const supervisor = createSupervisor({
        endpoints: [
          emulatorEndpoint(realEmulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6'),
          emulatorEndpoint(realEmulator, 'mini', 'openai', 'gpt-4o-mini'),
        ],
        chains: { premium: ['sonnet', 'mini'], light: ['mini', 'sonnet'] },
        concurrency: { limit: 3 },
      });
      const agents = ['Kai', 'Yuna', 'Miso', 'Dani', 'Juno', 'Hana', 'Rex', 'Andrew'].map((name, i) =>
        supervisor.spawnAgent({ name, chain: i % 2 ? 'premium' : 'light', tier: i % 2 ? 'analysis' : 'ops' }),
      );
      const turns = await Promise.all(agents.flatMap((a) => [a.ask('one'), a.ask('two'), a.ask('three')]));
      expect(turns.every((t) => t.outcome === 'answered')).toBe(true);
      const stats = realEmulator.stats();
      expect(stats.totalCalls).toBe(24);
      expect(stats.maxInFlight).toBeLessThanOrEqual(3);
      // The limit was actually reached, so the check above could have failed.
      expect(stats.maxInFlight).toBe(3);
      await supervisor.stop();
    } finally {
      await realEmulator.close();
    }
  });
});

describe('header pacing', () => {
  it('an endpoint with RPM 60 and 120 requests queued gets at most 2 429s, not ~60', async () => {
    emulator.reset();
    const supervisor = createSupervisor(
      {
        // No limit configured: breakwater learns it from the rate-limit headers of the first responses.
        endpoints: [
          emulatorEndpoint(emulator, 'paced', 'openai', 'gpt-4o-mini', 'sk-test-paced-000000000000'),
        ],
        chains: { only: ['paced'] },
        concurrency: { limit: 3 },
        agentDefaults: { maxWaitMs: 120_000 },
      },
      { clock, random: () => 0.5 },
    );
    const agents = ['w1', 'w2', 'w3', 'w4'].map((name) => supervisor.spawnAgent({ name, chain: 'only' }));
    const turns: Turn[] = [];
    for (let i = 0; i < 120; i++) void agents[i % 4]!.ask(`job ${i}`).then((t) => turns.push(t));
    await driveUntil(clock, () => turns.length === 120, { stepMs: 250, maxSimulatedMs: 240_000 });
    const stats = emulator.stats();
    expect(turns.filter((t) => t.outcome === 'answered').length).toBe(120);
    expect(stats.byStatus['429'] ?? 0).toBeLessThanOrEqual(2);
    expect(stats.byStatus['200']).toBe(120);
    await supervisor.stop();
  });
});
