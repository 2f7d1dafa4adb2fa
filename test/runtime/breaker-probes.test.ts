import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { driveUntil, emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;
let clock: ManualClock;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 9 }, clock });
});
afterAll(async () => {
  await emulator.close();
});

describe('circuit breaker on a dead endpoint', () => {
  it('opens, sends 0 calls until HALF-OPEN, then one probe at a time; 2 good probes close it', async () => {
    const dead = emulator.addFault({ kind: 'connection_reset', match: { flavor: 'vllm' } });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'local-vllm', 'vllm', 'llama-3-70b'),
          emulatorEndpoint(emulator, 'haiku', 'anthropic', 'claude-haiku-4-5'),
        ],
        chains: { light: ['local-vllm', 'haiku'] },
        breaker: { openMs: 30_000, consecutiveToOpen: 3 },
      },
      { clock, random: () => 0 },
    );
    const agents = ['codex', 'orchestrator', 'ops'].map((name) =>
      supervisor.spawnAgent({ name, chain: 'light', tier: 'ops' }),
    );
    // Three network faults in a row open the breaker.
    for (let i = 0; i < 3; i++) {
      const t = await agents[i]!.ask(`job ${i}`);
      expect(t.outcome).toBe('fallback');
    }
    const vllm = () => supervisor.health().find((h) => h.id === 'local-vllm')!;
    expect(vllm().breaker).toBe('open');
    const callsWhenOpened = emulator.stats().byFlavor.vllm ?? 0;
    expect(callsWhenOpened).toBe(3);

    // While OPEN: more work goes straight to the fallback; the dead endpoint gets nothing.
    for (let i = 0; i < 6; i++) {
      const t = await agents[i % 3]!.ask(`more ${i}`);
      expect(t.endpointId).toBe('haiku');
      expect(t.faults).toEqual([]);
    }
    expect(emulator.stats().byFlavor.vllm ?? 0).toBe(callsWhenOpened);

    // The endpoint comes back; after openMs the breaker goes HALF-OPEN and probes, one at a time.
    emulator.removeFault(dead);
    await driveUntil(clock, () => vllm().breaker === 'closed', { stepMs: 1_000, maxSimulatedMs: 60_000 });
    const probes = emulator
      .stats()
      .calls.filter((c) => c.flavor === 'vllm')
      .slice(callsWhenOpened);
    expect(probes).toHaveLength(2);
    expect(probes.every((c) => c.status === 200)).toBe(true);
    expect(probes[1]!.startedAt).toBeGreaterThanOrEqual(probes[0]!.endedAt);
    // Closed again: normal traffic returns to the first endpoint of the chain.
    const back = await agents[0]!.ask('after recovery');
    expect(back.outcome).toBe('answered');
    expect(back.endpointId).toBe('local-vllm');
    await supervisor.stop();
  });
  it('a probe that hangs past its lease is cancelled and counted as failed, and holds its token until it ended: under limit 1, never 2 calls in flight', async () => {
    // Its own emulator and clock: the in-flight high-water mark is this test's alone.
    const own = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
    const emu = await startEmulator({ profile: { seed: 10 }, clock: own });
    try {
      const dead = emu.addFault({ kind: 'connection_reset', match: { flavor: 'vllm' } });
      const supervisor = createSupervisor(
        {
          endpoints: [
            emulatorEndpoint(emu, 'local-vllm', 'vllm', 'llama-3-70b'),
            emulatorEndpoint(emu, 'haiku', 'anthropic', 'claude-haiku-4-5'),
          ],
          chains: { light: ['local-vllm', 'haiku'] },
          breaker: { openMs: 30_000, consecutiveToOpen: 3 },
          concurrency: { limit: 1, leaseMs: 3_000 },
        },
        { clock: own, random: () => 0 },
      );
      const agent = supervisor.spawnAgent({ name: 'ops', chain: 'light', tier: 'ops' });
      for (let i = 0; i < 3; i++) await agent.ask(`job ${i}`);
      const vllm = () => supervisor.health().find((h) => h.id === 'local-vllm')!;
      expect(vllm().breaker).toBe('open');
      emu.removeFault(dead);
      emu.addFault({ kind: 'hang_before_headers', match: { flavor: 'vllm' } });
      // HALF-OPEN: the probe goes, and hangs.
      await driveUntil(own, () => emu.stats().held === 1, { stepMs: 100, maxSimulatedMs: 60_000 });
      expect(vllm().failedProbes).toBeUndefined();
      // An ask meanwhile waits for the one token, which the hanging probe holds until its call has ended.
      let turn: Awaited<ReturnType<typeof agent.ask>> | undefined;
      void agent.ask('while probing').then((t) => {
        turn = t;
      });
      await driveUntil(own, () => turn !== undefined, { stepMs: 500, maxSimulatedMs: 120_000 });
      expect(turn!.outcome).toBe('fallback');
      expect(turn!.endpointId).toBe('haiku');
      expect(emu.stats().maxInFlight).toBe(1);
      // The probe outlived its lease: a failed probe (reopened, its backoff counted), not an abandoned one.
      expect(vllm().breaker).toBe('open');
      expect(vllm().failedProbes).toBe(1);
      const probe = emu.stats().calls.find((c) => c.idempotencyKey?.startsWith('probe:'))!;
      expect(probe.status).toBe('hang');
      expect(probe.endedAt - probe.startedAt).toBe(3_000);
      await supervisor.stop();
    } finally {
      await emu.close();
    }
  });
});
