import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { isAgentStoppedError } from '../../src/core/errors/lifecycle-errors.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * supervisor.call: one request with no agent memory, through the same tokens, breakers and fallback as an agent's
 * turn. The real SDKs over real HTTP against the emulator, on the system clock (nothing here waits on time).
 */

let emulator: Emulator;
let supervisor: Supervisor | undefined;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 11 } });
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

function runtime(limit = 3) {
  return createSupervisor({
    endpoints: [
      emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6'),
      emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini'),
    ],
    chains: { premium: ['primary', 'backup'] },
    concurrency: { limit },
  });
}

describe('supervisor.call', () => {
  it('answers on the primary with the same Turn an agent gets, and leaves no agent behind', async () => {
    supervisor = runtime();
    const turn = await supervisor.call({
      chain: 'premium',
      system: 'Answer in one sentence.',
      messages: [{ role: 'user', content: 'What moved EURUSD overnight?' }],
    });
    expect(turn.outcome).toBe('answered');
    expect(turn.endpointId).toBe('primary');
    expect(turn.answer.text.length).toBeGreaterThan(0);
    expect(turn.stopReason).toBe('end_turn');
    expect(turn.prompt).toBe('What moved EURUSD overnight?');
    expect(turn.messages).toEqual([]);
    expect(supervisor.agents()).toHaveLength(0);
    expect(supervisor.tokens().held).toBe(0);
  });

  it('a primary answering 429 ends on the backup (fallback), the fault recorded', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
    supervisor = runtime();
    const turn = await supervisor.call({
      chain: 'premium',
      messages: [{ role: 'user', content: 'Summarize the overnight moves.' }],
    });
    expect(turn.outcome).toBe('fallback');
    expect(turn.endpointId).toBe('backup');
    expect(turn.faults.map((f) => f.kind)).toContain('rate_limited');
    expect(emulator.stats().byStatus['429']).toBeGreaterThanOrEqual(1);
  });

  it('sends the conversation as given, and remembers nothing between calls', async () => {
    supervisor = runtime();
    const first = await supervisor.call({
      chain: 'premium',
      messages: [
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: 'Noted.' },
        { role: 'user', content: 'What is my name?' },
      ],
    });
    const second = await supervisor.call({ chain: 'premium', messages: [{ role: 'user', content: 'Hi' }] });
    expect(first.outcome).toBe('answered');
    expect(second.outcome).toBe('answered');
    const [a, b] = emulator.stats().calls;
    // Three messages in the first request, one in the second: no history carried over.
    expect(a!.inputTokens).toBeGreaterThan(b!.inputTokens);
    expect(first.agent).not.toBe(second.agent);
  });

  it('an abort cancels the call in flight: the turn is cancelled and the upstream request ends', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' } });
    supervisor = runtime();
    const controller = new AbortController();
    const pending = supervisor.call({
      chain: 'premium',
      messages: [{ role: 'user', content: 'This one hangs.' }],
      signal: controller.signal,
    });
    await waitFor(() => emulator.stats().inFlight === 1, 'the emulator to hold the call');
    controller.abort();
    const turn = await pending;
    expect(turn.outcome).toBe('cancelled');
    await waitFor(() => emulator.stats().inFlight === 0, 'the upstream request to end');
    expect(supervisor.agents()).toHaveLength(0);
    await waitFor(() => supervisor!.tokens().held === 0, 'the token to come back');
  });

  it('takes tokens like any turn: six calls on a limit of 2 never have more than 2 upstream at once', async () => {
    await emulator.close();
    emulator = await startEmulator({ profile: { seed: 11, latency: { minMs: 20, maxMs: 40 } } });
    supervisor = runtime(2);
    const turns = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        supervisor!.call({ chain: 'premium', messages: [{ role: 'user', content: `item ${i}` }] }),
      ),
    );
    expect(turns.map((t) => t.outcome)).toEqual(Array(6).fill('answered'));
    expect(emulator.stats().maxInFlight).toBe(2);
  });

  it('refuses an unknown chain and a call after stop, with their errors', async () => {
    supervisor = runtime();
    const unknown = await supervisor
      .call({ chain: 'gold', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(isConfigError(unknown)).toBe(true);
    const empty = await supervisor.call({ chain: 'premium', messages: [] }).catch((e: unknown) => e);
    expect(isConfigError(empty)).toBe(true);
    const stopped = supervisor;
    supervisor = undefined;
    await stopped.stop();
    const late = await stopped
      .call({ chain: 'premium', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(isAgentStoppedError(late)).toBe(true);
  });
});
