import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import type { EndpointConfig } from '../../src/engines/endpoint-config.ts';
import { type EngineFaultError, isEngineFaultError } from '../../src/core/fault.ts';
import {
  type FormProvider,
  okReply,
  RESET_HEADER_FORMS,
  rateLimitBody,
  rateLimitReply,
} from '../support/reset-header-forms.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

/*
 * Issue 18: a reset given as an instant is wall-clock. Through the real SDKs against a raw server, with
 * the engine's run clock at a scenario's past `start:` and its wall clock injected, every header form
 * gives exactly the wait the header meant, and an absurd one is capped (and says so).
 */

const RUN_START = Date.parse('2026-03-02T09:00:00+09:00');
/** A whole second: HTTP-dates have no fraction. */
const WALL = Date.parse('2026-12-01T10:00:00Z');
const KEY = 'sk-reset-form-key-000000000000001';
const DAY = 86_400_000;

let server: WireFixtureServer;
beforeAll(async () => {
  server = await startWireFixtureServer();
});
afterAll(() => server.close());

function engineOn(route: string, provider: FormProvider, extra: Partial<EndpointConfig> = {}) {
  const model = provider === 'anthropic' ? 'claude-sonnet-4-6' : 'gpt-4o';
  return createEngine(
    { id: `ep-${route}`, provider, model, apiKey: KEY, baseURL: server.url(route), ...extra },
    { clock: createManualClock(RUN_START), wallNow: () => WALL },
  );
}

async function faultOf(route: string, provider: FormProvider, extra: Partial<EndpointConfig> = {}) {
  try {
    await engineOn(route, provider, extra).call({
      messages: [{ role: 'user', content: 'status?' }],
      maxTokens: 32,
      idempotencyKey: `idem-${route}`,
    });
  } catch (e) {
    expect(isEngineFaultError(e)).toBe(true);
    return (e as EngineFaultError).fault;
  }
  throw new Error(`the call to ${route} was expected to fail`);
}

describe('a 429 in every reset-header form, run clock 9 months behind the wall clock', () => {
  for (const form of RESET_HEADER_FORMS) {
    it(`${form.name} (${form.provider}): rate_limited with exactly the 7 s the header meant`, async () => {
      server.route(form.name, rateLimitReply(form, WALL, 7_000));
      const fault = await faultOf(form.name, form.provider);
      expect(fault.kind).toBe('rate_limited');
      expect(fault.status).toBe(429);
      expect(fault.retryAfterMs).toBe(7_000);
      expect(fault.retryAfterCappedFromMs).toBeUndefined();
    });
  }

  it('an Anthropic reset 274 days ahead is capped at 15 min, and the fault keeps what was asked', async () => {
    const form = RESET_HEADER_FORMS.find((f) => f.name === 'anthropic-ratelimit-reset')!;
    server.route('absurd-reset', rateLimitReply(form, WALL, 274 * DAY));
    const fault = await faultOf('absurd-reset', 'anthropic');
    expect(fault.retryAfterMs).toBe(15 * 60_000);
    expect(fault.retryAfterCappedFromMs).toBe(274 * DAY);
  });

  it("an HTTP-date a year ahead is held to the endpoint's own maxRetryAfterMs", async () => {
    server.route('absurd-date', {
      status: 429,
      headers: { 'retry-after': new Date(WALL + 365 * DAY).toUTCString() },
      body: rateLimitBody('openai'),
    });
    const fault = await faultOf('absurd-date', 'openai', { maxRetryAfterMs: 60_000 });
    expect(fault.retryAfterMs).toBe(60_000);
    expect(fault.retryAfterCappedFromMs).toBe(365 * DAY);
  });

  it('a success reporting an exhausted dimension paces until the reset, placed on the run clock', async () => {
    const form = RESET_HEADER_FORMS.find((f) => f.name === 'anthropic-ratelimit-reset')!;
    const ok = okReply('anthropic');
    server.route('ok-exhausted', { ...ok, headers: { ...ok.headers, ...form.headers(WALL, 7_000) } });
    const result = await engineOn('ok-exhausted', 'anthropic').call({
      messages: [{ role: 'user', content: 'status?' }],
      maxTokens: 32,
      idempotencyKey: 'idem-ok-exhausted',
    });
    expect(result.rateLimit.requests).toEqual({ limit: 50, remaining: 0, resetAt: RUN_START + 7_000 });
  });
});

describe('the default wall clock is the real one', () => {
  it('a reset stamped 7 s from the real now when the request arrives is a wait of 7 s (± 1 s)', async () => {
    const form = RESET_HEADER_FORMS.find((f) => f.name === 'anthropic-ratelimit-reset')!;
    server.route('real-wall', () => rateLimitReply(form, Date.now(), 7_000));
    const engine = createEngine(
      { id: 'real-wall', provider: 'anthropic', model: 'm', apiKey: KEY, baseURL: server.url('real-wall') },
      { clock: createManualClock(RUN_START) },
    );
    const err = await engine
      .call({ messages: [{ role: 'user', content: 'x' }], maxTokens: 8, idempotencyKey: 'idem-real-wall' })
      .then(
        () => undefined,
        (e: unknown) => e as EngineFaultError,
      );
    expect(err?.fault.retryAfterMs).toBeGreaterThanOrEqual(6_000);
    expect(err?.fault.retryAfterMs).toBeLessThanOrEqual(7_000);
  });
});
