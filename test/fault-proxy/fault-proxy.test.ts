import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import type { EndpointConfig } from '../../src/engines/endpoint-config.ts';
import { type EngineFaultError, isEngineFaultError } from '../../src/core/fault.ts';
import type { EndpointFaultRule } from '../../src/fault-proxy/endpoint-fault-rule.ts';
import { type FaultProxy, startFaultProxy } from '../../src/fault-proxy/fault-proxy.ts';
import { okReply } from '../support/reset-header-forms.ts';
import { waitFor } from '../support/wait-for.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

/*
 * The fault proxy in front of a "real" server (a raw node:http fixture standing in for a provider):
 * rules act out faults in the endpoint's own wire format, through the real SDKs; every other call
 * reaches the real server untouched, key and path included.
 */

const KEY = 'sk-proxy-test-key-000000000001';
let real: WireFixtureServer;
const proxies: FaultProxy[] = [];

beforeAll(async () => {
  real = await startWireFixtureServer({
    openai: okReply('openai', 'from the real server'),
    anthropic: okReply('anthropic', 'from the real server'),
    gemini: {
      status: 200,
      body: {
        candidates: [
          {
            content: { role: 'model', parts: [{ text: 'from the real server' }] },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 },
        modelVersion: 'gemini-2.5-flash',
      },
    },
    stream: {
      sse: [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"streamed"}}\n\n',
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
    },
  });
});
afterAll(async () => {
  for (const p of proxies) await p.close();
  await real.close();
});

async function proxyFor(
  route: string,
  endpoint: { id: string; provider: EndpointConfig['provider'] },
  rules: EndpointFaultRule[],
  clock = createManualClock(0),
): Promise<FaultProxy> {
  const proxy = await startFaultProxy({ upstream: real.url(route), endpoint, rules, clock });
  proxies.push(proxy);
  return proxy;
}

async function call(config: EndpointConfig, key = 'k') {
  try {
    return {
      result: await createEngine(config).call({
        messages: [{ role: 'user', content: 'status?' }],
        maxTokens: 16,
        idempotencyKey: key,
      }),
    };
  } catch (e) {
    expect(isEngineFaultError(e)).toBe(true);
    return { fault: (e as EngineFaultError).fault };
  }
}

describe('a fault proxy in front of a real OpenAI-wire server', () => {
  it('acts out a rule in OpenAI format, then forwards untouched (path, key, answer) once the rule is spent', async () => {
    const proxy = await proxyFor('openai', { id: 'oa', provider: 'openai' }, [
      { endpoint: 'oa', kind: 'rate_limit', retryAfterMs: 7_000, count: 2 },
      { endpoint: 'other', kind: 'connection_reset' },
    ]);
    const config: EndpointConfig = {
      id: 'oa',
      provider: 'openai',
      model: 'gpt-4o',
      apiKey: KEY,
      baseURL: proxy.baseURL,
    };
    for (let i = 0; i < 2; i++) {
      const { fault } = await call(config, `oa-${i}`);
      expect(fault).toMatchObject({
        kind: 'rate_limited',
        status: 429,
        retryAfterMs: 7_000,
        code: 'rate_limit_exceeded',
      });
    }
    expect(real.requests('openai')).toHaveLength(0);
    const { result } = await call(config, 'oa-2');
    expect(result?.text).toBe('from the real server');
    const seen = real.requests('openai');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.path).toBe('/openai/chat/completions');
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen[0]?.headers['idempotency-key']).toBe('oa-2');
    expect(JSON.parse(seen[0]?.body ?? '{}').model).toBe('gpt-4o');
    expect(proxy.stats()).toEqual({ forwarded: 1, faulted: { rate_limit: 2 } });
  });

  it('a rule window on the run clock: forwarded before it, faulted inside it, forwarded after it', async () => {
    const clock = createManualClock(Date.parse('2026-03-02T09:00:00+09:00'));
    const proxy = await proxyFor(
      'openai',
      { id: 'win', provider: 'openai' },
      [{ endpoint: 'win', kind: 'server_busy', window: { fromMs: 60_000, toMs: 120_000 } }],
      clock,
    );
    const config: EndpointConfig = {
      id: 'win',
      provider: 'openai',
      model: 'gpt-4o',
      apiKey: KEY,
      baseURL: proxy.baseURL,
    };
    expect((await call(config, 'w1')).result).toBeDefined();
    clock.advance(60_000);
    expect((await call(config, 'w2')).fault).toMatchObject({ kind: 'overloaded', status: 503 });
    clock.advance(60_000);
    expect((await call(config, 'w3')).result).toBeDefined();
  });
});

describe('each kind in the endpoint’s own wire format (Anthropic, Gemini)', () => {
  it('Anthropic: 529 overloaded, HTML 502, a reset, a hang and a stalled body cut by our deadlines', async () => {
    const proxy = await proxyFor('anthropic', { id: 'an', provider: 'anthropic' }, [
      { endpoint: 'an', kind: 'overloaded', count: 1 },
      { endpoint: 'an', kind: 'html_502', count: 1 },
      { endpoint: 'an', kind: 'connection_reset', count: 1 },
      { endpoint: 'an', kind: 'hang_before_headers', count: 1 },
      { endpoint: 'an', kind: 'stall_after_headers', count: 1 },
    ]);
    const config: EndpointConfig = {
      id: 'an',
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      apiKey: KEY,
      baseURL: proxy.baseURL,
      headersTimeoutMs: 300,
      idleTimeoutMs: 300,
    };
    expect((await call(config, 'a1')).fault).toMatchObject({
      kind: 'overloaded',
      status: 529,
      code: 'overloaded_error',
    });
    expect((await call(config, 'a2')).fault).toMatchObject({
      kind: 'server_error',
      status: 502,
      message: '502 Bad Gateway',
    });
    expect((await call(config, 'a3')).fault?.kind).toBe('network');
    expect((await call(config, 'a4')).fault?.kind).toBe('timeout');
    // The stall forwards to the real server, passes its headers and first bytes, then holds the rest.
    expect((await call(config, 'a5')).fault?.kind).toBe('timeout');
    expect((await call(config, 'a6')).result?.text).toBe('from the real server');
    expect(real.requests('anthropic').map((r) => r.headers['x-api-key'] ?? r.headers.authorization)).toEqual([
      expect.stringContaining(KEY),
      expect.stringContaining(KEY),
    ]);
  });

  it('Gemini: a per-minute 429 carries its delay in RetryInfo, as Gemini does', async () => {
    const proxy = await proxyFor('gemini', { id: 'ge', provider: 'gemini' }, [
      { endpoint: 'ge', kind: 'rate_limit', retryAfterMs: 47_000, count: 1 },
    ]);
    const config: EndpointConfig = {
      id: 'ge',
      provider: 'gemini',
      model: 'gemini-2.5-flash',
      apiKey: KEY,
      baseURL: proxy.baseURL,
    };
    expect((await call(config, 'g1')).fault).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 47_000,
    });
    expect((await call(config, 'g2')).result?.text).toBe('from the real server');
  });
});

describe('streams pass through; a stream_error rule cuts one after its first events', () => {
  it('a stream reaches the client whole, then one ends in an overloaded_error event', async () => {
    const proxy = await proxyFor('stream', { id: 'st', provider: 'anthropic' }, [
      { endpoint: 'st', kind: 'stream_error', count: 1 },
    ]);
    const client = new Anthropic({ apiKey: KEY, baseURL: proxy.baseURL, maxRetries: 0 });
    const body = {
      model: 'claude-sonnet-4-6',
      max_tokens: 16,
      stream: true as const,
      messages: [{ role: 'user' as const, content: 'x' }],
    };
    const cut: string[] = [];
    const error = await (async () => {
      for await (const ev of await client.messages.create(body)) cut.push(ev.type);
    })().then(
      () => undefined,
      (e: unknown) => e as { type?: string; status?: number },
    );
    expect(cut[0]).toBe('message_start');
    expect(cut).not.toContain('message_stop');
    expect(error?.type).toBe('overloaded_error');
    expect(error?.status).toBeUndefined();

    const whole: string[] = [];
    for await (const ev of await client.messages.create(body)) whole.push(ev.type);
    expect(whole.at(-1)).toBe('message_stop');
    expect(whole).toContain('content_block_delta');
    expect(real.requests('stream')).toHaveLength(2);
  });
  it('eleven hangs one after another leave no listener behind (no MaxListenersExceededWarning)', async () => {
    const proxy = await proxyFor('openai', { id: 'hangs', provider: 'openai' }, [
      { endpoint: 'hangs', kind: 'hang_before_headers', count: 11 },
    ]);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 11; i++) {
        // The client gives up on each hang; the proxy must let go of it (its response closes).
        const aborted = new AbortController();
        const pending = fetch(`${proxy.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
          body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }),
          signal: aborted.signal,
        }).catch((e: unknown) => e);
        // Held by the proxy (counted as it starts the hang) before the client gives up.
        await waitFor(
          () => (proxy.stats().faulted.hang_before_headers ?? 0) === i + 1,
          'the proxy to hold the call',
        );
        aborted.abort();
        expect(await pending).toBeInstanceOf(Error);
      }
      // Node emits the warning on the next tick after the 11th listener is added.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});
