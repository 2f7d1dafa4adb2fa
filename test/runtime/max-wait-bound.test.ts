import { describe, expect, it } from 'vitest';
import { createVirtualClock } from '../../src/clock/virtual-clock.ts';
import { startEmulator } from '../../src/emulator/index.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/runtime/turn.ts';
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
