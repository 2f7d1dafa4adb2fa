import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isByokRejectedError } from '../../src/byok/byok-errors.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { keyFingerprint } from '../../src/engines/endpoint-config.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { defineConfig, type RuntimeConfigInput } from '../../src/runtime/runtime-config.ts';
import { driveUntil, emulatorEndpoint } from '../support/runtime-harness.ts';

// Runtime BYOK wired into the supervisor, against the emulator over real HTTP through the real SDKs, on
// one manual clock shared by the runtime and the emulator (nothing sleeps). The platform's only key has
// no credit: without a user's key every agent degrades; with one, that session's agents answer through it.

const PLATFORM = 'sk-platform-pool-00000000000000000001';
const KEYS = {
  a: 'sk-proj-sessionA000000000000000000a1b2',
  b: 'sk-proj-sessionB000000000000000000c3d4',
  low: 'sk-proj-lowCredit0000000000000000e5f6',
  revoked: 'sk-proj-revokedLater00000000000000789a',
} as const;
const BAD_KEY = 'sk-proj-neverIssued0000000000000000dead';
const TTL = 10 * 60_000;

let emulator: Emulator;
let clock: ManualClock;
let supervisor: Supervisor | undefined;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-03-02T09:00:00+09:00'));
  emulator = await startEmulator({
    clock,
    profile: {
      seed: 6,
      acceptAnyKey: false,
      keys: [
        { alias: 'platform', key: PLATFORM, credit: 0 },
        { alias: 'user-a', key: KEYS.a },
        { alias: 'user-b', key: KEYS.b },
        { alias: 'user-low', key: KEYS.low },
        { alias: 'user-revoked', key: KEYS.revoked },
      ],
    },
  });
});
afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
  emulator.clearFaults();
});
afterAll(() => emulator?.close());

function config(byok = true): RuntimeConfigInput {
  return {
    endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o', PLATFORM)],
    chains: { main: ['primary'] },
    agentDefaults: { maxWaitMs: 5_000, probeIntervalMs: 5_000 },
    ...(byok
      ? {
          byok: {
            idleTtlMs: TTL,
            templates: {
              openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') },
              anthropic: {
                provider: 'anthropic',
                model: 'claude-sonnet-4-6',
                baseURL: emulator.baseURL('anthropic'),
              },
            },
          },
        }
      : {}),
  } as RuntimeConfigInput;
}

function start(byok = true): { supervisor: Supervisor; events: RuntimeEvent[]; logs: string[] } {
  const events: RuntimeEvent[] = [];
  const logs: string[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (l: string) => logs.push(l) } });
  supervisor = createSupervisor(config(byok), {
    clock,
    logger,
    random: () => 0.5,
    onEvent: (e) => events.push(e),
  });
  return { supervisor, events, logs };
}

const callsWith = (alias: string) => emulator.stats().calls.filter((c) => c.key === alias);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('config', () => {
  it('byok is optional; its idle TTL defaults to 2 h; bad templates are refused naming the field', () => {
    expect(defineConfig(config(false)).byok).toBeUndefined();
    const on = config();
    const withDefault = { ...on, byok: { templates: (on.byok as { templates: object }).templates } };
    expect(defineConfig(withDefault as RuntimeConfigInput).byok?.idleTtlMs).toBe(2 * 60 * 60 * 1000);

    const bad = (byok: unknown) => {
      try {
        defineConfig({ ...config(false), byok } as RuntimeConfigInput);
      } catch (e) {
        if (isConfigError(e)) return e;
        throw e;
      }
      throw new Error('expected a ConfigError');
    };
    expect(bad({ templates: {} }).message).toMatch(/byok\.templates: names no provider/);
    expect(bad({ templates: { openai: { provider: 'openai', model: 'm', flavor: 'vllm' } } }).path).toBe(
      'byok.templates.openai.flavor',
    );
    expect(
      bad({ templates: { openai: { provider: 'openai', model: 'm', apiKey: 'sk-x' } } }).message,
    ).toMatch(/byok\.templates\.openai/);
    expect(bad({ templates: { 'open ai': { provider: 'openai', model: 'm' } } }).message).toMatch(
      /not a usable provider name/,
    );
    expect(bad({ templates: { openai: { provider: 'openai', model: 'm' } }, idleTtlMs: 0 }).path).toBe(
      'byok.idleTtlMs',
    );
  });

  it('without byok templates, inject and revoke throw a ConfigError that says how to turn BYOK on', async () => {
    const { supervisor } = start(false);
    expect(supervisor.byok.enabled).toBe(false);
    expect(supervisor.byok.providers()).toEqual([]);
    expect(supervisor.byok.list()).toEqual([]);
    expect(supervisor.byok.endSession('default')).toEqual([]);
    const err = await rejection(supervisor.byok.inject('default', 'openai', KEYS.a));
    expect(isConfigError(err)).toBe(true);
    expect((err as Error).message).toMatch(/BYOK is off.*byok\.templates/);
    expect((err as Error).message).not.toContain(KEYS.a);
    expect(() => supervisor.byok.revoke('default')).toThrow(/BYOK is off/);
  });

  it('an agent session must be a non-empty string', () => {
    const { supervisor } = start();
    expect(() => supervisor.spawnAgent({ name: 'x', chain: 'main', session: '' })).toThrow(
      /agents\.x\.session: must be a non-empty string/,
    );
  });
});

describe('an injected key is used by its session', () => {
  it('credit gone: the agent degrades; after /byok it answers through the key, its endpoint after the chain with the key fingerprint', async () => {
    const { supervisor, events } = start();
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main', tier: 'analysis' });

    const before = await kai.ask('U04: primary provider out of credit?');
    expect(before.outcome).toBe('degraded');
    expect(before.faults.map((f) => f.kind)).toContain('credit_exhausted');

    const receipt = await supervisor.byok.inject('default', 'OpenAI', KEYS.a);
    expect(receipt).toMatchObject({ sessionId: 'default', provider: 'openai', masked: 'sk-proj-…a1b2' });
    expect(receipt.endpointId).toBe(`byok:default:openai:${keyFingerprint(KEYS.a)}`);
    const row = supervisor.health().find((h) => h.id === receipt.endpointId);
    // The pool describes it by its engine: the key's fingerprint, not the key-less config's `none`.
    expect(row?.descriptor).toMatchObject({
      provider: 'openai',
      model: 'gpt-4o-mini',
      keyFingerprint: keyFingerprint(KEYS.a),
    });
    expect(events.filter((e) => e.type === 'byok.injected')).toEqual([
      {
        type: 'byok.injected',
        at: clock.now(),
        endpoint: receipt.endpointId,
        data: {
          sessionId: 'default',
          provider: 'openai',
          masked: 'sk-proj-…a1b2',
          expiresAt: receipt.expiresAt,
        },
      },
    ]);

    // The degraded agent comes back by itself: its health check now sees the session's key.
    await driveUntil(clock, () => kai.state() === 'idle', { stepMs: 1_000, maxSimulatedMs: 30_000 });
    const calls = callsWith('user-a').length;
    const after = await kai.ask('U04 again: can we go on?');
    expect(after.outcome).toBe('fallback');
    expect(after.endpointId).toBe(receipt.endpointId);
    expect(after.answer.text.length).toBeGreaterThan(0);
    const sent = callsWith('user-a').slice(calls);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ flavor: 'openai', model: 'gpt-4o-mini', status: 200 });
    expect(sent[0]!.idempotencyKey).toMatch(/^Kai:/);
    expect(JSON.stringify([events, supervisor.health(), supervisor.byok.list()])).not.toContain(KEYS.a);
  });

  it('one millisecond after its idle TTL the key is not used: the agent degrades, and no call carries the key after expiry', async () => {
    const { supervisor, events } = start();
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main', tier: 'analysis', session: 'tty-1' });
    const receipt = await supervisor.byok.inject('tty-1', 'openai', KEYS.a);
    expect((await kai.ask('first')).endpointId).toBe(receipt.endpointId);

    // Used just now: the deadline slid to the last use + TTL.
    const [live] = supervisor.byok.list('tty-1');
    expect(live!.expiresAt).toBe(clock.now() + TTL);
    const expiresAt = live!.expiresAt;
    clock.advance(expiresAt - 1 - clock.now());
    expect(supervisor.byok.list('tty-1')).toHaveLength(1);
    clock.advance(2);
    expect(clock.now()).toBe(expiresAt + 1);
    expect(supervisor.byok.list('tty-1')).toEqual([]);
    expect(supervisor.health().map((h) => h.id)).toEqual(['primary']);
    expect(events.filter((e) => e.type === 'byok.expired').map((e) => e.data)).toEqual([
      { sessionId: 'tty-1', provider: 'openai', masked: 'sk-proj-…a1b2', reason: 'idle' },
    ]);

    const calls = callsWith('user-a').length;
    const turn = await kai.ask('after expiry');
    expect(turn.outcome).toBe('degraded');
    expect(turn.endpointId).toBeUndefined();
    await driveUntil(clock, () => false, { stepMs: 5_000, maxSimulatedMs: 60_000 }).catch(() => {});
    expect(callsWith('user-a')).toHaveLength(calls);
    expect(callsWith('user-a').filter((c) => c.startedAt > expiresAt)).toEqual([]);
  });

  it("session B's agents never use session A's key, and each session's calls carry only its own key", async () => {
    const { supervisor } = start();
    const mark = emulator.stats().calls.length;
    const kaiA = supervisor.spawnAgent({ name: 'KaiA', chain: 'main', tier: 'analysis', session: 'A' });
    const yunaB = supervisor.spawnAgent({ name: 'YunaB', chain: 'main', tier: 'analysis', session: 'B' });
    const a = await supervisor.byok.inject('A', 'openai', KEYS.a);
    for (let i = 0; i < 3; i++) {
      const [ta, tb] = await Promise.all([kaiA.ask(`item ${i}`), yunaB.ask(`item ${i}`)]);
      expect(ta.endpointId).toBe(a.endpointId);
      expect(tb.outcome).toBe('degraded');
    }
    const b = await supervisor.byok.inject('B', 'openai', KEYS.b);
    await driveUntil(clock, () => yunaB.state() === 'idle', { stepMs: 1_000, maxSimulatedMs: 30_000 });
    for (let i = 3; i < 6; i++) {
      const [ta, tb] = await Promise.all([kaiA.ask(`item ${i}`), yunaB.ask(`item ${i}`)]);
      expect(ta.endpointId).toBe(a.endpointId);
      expect(tb.endpointId).toBe(b.endpointId);
    }
    const agentsOf = (alias: string) =>
      new Set(
        emulator
          .stats()
          .calls.slice(mark)
          .filter((c) => c.key === alias)
          .map((c) => c.idempotencyKey ?? '')
          .filter((k) => !k.startsWith('byok-check:'))
          .map((k) => k.split(':')[0]),
      );
    expect(agentsOf('user-a')).toEqual(new Set(['KaiA']));
    expect(agentsOf('user-b')).toEqual(new Set(['YunaB']));
  });

  it('a bad key gets the provider auth error, one line, and nothing breaks: the agents go on, a good key works after', async () => {
    const { supervisor, events, logs } = start();
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main', tier: 'analysis' });
    const err = await rejection(supervisor.byok.inject('default', 'openai', BAD_KEY));
    expect(isByokRejectedError(err)).toBe(true);
    const message = (err as Error).message;
    expect(message).toBe('openai key sk-proj-…dead refused: auth (401). Check the key and try again.');
    expect(message).not.toContain('\n');
    expect(supervisor.byok.list()).toEqual([]);
    expect(supervisor.health().map((h) => h.id)).toEqual(['primary']);
    expect(events.some((e) => e.type === 'byok.injected')).toBe(false);

    const unknown = await rejection(supervisor.byok.inject('default', 'mistral', KEYS.a));
    expect(isConfigError(unknown)).toBe(true);
    expect((unknown as Error).message).toMatch(
      /the provider name is not a BYOK provider \(what was typed is not shown\); use one of anthropic, openai/,
    );

    const turn = await kai.ask('still there?');
    expect(turn.outcome).toBe('degraded');
    const good = await supervisor.byok.inject('default', 'openai', KEYS.a);
    await driveUntil(clock, () => kai.state() === 'idle', { stepMs: 1_000, maxSimulatedMs: 30_000 });
    expect((await kai.ask('and now?')).endpointId).toBe(good.endpointId);
    expect([...logs, message, (unknown as Error).message].join('\n')).not.toContain(BAD_KEY);
  });
});

describe('a key the provider refuses mid-run is revoked', () => {
  it.each([
    ['credit_exhausted', 'user-low', KEYS.low, (): void => emulator.setCredit('user-low', 0)],
    [
      'auth',
      'user-revoked',
      KEYS.revoked,
      (): void => void emulator.addFault({ kind: 'bad_key', match: { key: 'user-revoked' } }),
    ],
  ] as const)(
    '%s: revoked at once and said so; no probe ever sends the key again',
    async (kind, alias, key, refuse) => {
      const { supervisor, events, logs } = start();
      const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main', tier: 'analysis' });
      const receipt = await supervisor.byok.inject('default', 'openai', key);
      expect((await kai.ask('one')).endpointId).toBe(receipt.endpointId);

      refuse();
      const turn = await kai.ask('two');
      expect(turn.outcome).toBe('degraded');
      expect(turn.faults.map((f) => f.kind)).toContain(kind);
      expect(supervisor.byok.list()).toEqual([]);
      expect(supervisor.health().map((h) => h.id)).toEqual(['primary']);
      expect(events.filter((e) => e.type === 'byok.expired').map((e) => e.data)).toEqual([
        {
          sessionId: 'default',
          provider: 'openai',
          masked: receipt.masked,
          reason: 'revoked',
          faultKind: kind,
        },
      ]);
      const said = logs.filter((l) => l.includes('revoked for session default'));
      expect(said).toHaveLength(1);
      expect(said[0]).toContain(`the provider refused it (${kind}`);
      expect(said[0]).not.toContain(key);

      // Long after the breaker's open time and the credit cooldown: no HALF-OPEN probe revives the key.
      const sent = callsWith(alias).length;
      await driveUntil(clock, () => false, { stepMs: 60_000, maxSimulatedMs: 2 * 60 * 60_000 }).catch(
        () => {},
      );
      expect(callsWith(alias)).toHaveLength(sent);
    },
  );
});

describe('lifecycle', () => {
  it('revoke and endSession remove keys; stop() wipes every key and says so', async () => {
    const { supervisor, events } = start();
    const a = await supervisor.byok.inject('A', 'openai', KEYS.a);
    await supervisor.byok.inject('B', 'openai', KEYS.b);
    expect(supervisor.byok.revoke('A', 'openai')).toEqual([a]);
    expect(supervisor.byok.list().map((r) => r.sessionId)).toEqual(['B']);
    expect(supervisor.byok.endSession('B').map((r) => r.sessionId)).toEqual(['B']);
    await supervisor.byok.inject('C', 'openai', KEYS.a);
    const seen: string[] = [];
    supervisor.byok.subscribe({ onExpired: (r, reason) => seen.push(`${r.sessionId}:${reason}`) });
    await supervisor.stop();
    expect(seen).toEqual(['C:closed']);
    expect(supervisor.byok.list()).toEqual([]);
    expect(
      events.filter((e) => e.type === 'byok.expired').map((e) => (e.data as { reason: string }).reason),
    ).toEqual(['revoked', 'session-ended', 'closed']);
  });
});
