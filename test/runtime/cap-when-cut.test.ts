/**
 * The cap on upstream calls in flight when we cut calls ourselves and hand their tokens on: a caller's deadline,
 * the adapter's header deadline, a lease that runs out. The provider (the emulator, by its own record) must never
 * see the next call before the cut one has gone. Real clock and real HTTP: these are the races a manual clock
 * hides. Bounded by call counts, not by time: the verdict is the same on a slow machine.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint, settle } from '../support/runtime-harness.ts';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 31, latency: { minMs: 0, maxMs: 0 } } });
});
afterEach(() => emulator.clearFaults());
afterAll(async () => {
  await emulator.close();
});

/** Waits (bounded, in I/O turns) until the emulator recorded `n` finished calls of `flavor`. */
async function callsEnded(flavor: string, n: number): Promise<void> {
  await settle(() => emulator.stats().calls.filter((c) => c.flavor === flavor).length >= n, 20_000);
}

function overlaps(flavor: string): number {
  return emulator.stats().calls.filter((c) => c.flavor === flavor && c.inFlightAtStart > 1).length;
}

describe('the cap holds when we cut calls and hand their tokens on', () => {
  it("callers' deadlines: 4 agents ask again and again with AbortSignal.timeout(30) on one token, every call hanging", async () => {
    emulator.reset();
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini', undefined, {
            headersTimeoutMs: 600_000,
          }),
        ],
        chains: { main: ['mini'] },
        concurrency: { limit: 1 },
      },
      { keepAlive: false },
    );
    const outcomes = new Set<string>();
    let enough = false;
    const loops = Array.from({ length: 4 }, async (_, i) => {
      const agent = supervisor.spawnAgent({ name: `a${i}`, chain: 'main' });
      while (!enough) outcomes.add((await agent.ask('q', { signal: AbortSignal.timeout(30) })).outcome);
    });
    await callsEnded('openai', 30);
    enough = true;
    await Promise.all(loops);
    await supervisor.stop();
    await settle(() => emulator.stats().inFlight === 0);
    expect(outcomes).toEqual(new Set(['cancelled']));
    expect(overlaps('openai')).toBe(0);
    expect(emulator.stats().maxInFlight).toBe(1);
  });

  it('the header deadline: a 20 ms deadline cuts every call; 30 of them one after another on one token', async () => {
    emulator.reset();
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' } });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'h', 'anthropic', 'claude-haiku-4-5', undefined, {
            headersTimeoutMs: 20,
          }),
        ],
        chains: { main: ['h'] },
        concurrency: { limit: 1 },
        retry: { baseBackoffMs: 1, maxBackoffMs: 2, budgetRatio: 10, minRetriesPerWindow: 1_000 },
        breaker: { consecutiveToOpen: 1_000, minCallsInWindow: 1_000, openOnStall: false },
        agentDefaults: { maxAttempts: 1_000, maxWaitMs: 60_000 },
      },
      { keepAlive: false },
    );
    for (let i = 0; i < 4; i++) void supervisor.spawnAgent({ name: `b${i}`, chain: 'main' }).ask('x');
    await callsEnded('anthropic', 30);
    await supervisor.stop({ signal: AbortSignal.abort() });
    await settle(() => emulator.stats().inFlight === 0);
    expect(overlaps('anthropic')).toBe(0);
    expect(emulator.stats().maxInFlight).toBe(1);
  });

  it('the lease: a 30 ms lease cuts every call; 30 of them one after another on one token', async () => {
    emulator.reset();
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'gemini' } });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'g', 'gemini', 'gemini-2.5-flash', undefined, {
            headersTimeoutMs: 600_000,
          }),
        ],
        chains: { main: ['g'] },
        concurrency: { limit: 1, leaseMs: 30, reclaimGraceMs: 1_000 },
        retry: { baseBackoffMs: 1, maxBackoffMs: 2, budgetRatio: 10, minRetriesPerWindow: 1_000 },
        breaker: { consecutiveToOpen: 1_000, minCallsInWindow: 1_000, openOnStall: false },
        agentDefaults: { maxAttempts: 1_000, maxWaitMs: 60_000 },
      },
      { keepAlive: false },
    );
    for (let i = 0; i < 4; i++) void supervisor.spawnAgent({ name: `c${i}`, chain: 'main' }).ask('x');
    await callsEnded('gemini', 30);
    await supervisor.stop({ signal: AbortSignal.abort() });
    await settle(() => emulator.stats().inFlight === 0);
    expect(overlaps('gemini')).toBe(0);
    expect(emulator.stats().maxInFlight).toBe(1);
  });

  it("a BYOK key's check call waits for a token like any upstream call", async () => {
    emulator.reset();
    const hang = emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' } });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'p', 'anthropic', 'claude-haiku-4-5', undefined, {
            headersTimeoutMs: 600_000,
          }),
        ],
        chains: { main: ['p'] },
        concurrency: { limit: 1 },
        byok: {
          templates: {
            openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') },
          },
        },
      },
      { keepAlive: false },
    );
    const controller = new AbortController();
    const hung = supervisor
      .spawnAgent({ name: 'Kai', chain: 'main' })
      .ask('hangs', { signal: controller.signal });
    await settle(() => emulator.stats().inFlight === 1);
    let receipt: { provider: string } | undefined;
    const injected = supervisor.byok
      .inject('default', 'openai', 'sk-user-key-000000000000000000')
      .then((r) => {
        receipt = r;
      });
    // The only token is held by the hanging call: the check has not gone upstream.
    for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(receipt).toBeUndefined();
    expect(emulator.stats().byFlavor.openai ?? 0).toBe(0);
    // The hanging call is cut; its token goes to the check (served first), then the key is live.
    emulator.removeFault(hang);
    controller.abort();
    expect((await hung).outcome).toBe('cancelled');
    await injected;
    expect(receipt?.provider).toBe('openai');
    expect(emulator.stats().maxInFlight).toBe(1);
    await supervisor.stop();
  });
});
