import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isByokRejectedError, isByokVaultClosedError } from '../../src/byok/byok-errors.ts';
import type { ByokExpiryReason, ByokReceipt, ByokTemplate } from '../../src/byok/byok-types.ts';
import { createKeyVault, type KeyVault, type KeyVaultOptions } from '../../src/byok/key-vault.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { keyFingerprint } from '../../src/engines/endpoint-config.ts';
import type { EngineRequest } from '../../src/core/engine-types.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFlavor } from '../../src/emulator/emulator-types.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { type EngineFaultError, isEngineFaultError } from '../../src/core/fault.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { scrubSecrets } from '../../src/redact/secret-scrubber.ts';

// The vault against the emulator over real HTTP through the real SDKs, with a manual clock for the
// idle TTL: nothing here sleeps. The emulator knows exactly the keys below (acceptAnyKey: false), so
// any other key gets each provider's own auth error, and its stats name the known ones by alias.

const TTL = 60_000;
const KEYS = {
  a: 'sk-proj-userA0000000000000000000a1b2',
  b: 'sk-proj-userB0000000000000000000c3d4',
  a2: 'sk-proj-userA2000000000000000000e5f6',
  ant: 'sk-ant-api03-userA00000000000000000007890',
  gem: 'AIzaSyUserA000000000000000000000000gem1',
} as const;
const BAD_KEY = 'sk-proj-notAKnownKey000000000000dead';

let emulator: Emulator;
const vaults: KeyVault[] = [];

beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      seed: 11,
      acceptAnyKey: false,
      keys: [
        { alias: 'user-a', key: KEYS.a },
        { alias: 'user-b', key: KEYS.b },
        { alias: 'user-a2', key: KEYS.a2 },
        { alias: 'user-a-anthropic', key: KEYS.ant },
        { alias: 'user-a-gemini', key: KEYS.gem },
        // Ollama's documented placeholder key is the word itself.
        { alias: 'user-ollama', key: 'ollama' },
      ],
    },
  });
});
afterEach(() => {
  for (const v of vaults.splice(0)) v.close();
});
afterAll(() => emulator?.close());

const templates = (): Record<string, ByokTemplate> => ({
  openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') },
  anthropic: { provider: 'anthropic', model: 'claude-sonnet-4-6', baseURL: emulator.baseURL('anthropic') },
  gemini: { provider: 'gemini', model: 'gemini-2.5-flash', baseURL: emulator.baseURL('gemini') },
});

function newVault(extra: Partial<KeyVaultOptions> = {}): { vault: KeyVault; clock: ManualClock } {
  const clock = createManualClock(1_000_000);
  const vault = createKeyVault({ clock, idleTtlMs: TTL, templates: templates(), ...extra });
  vaults.push(vault);
  return { vault, clock };
}

let seq = 0;
const request = (label: string): EngineRequest => ({
  messages: [{ role: 'user', content: 'Status report, please.' }],
  maxTokens: 32,
  idempotencyKey: `byok-test/${label}/${++seq}`,
});

const callsBy = (alias: string) => emulator.stats().calls.filter((c) => c.key === alias);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

function expired(): { events: Array<[ByokReceipt, ByokExpiryReason]>; listener: KeyVaultListener } {
  const events: Array<[ByokReceipt, ByokExpiryReason]> = [];
  return { events, listener: { onExpired: (r, why) => events.push([r, why]) } };
}
type KeyVaultListener = Parameters<KeyVault['subscribe']>[0];

describe('inject', () => {
  it('accepts a good key after one 1-token check call and returns a masked receipt; calls reach the emulator with that key', async () => {
    const { vault, clock } = newVault();
    const before = callsBy('user-a').length;
    const receipt = await vault.inject('session-A', 'openai', KEYS.a);

    expect(receipt).toEqual({
      sessionId: 'session-A',
      provider: 'openai',
      masked: 'sk-proj-…a1b2',
      endpointId: `byok:session-A:openai:${keyFingerprint(KEYS.a)}`,
      expiresAt: clock.now() + TTL,
    });
    expect(Object.isFrozen(receipt)).toBe(true);
    const check = callsBy('user-a').slice(before);
    expect(check).toHaveLength(1);
    expect(check[0]).toMatchObject({ flavor: 'openai', status: 200, model: 'gpt-4o-mini' });
    expect(check[0]!.idempotencyKey).toMatch(/^byok-check:/);

    const engine = vault.engineFor(receipt.endpointId)!;
    expect(engine.endpoint).toEqual(vault.describe(receipt.endpointId));
    expect(engine.endpoint).toMatchObject({ provider: 'openai', keyFingerprint: keyFingerprint(KEYS.a) });
    const req = request('good');
    const result = await engine.call(req);
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.endpoint.id).toBe(receipt.endpointId);
    const sent = emulator.stats().calls.filter((c) => c.idempotencyKey === req.idempotencyKey);
    expect(sent.map((c) => c.key)).toEqual(['user-a']);

    expect(vault.endpointsFor('session-A')).toEqual([receipt.endpointId]);
    expect(vault.list()).toEqual([receipt]);
    const enumerable = JSON.stringify([receipt, vault.list(), vault.describe(receipt.endpointId)]);
    expect(enumerable).not.toContain(KEYS.a);
    expect(vault.endpointConfig(receipt.endpointId)).toEqual({
      id: receipt.endpointId,
      provider: 'openai',
      model: 'gpt-4o-mini',
      baseURL: emulator.baseURL('openai'),
      headersTimeoutMs: 60_000,
      idleTimeoutMs: 30_000,
      maxRetryAfterMs: 900_000,
    });
    expect(JSON.stringify(vault.endpointConfig(receipt.endpointId))).not.toContain(KEYS.a);
  });

  it.each([
    ['openai', 'openai', BAD_KEY, 'sk-proj-…dead'],
    ['anthropic', 'anthropic', 'sk-ant-api03-notAKnownKey00000000000dead', 'sk-ant-…dead'],
    ['gemini', 'gemini', 'AIzaSyNotAKnownKey00000000000000000dead', 'AIza…dead'],
  ] as const)(
    'refuses a bad %s key with ONE line naming the masked key and fault kind auth, and keeps nothing',
    async (_name, provider, badKey, masked) => {
      const { vault } = newVault();
      const expiries = expired();
      const injected: ByokReceipt[] = [];
      vault.subscribe({ ...expiries.listener, onInjected: (r) => injected.push(r) });
      const before = emulator.stats().calls.length;

      const err = await rejection(vault.inject('session-A', provider, badKey));
      expect(isByokRejectedError(err)).toBe(true);
      if (!isByokRejectedError(err)) return;
      expect(err.code).toBe('BYOK_REJECTED');
      expect(err.kind).toBe('auth');
      expect(err.message).not.toContain('\n');
      expect(err.message).toMatch(
        new RegExp(
          `^${provider} key ${masked} refused: auth \\(\\d{3}\\)\\. Check the key and try again\\.$`,
        ),
      );
      expect(`${err.message}${err.stack}${JSON.stringify(err)}`).not.toContain(badKey);
      // The key was sent once (the check) and is gone: nothing listed, nothing to call, nobody told.
      const seen = emulator.stats().calls.slice(before);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.key).toBe(keyFingerprint(badKey));
      expect(vault.endpointsFor('session-A')).toEqual([]);
      expect(vault.list()).toEqual([]);
      expect(injected).toEqual([]);
      expect(expiries.events).toEqual([]);
    },
  );

  it('matches provider names case-insensitively and refuses an unknown one with a ConfigError listing the known ones', async () => {
    const { vault } = newVault();
    const receipt = await vault.inject('session-A', '  OpenAI ', KEYS.a);
    expect(receipt.provider).toBe('openai');

    const err = await rejection(vault.inject('session-A', 'mistral', KEYS.a));
    expect(isConfigError(err)).toBe(true);
    expect((err as Error).message).toBe(
      'byok at provider: the provider name is not a BYOK provider (what was typed is not shown); use one of anthropic, gemini, openai',
    );
    // A key typed where the provider goes is never echoed, not even a short word (it may be the key).
    for (const typedFirst of [KEYS.b, 'Checkout', 'ollama']) {
      const swapped = await rejection(vault.inject('session-A', typedFirst, 'openai'));
      expect(isConfigError(swapped)).toBe(true);
      expect((swapped as Error).message).toContain('the provider name is not a BYOK provider');
      expect((swapped as Error).message.toLowerCase()).not.toContain(typedFirst.toLowerCase());
    }
    expect(vault.providers()).toEqual(['anthropic', 'gemini', 'openai']);
  });

  it('refuses malformed keys without echoing them, and sends nothing', async () => {
    const { vault } = newVault();
    const before = emulator.stats().calls.length;
    for (const key of [`${KEYS.a} extra-words`, 'short', '', `sk-proj-\u0007${'x'.repeat(20)}`, 'Checkout']) {
      const err = await rejection(vault.inject('session-A', 'openai', key));
      expect(isConfigError(err)).toBe(true);
      expect((err as Error).message).toMatch(/^byok at key: /);
      if (key.length >= 6) expect((err as Error).message).not.toContain(key);
    }
    expect(emulator.stats().calls.length).toBe(before);
  });

  it('trims a pasted key, and with validate: false accepts it without any check call', async () => {
    const { vault } = newVault({ validate: false });
    const before = callsBy('user-b').length;
    const receipt = await vault.inject('session-B', 'openai', `  ${KEYS.b}\n`);
    expect(callsBy('user-b').length).toBe(before);
    expect(receipt.endpointId).toBe(`byok:session-B:openai:${keyFingerprint(KEYS.b)}`);
    await vault.engineFor(receipt.endpointId)!.call(request('unvalidated'));
    expect(callsBy('user-b').length).toBe(before + 1);
  });

  it('an aborted check discards the key as a ByokRejectedError of kind cancelled', async () => {
    const { vault } = newVault();
    const controller = new AbortController();
    controller.abort();
    const err = await rejection(vault.inject('session-A', 'openai', KEYS.a, { signal: controller.signal }));
    expect(isByokRejectedError(err)).toBe(true);
    expect(err).toMatchObject({ kind: 'cancelled' });
    expect((err as Error).message).toBe(
      'openai key sk-proj-…a1b2 refused: cancelled. The check was cancelled; send the key again.',
    );
    expect(vault.list()).toEqual([]);
  });

  it('works for every provider kind of the templates (anthropic, gemini)', async () => {
    const { vault } = newVault();
    const ant = await vault.inject('session-A', 'anthropic', KEYS.ant);
    const gem = await vault.inject('session-A', 'gemini', KEYS.gem);
    expect(ant.masked).toBe('sk-ant-…7890');
    expect(gem.masked).toBe('AIza…gem1');
    const r1 = request('anthropic');
    const r2 = request('gemini');
    await vault.engineFor(ant.endpointId)!.call(r1);
    await vault.engineFor(gem.endpointId)!.call(r2);
    const keyOf = (k: string) => emulator.stats().calls.find((c) => c.idempotencyKey === k);
    expect(keyOf(r1.idempotencyKey)).toMatchObject({
      key: 'user-a-anthropic',
      flavor: 'anthropic' as EmulatorFlavor,
    });
    expect(keyOf(r2.idempotencyKey)).toMatchObject({
      key: 'user-a-gemini',
      flavor: 'gemini' as EmulatorFlavor,
    });
    expect(vault.endpointsFor('session-A')).toEqual([ant.endpointId, gem.endpointId]);
  });
});

describe('idle TTL (manual clock)', () => {
  it('1 ms after the idle TTL the key is gone: the held engine rejects with auth/expired and nothing reaches the emulator', async () => {
    const { vault, clock } = newVault();
    const expiries = expired();
    vault.subscribe(expiries.listener);
    const receipt = await vault.inject('session-A', 'openai', KEYS.a);
    const engine = vault.engineFor(receipt.endpointId)!;

    clock.advance(TTL - 1);
    expect(vault.endpointsFor('session-A')).toEqual([receipt.endpointId]);
    expect(expiries.events).toEqual([]);
    clock.advance(1 + 1);
    expect(expiries.events).toEqual([[receipt, 'idle']]);

    const sentBefore = callsBy('user-a').length;
    const err = await rejection(engine.call(request('after-expiry')));
    expect(isEngineFaultError(err)).toBe(true);
    const fault = (err as EngineFaultError).fault;
    expect(fault).toMatchObject({
      kind: 'auth',
      code: 'byok_expired',
      provider: 'openai',
      endpointId: receipt.endpointId,
    });
    expect(fault.message).toBe(
      'BYOK openai key sk-proj-…a1b2 expired after 1 min without use; nothing was sent. Inject it again with /byok openai KEY',
    );
    expect((err as Error).message).toContain('expired');
    expect(callsBy('user-a').length).toBe(sentBefore);
    expect(vault.engineFor(receipt.endpointId)).toBeUndefined();
    expect(vault.describe(receipt.endpointId)).toBeUndefined();
    expect(vault.endpointsFor('session-A')).toEqual([]);
    expect(vault.list()).toEqual([]);
    expect(clock.pending()).toBe(0);
  });

  it('each use slides the deadline', async () => {
    const { vault, clock } = newVault();
    const receipt = await vault.inject('session-A', 'openai', KEYS.a);
    const engine = vault.engineFor(receipt.endpointId)!;
    const start = clock.now();

    clock.advance(TTL - 1);
    await engine.call(request('slide-1'));
    expect(vault.list('session-A')[0]!.expiresAt).toBe(start + 2 * TTL - 1);
    clock.advance(TTL - 1); // 2·TTL − 2 after injection: long past the first deadline
    await engine.call(request('slide-2'));
    expect(vault.endpointsFor('session-A')).toEqual([receipt.endpointId]);

    clock.advance(TTL);
    expect(vault.endpointsFor('session-A')).toEqual([]);
    expect(isEngineFaultError(await rejection(engine.call(request('slide-3'))))).toBe(true);
  });

  it('a per-key ttlMs overrides the vault default', async () => {
    const { vault, clock } = newVault({ validate: false });
    const receipt = await vault.inject('session-A', 'openai', KEYS.a, { ttlMs: 5_000 });
    expect(receipt.expiresAt).toBe(clock.now() + 5_000);
    clock.advance(5_000);
    expect(vault.list()).toEqual([]);
  });

  it('expires lazily too when the clock passed the deadline before its timer ran', async () => {
    let now = 0;
    // A clock whose timers never fire: only the deadline check on access can expire the key.
    const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const vault = createKeyVault({ clock, idleTtlMs: TTL, templates: templates(), validate: false });
    vaults.push(vault);
    const receipt = await vault.inject('session-A', 'openai', KEYS.a);
    const engine = vault.engineFor(receipt.endpointId)!;
    now = TTL;
    const before = callsBy('user-a').length;
    expect(((await rejection(engine.call(request('lazy')))) as EngineFaultError).fault.kind).toBe('auth');
    expect(callsBy('user-a').length).toBe(before);
    expect(vault.list()).toEqual([]);
  });
});

describe('session binding', () => {
  it("session B never gets session A's endpoints, and each session's calls carry only its own key", async () => {
    const { vault } = newVault();
    const a = await vault.inject('A', 'openai', KEYS.a);
    expect(vault.endpointsFor('B')).toEqual([]);
    expect(vault.list('B')).toEqual([]);

    const b = await vault.inject('B', 'openai', KEYS.b);
    expect(vault.endpointsFor('A')).toEqual([a.endpointId]);
    expect(vault.endpointsFor('B')).toEqual([b.endpointId]);
    expect(a.endpointId).not.toBe(b.endpointId);

    const fromA = [request('A'), request('A')];
    const fromB = [request('B')];
    for (const r of fromA) await vault.engineFor(vault.endpointsFor('A')[0]!)!.call(r);
    for (const r of fromB) await vault.engineFor(vault.endpointsFor('B')[0]!)!.call(r);
    const keysOf = (reqs: EngineRequest[]) =>
      reqs.map((r) => emulator.stats().calls.find((c) => c.idempotencyKey === r.idempotencyKey)?.key);
    expect(keysOf(fromA)).toEqual(['user-a', 'user-a']);
    expect(keysOf(fromB)).toEqual(['user-b']);
  });

  it('endSession and revoke remove keys, tell listeners why, and leave other sessions alone', async () => {
    const { vault } = newVault({ validate: false });
    const expiries = expired();
    vault.subscribe(expiries.listener);
    const a1 = await vault.inject('A', 'openai', KEYS.a);
    const a2 = await vault.inject('A', 'anthropic', KEYS.ant);
    const b = await vault.inject('B', 'openai', KEYS.b);
    const heldA1 = vault.engineFor(a1.endpointId)!;

    expect(vault.revoke('A', 'OPENAI')).toEqual([a1]);
    expect(vault.endpointsFor('A')).toEqual([a2.endpointId]);
    const revoked = (await rejection(heldA1.call(request('revoked')))) as EngineFaultError;
    expect(revoked.fault.message).toContain('expired because it was revoked');

    expect(vault.endSession('A')).toEqual([a2]);
    expect(vault.endpointsFor('A')).toEqual([]);
    expect(vault.endpointsFor('B')).toEqual([b.endpointId]);
    expect(vault.revoke('A')).toEqual([]);
    expect(expiries.events).toEqual([
      [a1, 'revoked'],
      [a2, 'session-ended'],
    ]);
    expect(() => vault.revoke('A', 'cohere')).toThrow(/not a BYOK provider/);
  });

  it('a second key for the same session and provider replaces the first only once it passed its check', async () => {
    const { vault } = newVault();
    const expiries = expired();
    vault.subscribe(expiries.listener);
    const first = await vault.inject('A', 'openai', KEYS.a);

    await expect(vault.inject('A', 'openai', BAD_KEY)).rejects.toMatchObject({ code: 'BYOK_REJECTED' });
    expect(vault.endpointsFor('A')).toEqual([first.endpointId]);

    const second = await vault.inject('A', 'openai', KEYS.a2);
    expect(expiries.events).toEqual([[first, 'replaced']]);
    expect(vault.endpointsFor('A')).toEqual([second.endpointId]);
    const r = request('replaced');
    await vault.engineFor(second.endpointId)!.call(r);
    expect(emulator.stats().calls.find((c) => c.idempotencyKey === r.idempotencyKey)?.key).toBe('user-a2');
  });

  it('a key removed while its check is in flight is refused as cancelled, never listed', async () => {
    const { vault } = newVault();
    const pending = vault.inject('A', 'openai', KEYS.a);
    expect(vault.endSession('A')).toEqual([]);
    const err = await rejection(pending);
    expect(err).toMatchObject({ code: 'BYOK_REJECTED', kind: 'cancelled' });
    expect(vault.list()).toEqual([]);
  });
});

describe('secrets', () => {
  it('checks each key for its provider\'s format before any call: a word such as "Checkout" or a run id is refused', async () => {
    const { vault } = newVault();
    const before = emulator.stats().calls.length;
    const cases: [string, string, RegExp][] = [
      ['openai', 'Checkout', /is not an OpenAI key: such a key starts with "sk-"/],
      ['openai', 'agent8-storm-20261201-120000-ab12', /is not an OpenAI key/],
      ['anthropic', KEYS.a, /is not an Anthropic key: such a key starts with "sk-ant-"/],
      ['gemini', KEYS.a, /is not a Google \(Gemini\) API key: such a key starts with "AIza"/],
      ['openai', 'sk-short', /is not an OpenAI key/],
    ];
    for (const [provider, key, expected] of cases) {
      const err = await rejection(vault.inject('session-A', provider, key));
      expect(isConfigError(err), `${provider} ${key.length}`).toBe(true);
      expect((err as Error).message).toMatch(expected);
      expect((err as Error).message).toMatch(/\(it was not kept\)$/);
      expect((err as Error).message).not.toContain(key);
    }
    expect(emulator.stats().calls.length).toBe(before);
    expect(vault.list()).toEqual([]);
  });

  it('a key that is an ordinary word (a local server\'s "ollama") works and rewrites nothing anywhere', async () => {
    const { vault } = newVault({
      templates: {
        ollama: {
          provider: 'openai-compatible',
          flavor: 'ollama',
          model: 'llama3.1',
          baseURL: emulator.baseURL('ollama'),
        },
      },
    });
    const receipt = await vault.inject('A', 'ollama', 'ollama');
    expect(receipt.masked).toBe('…');
    expect(receipt.endpointId).toBe(`byok:A:ollama:${keyFingerprint('ollama')}`);
    const result = await vault.engineFor(receipt.endpointId)!.call(request('ollama-word'));
    expect(result.endpoint.id).toBe(receipt.endpointId);
    // Nothing registers the key anywhere: text that contains the word is left as it is.
    expect(scrubSecrets('ollama-local answered; ollama is up')).toBe('ollama-local answered; ollama is up');
  });

  it('the SDK client holds a marker: the key goes on the wire, and an echo of it in an error body is cut out of the bytes', async () => {
    const { createServer } = await import('node:http');
    const seen: string[] = [];
    const server = createServer((req, res) => {
      const auth = String(req.headers.authorization ?? '');
      seen.push(auth);
      res.writeHead(401, { 'content-type': 'application/json' });
      // A careless upstream that echoes the key it got, in the message and in a second field.
      res.end(
        JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${auth.slice(7)}`,
            type: 'invalid_request_error',
            code: 'invalid_api_key',
            echo: auth,
          },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      // A key of no known provider shape (a self-hosted server's), so only the byte-level cut can catch it.
      const key = 'tenant.echo+9f7e6d5c4b3a2910';
      const { vault } = newVault({
        templates: {
          echo: { provider: 'openai-compatible', model: 'm', baseURL: `http://127.0.0.1:${port}/v1` },
        },
      });
      const err = await rejection(vault.inject('A', 'echo', Buffer.from(key)));
      expect(isByokRejectedError(err)).toBe(true);
      expect(seen).toEqual([`Bearer ${key}`]);
      const fault = (err as { fault: { message: string } }).fault;
      expect(fault.message).toContain('[redacted]');
      expect(JSON.stringify(err)).not.toContain(key);
      expect(String((err as Error).message)).not.toContain(key);
      expect(String((err as Error).message)).toContain('refused: auth (401)');
    } finally {
      server.close();
    }
  });

  it('logs injections, refusals and expiries with the masked key and fingerprint only', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ level: 'trace', destination });
    const { vault, clock } = newVault({ logger });
    await vault.inject('A', 'openai', KEYS.a);
    await rejection(vault.inject('A', 'openai', BAD_KEY));
    clock.advance(TTL);
    await new Promise((resolve) => setImmediate(resolve));
    const messages = lines.map((l) => JSON.parse(l) as { msg: string; reason?: string; faultKind?: string });
    expect(messages.map((m) => m.msg)).toEqual(['byok key injected', 'byok key refused', 'byok key expired']);
    expect(messages[1]).toMatchObject({ faultKind: 'auth' });
    expect(messages[2]).toMatchObject({
      reason: 'idle',
      keyFingerprint: keyFingerprint(KEYS.a),
      masked: 'sk-proj-…a1b2',
    });
    for (const line of lines) {
      expect(line).not.toContain(KEYS.a);
      expect(line).not.toContain(BAD_KEY);
    }
  });
});

describe('lifecycle and configuration', () => {
  it('close() wipes every key and refuses new ones', async () => {
    const { vault } = newVault({ validate: false });
    const expiries = expired();
    vault.subscribe(expiries.listener);
    const a = await vault.inject('A', 'openai', KEYS.a);
    const engine = vault.engineFor(a.endpointId)!;
    vault.close();
    vault.close();
    expect(expiries.events).toEqual([[a, 'closed']]);
    expect(vault.list()).toEqual([]);
    expect(isEngineFaultError(await rejection(engine.call(request('closed'))))).toBe(true);
    expect(isByokVaultClosedError(await rejection(vault.inject('A', 'openai', KEYS.a)))).toBe(true);
  });

  it('a listener that throws does not stop the others', async () => {
    const { vault, clock } = newVault({ validate: false });
    const seen: string[] = [];
    vault.subscribe({
      onExpired: () => {
        throw new Error('listener bug');
      },
    });
    const unsubscribe = vault.subscribe({ onExpired: (r) => seen.push(r.endpointId) });
    const a = await vault.inject('A', 'openai', KEYS.a);
    clock.advance(TTL);
    expect(seen).toEqual([a.endpointId]);
    unsubscribe();
    await vault.inject('A', 'openai', KEYS.a);
    clock.advance(TTL);
    expect(seen).toEqual([a.endpointId]);
  });

  it.each([
    [{}, 'templates'],
    [{ templates: { 'open ai': { provider: 'openai', model: 'm' } } }, 'templates.open ai'],
    [
      {
        templates: { OpenAI: { provider: 'openai', model: 'm' }, openai: { provider: 'openai', model: 'n' } },
      },
      'templates.openai',
    ],
    [{ templates: { x: { provider: 'bedrock', model: 'm' } } }, 'provider'],
    [
      { templates: { x: { provider: 'openai', model: 'm', apiKey: 'sk-proj-0000000000000000' } } },
      'templates.x.apiKey',
    ],
    [
      { templates: { x: { provider: 'openai', model: 'm', chainPosition: 'first' } } },
      'templates.x.chainPosition',
    ],
    [{ templates: { x: { provider: 'openai', model: 'm' } }, idleTtlMs: 0 }, 'idleTtlMs'],
  ])('refuses options %j with a ConfigError at %s', (options, path) => {
    let caught: unknown;
    try {
      createKeyVault(options as unknown as KeyVaultOptions);
    } catch (e) {
      caught = e;
    }
    expect(isConfigError(caught)).toBe(true);
    expect((caught as { path: string }).path).toBe(path);
  });
});
