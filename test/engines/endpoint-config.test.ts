import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/engines/create-engine.ts';
import {
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  describeEndpoint,
  keyFingerprint,
  endpointConfigSchema,
  parseEndpointConfig,
} from '../../src/engines/endpoint-config.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';

const KEY = 'sk-ant-api03-TESTKEYabcdefghijklmnop0001';

describe('endpointConfigSchema / parseEndpointConfig', () => {
  it('fills the documented defaults', () => {
    const cfg = parseEndpointConfig({ id: 'a', provider: 'anthropic', model: 'claude-x', apiKey: KEY });
    expect(cfg.headersTimeoutMs).toBe(DEFAULT_HEADERS_TIMEOUT_MS);
    expect(cfg.idleTimeoutMs).toBe(DEFAULT_IDLE_TIMEOUT_MS);
    expect(DEFAULT_HEADERS_TIMEOUT_MS).toBe(60_000);
    expect(DEFAULT_IDLE_TIMEOUT_MS).toBe(30_000);
    expect(
      endpointConfigSchema.safeParse({ id: 'a', provider: 'openai', model: 'm', apiKeyEnv: 'X' }).success,
    ).toBe(true);
  });

  it.each([
    [{ id: 'a', provider: 'bedrock', model: 'm', apiKey: KEY }, 'provider'],
    [{ id: 'a', provider: 'openai', model: 'm', apiKey: KEY, headersTimeoutMs: -5 }, 'headersTimeoutMs'],
    [{ id: 'a', provider: 'openai', model: 'm', apiKey: KEY, limits: { rpm: 1.5 } }, 'limits.rpm'],
    [{ id: 'a', provider: 'openai', model: 'm', apiKey: KEY, flavor: 'vllm' }, 'flavor'],
    [{ id: 'a', provider: 'openai-compatible', model: 'm' }, 'baseURL'],
    [{ id: 'a', provider: 'gemini', model: 'm' }, 'apiKeyEnv'],
    [{ id: 'a', provider: 'openai', model: 'm', apiKey: KEY, baseURL: 'not a url' }, 'baseURL'],
    [{ id: 'a', provider: 'openai', model: 'm', apiKey: KEY, timeout: 5 }, 'timeout'],
  ])('refuses %j with a ConfigError at %s', (input, path) => {
    let caught: unknown;
    try {
      parseEndpointConfig(input, 'breakwater.yaml');
    } catch (e) {
      caught = e;
    }
    expect(isConfigError(caught)).toBe(true);
    const err = caught as { path: string; message: string; source: string };
    expect(err.source).toBe('breakwater.yaml');
    expect(err.path).toBe(path);
    expect(err.message).not.toContain(KEY);
  });

  it('lets createEngine refuse an apiKeyEnv that is not set, naming the variable', () => {
    expect(() =>
      createEngine({
        id: 'oa',
        provider: 'openai',
        model: 'gpt-x',
        apiKeyEnv: 'BREAKWATER_TEST_UNSET_VARIABLE_42',
      }),
    ).toThrow(/apiKeyEnv.*BREAKWATER_TEST_UNSET_VARIABLE_42 is not set/);
  });
});

describe('describeEndpoint', () => {
  it('identifies the key by a keyed fingerprint (8 hex), never the key nor its plain sha256', () => {
    const d = describeEndpoint({ id: 'primary', provider: 'anthropic', model: 'claude-x', apiKey: KEY });
    const expected = keyFingerprint(KEY);
    expect(expected).toMatch(/^[0-9a-f]{8}$/);
    // A plain sha256 prefix would let a dictionary recover a word key offline.
    expect(expected).not.toBe(createHash('sha256').update(KEY).digest('hex').slice(0, 8));
    expect(d).toEqual({
      id: 'primary',
      provider: 'anthropic',
      model: 'claude-x',
      keyFingerprint: expected,
      baseURL: 'https://api.anthropic.com',
    });
    expect(Object.isFrozen(d)).toBe(true);
    expect(JSON.stringify(d)).not.toContain(KEY);
  });

  it('reads the key from apiKeyEnv, and says none without a key', () => {
    process.env.BREAKWATER_TEST_KEY_ENV = KEY;
    try {
      const fromEnv = describeEndpoint({
        id: 'e',
        provider: 'openai',
        model: 'm',
        apiKeyEnv: 'BREAKWATER_TEST_KEY_ENV',
      });
      expect(fromEnv.keyFingerprint).toBe(keyFingerprint(KEY));
    } finally {
      delete process.env.BREAKWATER_TEST_KEY_ENV;
    }
    const local = describeEndpoint({
      id: 'l',
      provider: 'openai-compatible',
      flavor: 'ollama',
      model: 'llama3.1',
    });
    expect(local).toMatchObject({
      keyFingerprint: 'none',
      flavor: 'ollama',
      baseURL: 'http://127.0.0.1:11434/v1',
    });
  });

  it('strips credentials and query strings from the base URL', () => {
    const d = describeEndpoint({
      id: 'x',
      provider: 'openai-compatible',
      model: 'm',
      baseURL: 'http://user:hunter2secret@10.0.0.5:8000/v1?key=abcdef',
    });
    expect(d.baseURL).toBe('http://10.0.0.5:8000/v1');
    expect(d.flavor).toBe('generic');
  });

  it('a baseURL with user:password is refused, and the message does not echo it', () => {
    const err = (() => {
      try {
        parseEndpointConfig({
          id: 'x',
          provider: 'openai-compatible',
          model: 'm',
          baseURL: 'http://admin:hunter2secret@10.0.0.5:8000/v1',
        });
      } catch (e) {
        return e;
      }
    })();
    expect(isConfigError(err)).toBe(true);
    expect(String((err as Error).message)).toMatch(/baseURL.*must not carry a user or password/);
    expect(String((err as Error).message)).not.toContain('hunter2secret');
  });

  it.each([
    [
      'a key pasted into apiKeyEnv (not a variable name)',
      'sk-proj-abcdefghijklmnopqrstuv0123',
      /is not an environment variable name/,
    ],
    [
      'a Groq-style key that is a valid variable name',
      'gsk_8JdKq2LmNp4RsTuVwXyZ0123456789abcdef',
      /named by apiKeyEnv \(name not shown/,
    ],
  ])('%s is never printed back', (_what, pasted, expected) => {
    const err = (() => {
      try {
        createEngine({ id: 'k', provider: 'openai', model: 'm', apiKeyEnv: pasted });
      } catch (e) {
        return e;
      }
    })();
    expect(isConfigError(err)).toBe(true);
    expect((err as Error).message).toMatch(expected);
    expect((err as Error).message).not.toContain(pasted);
    expect((err as Error).message).not.toContain(pasted.slice(4, 16));
  });

  it('a conventional variable name is named in the "not set" message', () => {
    expect(() =>
      createEngine({ id: 'k', provider: 'openai', model: 'm', apiKeyEnv: 'BREAKWATER_TEST_UNSET_KEY' }),
    ).toThrow(/environment variable BREAKWATER_TEST_UNSET_KEY is not set/);
  });
});
