import { describe, expect, it } from 'vitest';
import { createVirtualClock } from '../../src/clock/virtual-clock.ts';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { Turn } from '../../src/core/turn.ts';
import { emulatorEndpoint, settle } from '../support/runtime-harness.ts';

/*
 * `maxWaitMs` is the longest a turn waits for its endpoints to come back between two calls. Each answer "cool until
 * X" used to be weighed against the whole max wait again: a turn that cooled while the breaker was OPEN, then
 * re-asked while its HALF-OPEN probe was in flight, was told to look again in a second, and again, for as long as the
 * probe took: a hostile review measured 8.5 s of waiting against a max wait of 3 s. And a probe that closed the
 * breaker woke nobody: the cooling turns learned of it at their next one-second look.
 * Real SDK over real HTTP against the emulator, both on one virtual clock: every figure is the clock's, exact.
 */

const T0 = Date.parse('2026-08-17T07:32:00+09:00');
const DEADLINE_MS = 2_000;
const KEY = 'sk-max-wait-bound-000000000001';

async function withSolo(
  opts: { latencyMs: number; stalls: number; maxWaitMs: number; stallOpenMs: number },
  body: (ask: () => Promise<Turn>) => Promise<void>,
): Promise<void> {
  const clock = createVirtualClock({ origin: T0 });
  const emulator = await startEmulator({
    profile: { seed: 7, latency: { minMs: opts.latencyMs, maxMs: opts.latencyMs } },
    clock,
  });
  const deadlines = { headersTimeoutMs: DEADLINE_MS, idleTimeoutMs: DEADLINE_MS };
  const supervisor = createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'solo', 'openai', 'gpt-4o-mini', KEY, deadlines)],
      chains: { main: ['solo'] },
      concurrency: { limit: 2 },
      breaker: { stallOpenMs: opts.stallOpenMs },
      agentDefaults: { maxWaitMs: opts.maxWaitMs },
    },
    { clock },
  );
  try {
    emulator.addFault({ kind: 'stall_after_headers', match: { key: KEY }, count: opts.stalls });
    const agent = supervisor.spawnAgent({ name: 'writer', chain: 'main' });
    await body(() => agent.ask('Where is the report?'));
    await settle(() => supervisor.tokens().held === 0);
  } finally {
    await supervisor.stop();
    await emulator.close();
    clock.stop();
  }
}

describe('max wait bounds the whole wait between two calls', () => {
  it('a turn waiting out an OPEN breaker and then its stalled probe answers degraded at its max wait, not after the probe', async () => {
    // The call stalls (2 s deadline), the breaker opens for 1 s, its probe stalls too: the probe's outcome comes
    // 2 s after HALF-OPEN, later than the 1.5 s of max wait the turn has left after its call.
    await withSolo({ latencyMs: 0, stalls: 2, maxWaitMs: 1_500, stallOpenMs: 1_000 }, async (ask) => {
      const turn = await ask();
      console.info(`stalled probe: ${turn.outcome}, waited ${turn.waitMs} ms, attempts ${turn.attempts}`);
      expect(turn.outcome).toBe('degraded');
      expect(turn.attempts).toBe(1);
      expect(turn.faults.map((f) => f.kind)).toEqual(['timeout']);
      expect(turn.waitMs).toBeLessThanOrEqual(1_500);
      // It did wait for the probe as long as its max wait allowed (not degrading at the first look).
      expect(turn.waitMs).toBeGreaterThanOrEqual(1_500);
    });
  });

  it('a probe that closes the breaker wakes the cooling turn at once, not at its next look', async () => {
    // Every call takes 300 ms. The call stalls: its deadline ends it at 2.3 s; OPEN for 1 s; the probe at 3.3 s is
    // answered at 3.6 s and closes the breaker. The turn asks then and is answered 300 ms later: 3.9 s in all (the
    // next one-second look would have made it 4.6 s).
    await withSolo({ latencyMs: 300, stalls: 1, maxWaitMs: 5_000, stallOpenMs: 1_000 }, async (ask) => {
      const turn = await ask();
      const took = turn.finishedAt - turn.startedAt;
      console.info(`probe closes: ${turn.outcome} after ${took} ms, waited ${turn.waitMs} ms`);
      expect(turn.outcome).toBe('answered');
      expect(turn.faults.map((f) => f.kind)).toEqual(['timeout']);
      expect(took).toBeLessThanOrEqual(2_300 + 1_000 + 300 + 300 + 50);
    });
  });
});

describe('a breaker waiting for its probe, beside others in the chain', () => {
  const KA = 'sk-max-wait-chain-A-0000000001';
  const KB = 'sk-max-wait-chain-B-0000000001';
  const sleep = (clock: ReturnType<typeof createVirtualClock>, ms: number) =>
    new Promise<void>((resolve) => clock.setTimeout(resolve, ms));

  it('a turn waits for the probe of one endpoint even when another comes back later than its max wait left', async () => {
    // Chain [A, B]. B's call stalls: OPEN for 1 s, then its probe (300 ms) closes it at +3300. A is in a 429
    // cooldown until +4250. The turn, asked at +2400 with 1.5 s of max wait, must wait for B's probe (answered at
    // +3600 on B); only A was weighed (its cooldown ends beyond the max wait) and the turn degraded at +3000.
    const clock = createVirtualClock({ origin: T0 });
    const emulator = await startEmulator({
      profile: { seed: 7, latency: { minMs: 300, maxMs: 300 } },
      clock,
    });
    const deadlines = { headersTimeoutMs: DEADLINE_MS, idleTimeoutMs: DEADLINE_MS };
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'A', 'openai', 'gpt-4o-mini', KA, deadlines),
          emulatorEndpoint(emulator, 'B', 'openai', 'gpt-4o-mini', KB, deadlines),
        ],
        chains: { ab: ['A', 'B'], aonly: ['A'], bonly: ['B'] },
        concurrency: { limit: 3 },
        breaker: { stallOpenMs: 1_000, probesToClose: 1 },
        agentDefaults: { maxWaitMs: 10_000 },
      },
      { clock },
    );
    try {
      emulator.addFault({ kind: 'stall_after_headers', match: { key: KB }, count: 1 });
      emulator.addFault({ kind: 'rate_limit', match: { key: KA }, count: 1, retryAfterMs: 1_950 });
      const trip = supervisor.spawnAgent({ name: 'trip', chain: 'bonly' }).ask('trip B');
      await sleep(clock, 2_000);
      const coolA = supervisor.spawnAgent({ name: 'cool-a', chain: 'aonly' }).ask('cool A');
      await sleep(clock, 400);
      const turn = await supervisor.spawnAgent({ name: 'w', chain: 'ab', maxWaitMs: 1_500 }).ask('victim');
      await Promise.all([trip, coolA]);
      console.info(
        `w: ${turn.outcome} on ${turn.endpointId} at +${turn.finishedAt - T0}, waited ${turn.waitMs} ms`,
      );
      expect(turn.outcome).not.toBe('degraded');
      expect(turn.endpointId).toBe('B');
      expect(turn.waitMs).toBeLessThanOrEqual(1_500);
      await settle(() => supervisor.tokens().held === 0);
    } finally {
      await supervisor.stop();
      await emulator.close();
      clock.stop();
    }
  });

  it('a breaker closing wakes only the cooling agents whose chain has that endpoint', async () => {
    // 40 agents cool on A's 9 s cooldown; B (in none of their chains) stalls, opens, and its probe closes it. Waking
    // them all would make each ask again for nothing (a reviewer measured 833 ms of blocked event loop with 2 000).
    const clock = createVirtualClock({ origin: T0 });
    const emulator = await startEmulator({ profile: { seed: 7, latency: { minMs: 0, maxMs: 0 } }, clock });
    const deadlines = { headersTimeoutMs: DEADLINE_MS, idleTimeoutMs: DEADLINE_MS };
    const atClose: string[] = [];
    let closedAt: number | undefined;
    const onEvent = (e: RuntimeEvent) => {
      if (
        e.type === 'breaker.state' &&
        e.endpoint === 'B' &&
        (e.data as { state: string }).state === 'closed'
      )
        closedAt = e.at;
      else if (closedAt !== undefined && e.at === closedAt && e.type === 'token.wait')
        atClose.push(e.agent ?? '?');
    };
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'A', 'openai', 'gpt-4o-mini', KA, {
            ...deadlines,
            maxRetryAfterMs: 60_000,
          }),
          emulatorEndpoint(emulator, 'B', 'openai', 'gpt-4o-mini', KB, deadlines),
        ],
        chains: { a: ['A'], b: ['B'] },
        concurrency: { limit: 3 },
        breaker: { stallOpenMs: 1_000, probesToClose: 1 },
        agentDefaults: { maxWaitMs: 10_000 },
      },
      { clock, onEvent },
    );
    try {
      emulator.addFault({ kind: 'rate_limit', match: { key: KA }, count: 1, retryAfterMs: 9_000 });
      emulator.addFault({ kind: 'stall_after_headers', match: { key: KB }, count: 1 });
      const first = supervisor.spawnAgent({ name: 'first', chain: 'a' }).ask('first');
      await sleep(clock, 10);
      const cooling = Array.from({ length: 40 }, (_, k) =>
        supervisor.spawnAgent({ name: `c${k}`, chain: 'a' }).ask(`c${k}`),
      );
      await sleep(clock, 10);
      // The first (its call got the 429) and the 40 behind it.
      expect(supervisor.agents().filter((h) => h.state() === 'cooling')).toHaveLength(41);
      const onB = await supervisor.spawnAgent({ name: 'tb', chain: 'b' }).ask('on B');
      expect(onB.outcome).toBe('answered');
      expect(closedAt).toBeDefined();
      expect(atClose).toEqual([]);
      const turns = await Promise.all([first, ...cooling]);
      expect(turns.filter((t) => t.outcome === 'degraded')).toEqual([]);
      await settle(() => supervisor.tokens().held === 0);
    } finally {
      await supervisor.stop();
      await emulator.close();
      clock.stop();
    }
  });
});
