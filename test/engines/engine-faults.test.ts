import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CallCancel } from '../../src/core/call-abort.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import type { EndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { EngineRequest } from '../../src/core/engine-types.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { type EngineFaultError, isEngineFaultError } from '../../src/core/fault.ts';
import { waitFor } from '../support/wait-for.ts';
import { KEY, TARGETS } from './emulator-targets.ts';

// Faults through the real SDKs over real HTTP against the emulator: every rejection is an
// EngineFaultError with a classified fault, the SDK never retries, and our deadlines cut hangs
// and stalls. Real waits stay at 150 ms per deadline.

const SHORT_MS = 150;

async function failure(promise: Promise<unknown>): Promise<EngineFaultError> {
  try {
    await promise;
  } catch (e) {
    expect(isEngineFaultError(e)).toBe(true);
    return e as EngineFaultError;
  }
  throw new Error('the call was expected to fail');
}

const request = (
  idempotencyKey: string,
  cancel?: Pick<EngineRequest, 'signal' | 'abort'>,
): EngineRequest => ({
  messages: [{ role: 'user', content: 'Status report, please.' }],
  maxTokens: 200,
  idempotencyKey,
  ...cancel,
});

/** The two ways a call is cancelled: a caller's AbortSignal, and the runtime's CallCancel (no signal at all). */
const CANCELLERS = [
  {
    way: 'a caller signal',
    make: () => {
      const c = new AbortController();
      return { fields: { signal: c.signal }, abort: () => c.abort() };
    },
  },
  {
    way: "the runtime's CallCancel",
    make: () => {
      const c = new CallCancel();
      return { fields: { abort: c }, abort: () => c.abort(new Error('the agent left the call')) };
    },
  },
];

describe.each(TARGETS)('faults on $name', (target) => {
  let emulator: Emulator;
  const config = (extra: Partial<EndpointConfig> = {}): EndpointConfig => ({
    ...target.config(emulator.baseURL(target.flavor)),
    ...extra,
  });
  const callsWith = (key: string) => emulator.stats().calls.filter((c) => c.idempotencyKey === key);

  beforeAll(async () => {
    emulator = await startEmulator({ profile: { seed: 3 } });
  });
  afterEach(() => emulator.clearFaults());
  afterAll(() => emulator?.close());

  it('a 429 is one attempt only, and rejects as rate_limited with retryAfterMs', async () => {
    emulator.addFault({
      kind: 'rate_limit',
      match: { flavor: target.flavor },
      count: 1,
      retryAfterMs: 4_000,
    });
    const engine = createEngine(config());
    const key = `${target.name}/429`;
    const err = await failure(engine.call(request(key)));
    expect(err.fault).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      provider: engine.endpoint.provider,
      endpointId: engine.endpoint.id,
    });
    if (target.flavor === 'gemini-compat') {
      // Gemini's compat 429 is a bare array body with no header and no RetryInfo (wire facts §3.2):
      // there is no delay on the wire to report, so the fault rightly has none.
      expect(err.fault.code).toBe('RESOURCE_EXHAUSTED');
    } else {
      expect(err.fault.retryAfterMs).toBeGreaterThan(0);
      expect(err.fault.retryAfterMs).toBeLessThanOrEqual(4_000);
    }
    const seen = callsWith(key);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.status).toBe(429);
    // The same engine answers again once the fault is spent: nothing sticky in the client.
    const ok = await engine.call(request(`${key}/after`));
    expect(ok.text.length).toBeGreaterThan(0);
  });

  it('the header deadline cuts hang_before_headers → timeout', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config({ headersTimeoutMs: SHORT_MS }));
    const err = await failure(engine.call(request(`${target.name}/hang`)));
    expect(err.fault.kind).toBe('timeout');
    expect(err.fault.status).toBeUndefined();
    expect(err.fault.endpointId).toBe(engine.endpoint.id);
  });

  it('the idle timer cuts stall_after_headers (the SDK would wait forever) → timeout', async () => {
    emulator.addFault({ kind: 'stall_after_headers', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config({ idleTimeoutMs: SHORT_MS }));
    const err = await failure(engine.call(request(`${target.name}/stall`)));
    expect(err.fault.kind).toBe('timeout');
  });

  it.each(CANCELLERS)('an abort before headers through $way → cancelled', async ({ way, make }) => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config());
    const caller = make();
    const pending = engine.call(request(`${target.name}/abort/${way}`, caller.fields));
    // Abort once the emulator holds the request: before any header, whatever the machine's speed.
    await waitFor(() => emulator.stats().held === 1, 'the emulator to hold the request');
    caller.abort();
    const err = await failure(pending);
    expect(err.fault.kind).toBe('cancelled');
  });

  it.each(CANCELLERS)(
    'an abort while the body stalls through $way → cancelled, not timeout',
    async ({ way, make }) => {
      emulator.addFault({ kind: 'stall_after_headers', match: { flavor: target.flavor }, count: 1 });
      const engine = createEngine(config());
      const caller = make();
      const pending = engine.call(request(`${target.name}/abort-body/${way}`, caller.fields));
      // The stall is in place once the emulator holds it (headers and first bytes written); the default
      // 30 s idle timer is far away, so only our abort can end the call.
      await waitFor(() => emulator.stats().held === 1, 'the emulator to stall the body');
      caller.abort();
      const err = await failure(pending);
      expect(err.fault.kind).toBe('cancelled');
    },
  );

  it.each(CANCELLERS)(
    'already aborted through $way → cancelled, and nothing is sent',
    async ({ way, make }) => {
      const engine = createEngine(config());
      const key = `${target.name}/pre-aborted/${way}`;
      const caller = make();
      caller.abort();
      const err = await failure(engine.call(request(key, caller.fields)));
      expect(err.fault.kind).toBe('cancelled');
      expect(callsWith(key)).toHaveLength(0);
    },
  );

  it("an adapter engine takes the runtime's CallCancel (the runtime then makes no AbortSignal)", () => {
    expect(createEngine(config()).takesCallAbort).toBe(true);
  });

  it("a proxy's HTML 502 page → server_error whose message says '502 Bad Gateway' once", async () => {
    emulator.addFault({ kind: 'html_502', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config());
    const err = await failure(engine.call(request(`${target.name}/html502`)));
    expect(err.fault.kind).toBe('server_error');
    expect(err.fault.status).toBe(502);
    expect(err.fault.message).toBe('502 Bad Gateway');
  });

  it('a reset connection → network', async () => {
    emulator.addFault({ kind: 'connection_reset', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config());
    const err = await failure(engine.call(request(`${target.name}/reset`)));
    expect(err.fault.kind).toBe('network');
  });

  it('an auth failure never carries the key in the error', async () => {
    emulator.addFault({ kind: 'bad_key', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config());
    const err = await failure(engine.call(request(`${target.name}/bad-key`)));
    expect(err.fault.kind).toBe('auth');
    expect(err.message).not.toContain(KEY);
    expect(JSON.stringify(err.fault)).not.toContain(KEY);
    expect(err).not.toHaveProperty('cause');
  });
});
