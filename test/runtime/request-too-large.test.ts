import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFlavor } from '../../src/emulator/emulator-types.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * A request larger than an endpoint's tokens-per-minute limit (issue 31): no wait makes it fit there, so it is not
 * retried there and it does not cool that endpoint for anyone else; the turn goes on to the next endpoint of its
 * chain that can take it, even with no retry budget at all (skipping an endpoint is no retry). Real SDKs over real
 * HTTP against the emulator, whose per-key quota refuses the large request as each provider does.
 */

const T0 = Date.parse('2026-08-17T07:32:00+09:00');
const SMALL_KEY = 'sk-small-tpm-000000000000001';
const BIG_PROMPT = `Summarize this log: ${'x'.repeat(1_200)}`; // ~300 input tokens, the small key's minute holds 200
const MODELS: Record<string, string> = {
  openai: 'gpt-4o',
  anthropic: 'claude-sonnet-4-6',
  gemini: 'gemini-2.5-flash',
};

let emulator: Emulator | undefined;
let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.stop();
  await emulator?.close();
  supervisor = undefined;
  emulator = undefined;
});

async function world(flavor: EmulatorFlavor, chain: readonly string[]) {
  const clock = createManualClock(T0);
  emulator = await startEmulator({
    profile: {
      seed: 31,
      acceptAnyKey: true,
      keys: [{ alias: 'small', key: SMALL_KEY, quotas: { default: { tpm: 200, itpm: 200 } } }],
    },
    clock,
  });
  supervisor = createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'small', flavor, MODELS[flavor]!, SMALL_KEY),
        emulatorEndpoint(emulator, 'large', flavor, MODELS[flavor]!),
      ],
      chains: { main: [...chain] },
      concurrency: { limit: 2 },
      // No retries at all: going on to an endpoint the call never tried must not need one.
      retry: { budgetRatio: 0, minRetriesPerWindow: 0 },
    },
    { clock },
  );
  return { clock, emulator, supervisor };
}

describe('openai: "Request too large" skips that endpoint for the call, and only for the call', () => {
  it('the large request goes on to the next endpoint at once; the small endpoint stays healthy and answers small ones', async () => {
    const w = await world('openai', ['small', 'large']);
    const turn = await w.supervisor.spawnAgent({ name: 'reader', chain: 'main' }).ask(BIG_PROMPT);
    expect(turn).toMatchObject({ outcome: 'fallback', endpointId: 'large', attempts: 2, degraded: false });
    expect(turn.faults.map((f) => [f.kind, f.endpointId, f.status])).toEqual([
      ['request_too_large', 'small', 429],
    ]);
    expect(turn.faults[0]!.message).toMatch(/Request too large for gpt-4o .* Limit 200, Requested \d+/);
    // Nothing about the endpoint itself: no cooldown, no breaker count, no wait for the next caller.
    const small = w.supervisor.health().find((h) => h.id === 'small')!;
    expect(small).toMatchObject({ breaker: 'closed', cooldownUntil: 0, disabledUntil: 0 });
    const next = await w.supervisor.spawnAgent({ name: 'pinger', chain: 'main' }).ask('ping');
    expect(next).toMatchObject({ outcome: 'answered', endpointId: 'small', faults: [] });
    expect(w.emulator.stats().byKey).toMatchObject({ small: 2 });
  });

  it('with no endpoint of its chain able to take it, the turn answers degraded at once, saying why', async () => {
    const w = await world('openai', ['small']);
    const turn = await w.supervisor.spawnAgent({ name: 'reader', chain: 'main' }).ask(BIG_PROMPT);
    expect(turn.outcome).toBe('degraded');
    expect(turn.attempts).toBe(1);
    expect(turn.degradedReason).toMatch(/no endpoint of \[small\] is left for this call/);
    expect(turn.finishedAt).toBe(T0);
  });
});

describe.each(['anthropic', 'gemini'] as const)(
  '%s: the refusal is a rate limit with the whole window to wait',
  (flavor) => {
    it('the turn falls back at once; the small endpoint cools for the window, not for 0 s', async () => {
      const w = await world(flavor, ['small', 'large']);
      const turn = await w.supervisor.spawnAgent({ name: 'reader', chain: 'main' }).ask(BIG_PROMPT);
      expect(turn).toMatchObject({ outcome: 'fallback', endpointId: 'large', attempts: 2 });
      expect(turn.faults.map((f) => [f.kind, f.endpointId, f.retryAfterMs])).toEqual([
        ['rate_limited', 'small', 60_000],
      ]);
      expect(w.supervisor.health().find((h) => h.id === 'small')!.cooldownUntil).toBe(T0 + 60_000);
    });
  },
);
