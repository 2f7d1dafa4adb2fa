import { describe, expect, it } from 'vitest';
import { createVirtualClock } from '../../src/clock/virtual-clock.ts';
import { keyFingerprint } from '../../src/emulator/emulator-core.ts';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { emulatorEndpoint, settle } from '../support/runtime-harness.ts';

/*
 * A stall opens its endpoint's breaker (`openOnStall`). With a backup that is what a user wants; with nowhere else to
 * go (a chain of one endpoint) an open period longer than the agent's max wait (30 s against 10 s by default) made
 * every turn degrade without any call for 30 s, though the provider answered again right after its one stall. A
 * stall-opened breaker moves to HALF-OPEN after `breaker.stallOpenMs` (default 5 s, within the default max wait):
 * the waiting turns are answered once the probes find the endpoint back. Real SDK over real HTTP against the
 * emulator, both on one virtual clock: every figure is read from that clock, never from this machine's speed.
 */

const T0 = Date.parse('2026-08-17T07:32:00+09:00');
const DEADLINE_MS = 2_000;
const KEY = 'sk-solo-stall-once-00000000001';
/** Turns asked over the former open period (30 s): one every 3 s of run clock. */
const TURNS = 10;
const GAP_MS = 3_000;

describe('a one-endpoint chain whose endpoint stalls once, then is healthy', () => {
  it.each([false, true])(
    'stream %s: every turn is answered upstream; none degrades without a call',
    async (stream) => {
      await everyTurnAnswered(stream, false);
    },
  );
  // The probe after the stall is answered with a 429 and Retry-After 3 s: the provider is alive and said when to come
  // back. That used to reopen the circuit for the whole `openMs` (30 s), and the turns degraded without a call again.
  it.each([false, true])(
    'stream %s, the first probe rate-limited with Retry-After 3 s: every turn is answered upstream',
    async (stream) => {
      await everyTurnAnswered(stream, true);
    },
  );
});

async function everyTurnAnswered(stream: boolean, probeRateLimited: boolean): Promise<void> {
  const clock = createVirtualClock({ origin: T0 });
  const emulator = await startEmulator({ profile: { seed: 31, latency: { minMs: 0, maxMs: 0 } }, clock });
  const deadlines = { headersTimeoutMs: DEADLINE_MS, idleTimeoutMs: DEADLINE_MS };
  const supervisor = createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'solo', 'openai', 'gpt-4o-mini', KEY, deadlines)],
      chains: { main: ['solo'] },
      concurrency: { limit: 2 },
    },
    { clock },
  );
  try {
    emulator.addFault({ kind: 'stall_after_headers', match: { key: KEY }, count: 1 });
    if (probeRateLimited)
      emulator.addFault({ kind: 'rate_limit', match: { key: KEY }, count: 1, retryAfterMs: 3_000 });
    const agent = supervisor.spawnAgent({ name: 'writer', chain: 'main' });
    const ask = async (prompt: string): Promise<Turn> => {
      if (!stream) return agent.ask(prompt);
      let done: Turn | undefined;
      for await (const e of agent.stream(prompt)) if (e.type === 'done') done = e.turn;
      if (!done) throw new Error('the stream ended without its done event');
      return done;
    };
    const turns: Turn[] = [];
    for (let i = 0; i < TURNS; i++) {
      turns.push(await ask(`Question ${i}?`));
      await new Promise<void>((resolve) => clock.setTimeout(resolve, GAP_MS));
    }
    const callsMade = emulator.stats().calls.filter((c) => c.key === keyFingerprint(KEY));
    const degradedWithoutCall = turns.filter((t) => t.degraded && t.attempts === 0).length;
    const span = turns[turns.length - 1]!.finishedAt - turns[0]!.startedAt;
    console.info(
      `single endpoint (stream ${stream}): ${turns.length} turns over ${span} ms of run clock; ` +
        `outcomes [${turns.map((t) => `${t.outcome}/${t.attempts}`).join(' ')}]; ` +
        `degraded with 0 calls: ${degradedWithoutCall}; calls to the emulator: ${callsMade.length}`,
    );
    expect(degradedWithoutCall).toBe(0);
    // The stalled turn waits for the probes and is answered by the recovered endpoint; so is every later one.
    expect(turns.map((t) => t.outcome)).toEqual(turns.map(() => 'answered'));
    expect(turns[0]!.faults.map((f) => f.kind)).toEqual(['timeout']);
    if (probeRateLimited) expect(callsMade.filter((c) => c.status === 429)).toHaveLength(1);
    for (const t of turns.slice(1)) expect(t.faults).toEqual([]);
    // The breaker did not wait out the 30 s of `openMs`: the first answer came within the stall window + probes.
    expect(turns[0]!.finishedAt - turns[0]!.startedAt).toBeLessThan(
      DEADLINE_MS + 5_000 + (probeRateLimited ? 3_000 : 0) + 2_000,
    );
    await settle(() => supervisor.tokens().held === 0);
  } finally {
    await supervisor.stop();
    await emulator.close();
    clock.stop();
  }
}
