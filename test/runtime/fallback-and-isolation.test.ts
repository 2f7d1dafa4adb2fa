import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;
let supervisor: Supervisor | undefined;
// Simulated time: cooldown deadlines are compared with this clock, never with the machine's.
let clock: ManualClock;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 3, latency: { minMs: 0, maxMs: 0 } }, clock });
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

describe('fallback on a 429 primary', () => {
  it('six agents on one chain whose primary answers 429: none fails, each finishes on the fallback', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
    supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6'),
          emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini'),
        ],
        chains: { premium: ['primary', 'backup'] },
        concurrency: { limit: 3 },
      },
      { clock },
    );
    const names = [
      'codex',
      'orchestrator',
      'analyst-fundamental',
      'analyst-macro',
      'analyst-technical',
      'cowork',
    ];
    const agents = names.map((name) => supervisor!.spawnAgent({ name, chain: 'premium', tier: 'analysis' }));
    const turns = await Promise.all(agents.map((a) => a.ask(`status report from ${a.name}`)));
    for (const t of turns) {
      expect(t.outcome).toBe('fallback');
      expect(t.degraded).toBe(false);
      expect(t.endpointId).toBe('backup');
      expect(t.answer.text).toContain('gpt-4o-mini');
    }
    // The 429's Retry-After cooled the primary for everyone: only the calls already in flight when the first
    // 429 came back (at most the 3 tokens) reached it; the others went straight to the fallback.
    const primaryCalls = emulator.stats().byFlavor.anthropic ?? 0;
    expect(primaryCalls).toBeLessThanOrEqual(3);
    expect(turns.filter((t) => t.faults.length === 0)).toHaveLength(6 - primaryCalls);
    const primary = supervisor.health().find((h) => h.id === 'primary')!;
    expect(primary.cooldownUntil).toBe(clock.now() + 30_000);
  });
});

describe('cooldown is per endpoint (provider + key + model), never per model name', () => {
  it('a 429 on key A does not cool key B of the same model', async () => {
    emulator.addFault({
      kind: 'rate_limit',
      match: { flavor: 'anthropic', key: 'sk-test-key-a-000000000000' },
      retryAfterMs: 60_000,
    });
    supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(
            emulator,
            'sonnet-key-a',
            'anthropic',
            'claude-sonnet-4-6',
            'sk-test-key-a-000000000000',
          ),
          emulatorEndpoint(
            emulator,
            'sonnet-key-b',
            'anthropic',
            'claude-sonnet-4-6',
            'sk-test-key-b-000000000000',
          ),
        ],
        chains: { a: ['sonnet-key-a'], b: ['sonnet-key-b'] },
        agentDefaults: { maxWaitMs: 0 },
      },
      { clock },
    );
    const onA = supervisor.spawnAgent({ name: 'on-a', chain: 'a' });
    const onB = supervisor.spawnAgent({ name: 'on-b', chain: 'b' });
    const first = await onA.ask('hello');
    expect(first.faults.map((f) => f.kind)).toEqual(['rate_limited']);
    expect(first.outcome).toBe('degraded');
    const b = await onB.ask('hello');
    expect(b.outcome).toBe('answered');
    expect(b.endpointId).toBe('sonnet-key-b');
    expect(b.faults).toEqual([]);
    const health = Object.fromEntries(supervisor.health().map((h) => [h.id, h]));
    expect(health['sonnet-key-a']!.cooldownUntil).toBe(clock.now() + 60_000);
    expect(health['sonnet-key-b']!.cooldownUntil).toBe(0);
  });
});

describe('faults no engine swap can fix', () => {
  it('a bad request ends that turn with a clear error and leaves the other agents untouched', async () => {
    supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o-mini')],
        chains: { main: ['primary'] },
      },
      { clock },
    );
    // max_tokens far above what the emulator accepts → 400 invalid_request_error.
    const broken = supervisor.spawnAgent({ name: 'broken', chain: 'main', maxTokens: 10_000_000 });
    const fine = supervisor.spawnAgent({ name: 'fine', chain: 'main' });
    const [bad, good] = await Promise.all([broken.ask('x'), fine.ask('y')]);
    expect(bad.outcome).toBe('failed');
    expect(bad.error).toMatch(/bad_request/);
    expect(bad.answer.text).toBe('');
    expect(good.outcome).toBe('answered');
    expect(broken.state()).toBe('idle');
  });
});
