import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { type Emulator, startEmulator } from '../../src/emulator/index.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * Two runtimes on one pool (as two processes would be; the backend is real, only the process boundary is not
 * crossed here — test/coordination/multi-process.test.ts crosses it): what one learns about an endpoint reaches
 * the other.
 */

let emulator: Emulator;
const supervisors: Supervisor[] = [];
const pools: CoordinationOptions[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 17, defaultQuotas: { rpm: 10 } } });
});
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.stop({ signal: AbortSignal.timeout(2_000) })));
  emulator.clearFaults();
  emulator.reset();
  for (const p of pools.splice(0)) await cleanPool(p);
});
afterAll(async () => {
  await emulator.close();
});

function runtime(coordination: CoordinationOptions, processId: string): Supervisor {
  const s = createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6')],
      chains: { premium: ['sonnet'] },
      agentDefaults: { maxWaitMs: 1_000, maxAttempts: 1 },
    },
    { coordination: { ...coordination, processId } },
  );
  supervisors.push(s);
  return s;
}

const sonnet = (s: Supervisor) => s.health().find((h) => h.id === 'sonnet')!;

describe.each(coordinationCases())('shared endpoint health on $name', ({ options: make }) => {
  it('a credit loss seen by one process disables the endpoint for the other', async () => {
    const pool = make();
    pools.push(pool);
    const [a, b] = [runtime(pool, 'a'), runtime(pool, 'b')];
    emulator.addFault({ kind: 'credit_exhausted', match: { flavor: 'anthropic' }, count: 1 });
    const turn = await a.spawnAgent({ name: 'x', chain: 'premium', tier: 'analysis' }).ask('hello');
    expect(turn.faults.map((f) => f.kind)).toContain('credit_exhausted');
    await waitFor(() => sonnet(b).disabledUntil > b.clock.now(), 'the disable to reach process b');
    expect(sonnet(b).disabledReason).toBe('credit exhausted');
    // b sends nothing to the disabled endpoint.
    const calls = emulator.stats().totalCalls;
    const other = await b.spawnAgent({ name: 'y', chain: 'premium', tier: 'analysis' }).ask('hello?');
    expect(other.outcome).toBe('degraded');
    expect(emulator.stats().totalCalls).toBe(calls);
  }, 30_000);

  it("the provider's rate-limit counts seen by one process correct the other's bucket", async () => {
    const pool = make();
    pools.push(pool);
    const [a, b] = [runtime(pool, 'a'), runtime(pool, 'b')];
    const agent = a.spawnAgent({ name: 'x', chain: 'premium', tier: 'analysis' });
    for (let i = 0; i < 4; i++) expect((await agent.ask(`q${i}`)).outcome).toBe('answered');
    // The key's quota is 10 RPM: after a's 4 calls the headers say 6 left, and b (no call of its own) knows it.
    await waitFor(
      () => sonnet(b).rpm?.available !== undefined && sonnet(b).rpm!.available! <= 6,
      "b's bucket",
    );
    expect(sonnet(b).rpm?.capacity).toBe(10);
  }, 30_000);
});
