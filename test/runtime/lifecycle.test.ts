import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { isAgentStoppedError } from '../../src/core/errors/lifecycle-errors.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { emulatorEndpoint, settle } from '../support/runtime-harness.ts';

let emulator: Emulator;
let clock: ManualClock;
beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 23, latency: { minMs: 0, maxMs: 0 } }, clock });
});
// A test that hangs calls on purpose must not leave its fault behind for the next one, pass or fail.
afterEach(() => emulator.clearFaults());
afterAll(async () => {
  await emulator.close();
});

function runtime(events: RuntimeEvent[] = []) {
  return createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini', undefined, { headersTimeoutMs: 600_000 }),
      ],
      chains: { main: ['mini'] },
      concurrency: { limit: 1 },
    },
    { clock, keepAlive: false, onEvent: (e) => events.push(e) },
  );
}

describe('lifecycles that always settle', () => {
  it('ask() after the agent or the supervisor stopped rejects with AgentStoppedError; state() says stopped', async () => {
    const supervisor = runtime();
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
    const noa = supervisor.spawnAgent({ name: 'Noa', chain: 'main' });
    kai.stop();
    expect(kai.state()).toBe('stopped');
    const byAgent = await kai.ask('hello').catch((e: unknown) => e);
    expect(isAgentStoppedError(byAgent)).toBe(true);
    expect((byAgent as Error).message).toMatch(/agent Kai is stopped; spawn it again/);
    await supervisor.stop();
    expect(supervisor.state()).toBe('stopped');
    expect(noa.state()).toBe('stopped');
    const bySupervisor = await noa.ask('hello').catch((e: unknown) => e);
    expect(isAgentStoppedError(bySupervisor) && bySupervisor.by).toBe('supervisor');
    expect(() => supervisor.spawnAgent({ name: 'Late', chain: 'main' })).toThrow(
      /supervisor is stopping or stopped/,
    );
  });

  it('handle.stop() mid-turn settles its asks cancelled, and supervisor.stop() then resolves', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
    const supervisor = runtime();
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
    const running = kai.ask('hangs');
    const queued = kai.ask('behind it');
    await settle(() => emulator.stats().inFlight === 1);
    kai.stop();
    const [a, b] = await Promise.all([running, queued]);
    expect([a.outcome, b.outcome]).toEqual(['cancelled', 'cancelled']);
    await supervisor.stop();
    expect(supervisor.tokens()).toMatchObject({ held: 0, queue: [] });
    await settle(() => emulator.stats().inFlight === 0);
  });

  it('stop({ signal }) aborts the calls in flight and settles every pending ask before it resolves', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
    const supervisor = runtime();
    const agents = ['a', 'b', 'c'].map((name) => supervisor.spawnAgent({ name, chain: 'main' }));
    const turns: Turn[] = [];
    for (const agent of agents) void agent.ask('hangs or waits').then((t) => turns.push(t));
    await settle(() => emulator.stats().inFlight === 1 && supervisor.tokens().queue.length === 2);
    const controller = new AbortController();
    const stopping = supervisor.stop({ signal: controller.signal });
    // Draining: new work is refused at once, the asks already given are still pending.
    await expect(agents[0]!.ask('late')).rejects.toSatisfy(isAgentStoppedError);
    expect(turns).toHaveLength(0);
    controller.abort();
    await stopping;
    expect(turns.map((t) => t.outcome)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    // Once stop resolves, every token is back: the call in flight was aborted and has ended.
    expect(supervisor.tokens()).toMatchObject({ held: 0, queue: [] });
    await settle(() => emulator.stats().inFlight === 0);
  });

  it('a queued ask whose signal aborts settles at once with nothing sent; a pre-aborted ask changes nothing', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
    const events: RuntimeEvent[] = [];
    const supervisor = runtime(events);
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
    void kai.ask('hangs');
    await settle(() => emulator.stats().inFlight === 1);
    const controller = new AbortController();
    const queued = kai.ask('behind it', { signal: controller.signal });
    const before = emulator.stats().totalCalls + emulator.stats().inFlight;
    controller.abort();
    const turn = await queued;
    expect(turn).toMatchObject({ outcome: 'cancelled', attempts: 0, faults: [] });
    expect(turn.error).toMatch(/before it started; nothing was sent/);

    const seen = events.length;
    const memory = kai.memory();
    const pre = await kai.ask('never sent', { signal: AbortSignal.abort() });
    expect(pre.outcome).toBe('cancelled');
    expect(events.length).toBe(seen);
    expect(kai.memory()).toBe(memory);
    expect(kai.state()).toBe('calling');
    expect(emulator.stats().totalCalls + emulator.stats().inFlight).toBe(before);
    await supervisor.stop({ signal: AbortSignal.abort() });
  });

  it('a stopped name can be spawned again and works', async () => {
    const supervisor = runtime();
    supervisor.spawnAgent({ name: 'Kai', chain: 'main' }).stop();
    expect(supervisor.agent('Kai')).toBeUndefined();
    const again = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
    expect((await again.ask('hello')).outcome).toBe('answered');
    await supervisor.stop();
  });

  it('with eleven agents on one run signal, Node does not warn about abort listeners', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const supervisor = createSupervisor(
        {
          endpoints: [emulatorEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini')],
          chains: { main: ['mini'] },
          concurrency: { limit: 3 },
        },
        { clock, keepAlive: false },
      );
      const run = new AbortController();
      const agents = Array.from({ length: 11 }, (_, i) =>
        supervisor.spawnAgent({ name: `a${i}`, chain: 'main' }),
      );
      const turns = await Promise.all(agents.map((a) => a.ask('hello', { signal: run.signal })));
      expect(turns.every((t) => t.outcome === 'answered')).toBe(true);
      await supervisor.stop();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});
