import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CallCancel } from '../../src/core/call-abort.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import type { EndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { EngineRequest } from '../../src/core/engine-types.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { type EngineFaultError, isEngineFaultError } from '../../src/core/fault.ts';
import { waitFor } from '../support/wait-for.ts';
import { TARGETS, weatherTool } from './emulator-targets.ts';

// Streaming through each SDK's own stream over real HTTP against the emulator: deltas arrive in order and add up
// to the assembled text; usage, stop reason and tool calls are assembled; every mid-stream fault rejects with a
// classified fault; the idle deadline runs between chunks; an abort closes the upstream connection.

const request = (idempotencyKey: string, extra: Partial<EngineRequest> = {}): EngineRequest => ({
  messages: [{ role: 'user', content: 'Stream a status report, please.' }],
  maxTokens: 400,
  idempotencyKey,
  ...extra,
});

async function failure(promise: Promise<unknown>): Promise<EngineFaultError> {
  try {
    await promise;
  } catch (e) {
    expect(isEngineFaultError(e)).toBe(true);
    return e as EngineFaultError;
  }
  throw new Error('the stream was expected to fail');
}

describe.each(TARGETS)('engine.stream on $name', (target) => {
  let emulator: Emulator;
  const config = (extra: Partial<EndpointConfig> = {}): EndpointConfig => ({
    ...target.config(emulator.baseURL(target.flavor)),
    ...extra,
  });
  const callsWith = (key: string) => emulator.stats().calls.filter((c) => c.idempotencyKey === key);

  beforeAll(async () => {
    emulator = await startEmulator({ profile: { seed: 5, streamChunkChars: 16 } });
  });
  afterEach(() => emulator.clearFaults());
  afterAll(() => emulator?.close());

  it('streams deltas that add up to the same answer as a plain call, with usage and stop reason', async () => {
    const engine = createEngine(config());
    const deltas: string[] = [];
    const streamed = await engine.stream!(request(`${target.name}/plain`), { text: (d) => deltas.push(d) });
    const plain = await engine.call(request(`${target.name}/plain-2`));
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(streamed.text);
    expect(streamed.text).toBe(plain.text);
    expect(streamed.stopReason).toBe('end_turn');
    expect(streamed.usage.outputTokens).toBeGreaterThan(0);
    expect(callsWith(`${target.name}/plain`)[0]?.stream).toBe(true);
    if (target.flavor === 'anthropic' || target.flavor === 'openai') {
      expect(streamed.rateLimit.requests?.limit).toBeGreaterThan(0);
      expect(streamed.requestId).toBeTruthy();
    }
  });

  it('assembles a streamed tool call', async () => {
    const engine = createEngine(config());
    const result = await engine.stream!(request(`${target.name}/tool`, { tools: [weatherTool] }), {
      text: () => {},
    });
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({ name: 'get_weather' });
    expect(result.toolCalls[0]!.arguments).toMatchObject({ location: 'sample', days: 1 });
  });

  it('a cut after the first chunk rejects as network, after exactly that chunk', async () => {
    emulator.addFault({ kind: 'stream_cut', match: { flavor: target.flavor }, count: 1, afterChunks: 1 });
    const engine = createEngine(config());
    const deltas: string[] = [];
    const err = await failure(engine.stream!(request(`${target.name}/cut`), { text: (d) => deltas.push(d) }));
    expect(err.fault.kind).toBe('network');
    expect(deltas.length).toBe(1);
  });

  it('a final chunk cut mid-JSON: a broken stream (network), or a complete answer when only framing was lost', async () => {
    emulator.addFault({ kind: 'stream_truncated', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config());
    const deltas: string[] = [];
    const pending = engine.stream!(request(`${target.name}/truncated`), { text: (d) => deltas.push(d) });
    if (target.flavor === 'gemini') {
      // The finishReason chunk is the one cut: the end never came. A broken connection, not a provider error.
      const err = await failure(pending);
      expect(err.fault.kind).toBe('network');
    } else if (target.flavor === 'anthropic') {
      // message_stop is the one cut: message_delta already brought the stop reason and usage, so the answer is
      // complete (not re-asked as a continuation).
      const result = await pending;
      expect(result.stopReason).toBe('end_turn');
      expect(result.text).toBe(deltas.join(''));
      const plain = await engine.call(request(`${target.name}/truncated-plain`));
      expect(result.text).toBe(plain.text);
      expect(result.usage.outputTokens).toBe(plain.usage.outputTokens);
    } else {
      // The include_usage chunk is the last JSON: text and finish_reason came, the usage did not. The answer is
      // complete; its counts are unknown (never 0 or a guess), the estimate kept apart.
      const result = await pending;
      expect(result.stopReason).toBe('end_turn');
      expect(result.usage).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });
      expect(result.usage.estimated?.outputTokens).toBe(Math.ceil(result.text.length / 4));
      expect(result.usage.estimated?.inputTokens).toBeGreaterThan(0);
    }
  });

  it('an error event after the first chunk is the provider fault it names', async () => {
    emulator.addFault({ kind: 'stream_error', match: { flavor: target.flavor }, count: 1, afterChunks: 1 });
    const engine = createEngine(config());
    const deltas: string[] = [];
    const err = await failure(engine.stream!(request(`${target.name}/err`), { text: (d) => deltas.push(d) }));
    expect(deltas.length).toBe(1);
    expect(['overloaded', 'server_error']).toContain(err.fault.kind);
  });

  it('a stall between chunks is cut by the idle deadline (timeout)', async () => {
    emulator.addFault({ kind: 'stream_stall', match: { flavor: target.flavor }, count: 1, afterChunks: 1 });
    const engine = createEngine(config({ idleTimeoutMs: 150 }));
    const deltas: string[] = [];
    const err = await failure(
      engine.stream!(request(`${target.name}/stall`), { text: (d) => deltas.push(d) }),
    );
    expect(err.fault.kind).toBe('timeout');
    expect(deltas.length).toBe(1);
  });

  it('a stream without usage is complete; its counts are unknown, the estimate kept apart', async () => {
    emulator.addFault({ kind: 'stream_no_usage', match: { flavor: target.flavor }, count: 1 });
    const engine = createEngine(config());
    const result = await engine.stream!(request(`${target.name}/nousage`), { text: () => {} });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.usage).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });
    expect(result.usage.estimated?.outputTokens).toBe(Math.ceil(result.text.length / 4));
    expect(result.usage.estimated?.inputTokens).toBeGreaterThan(0);
  });

  it('an abort mid-stream closes the upstream connection and rejects as cancelled', async () => {
    emulator.addFault({ kind: 'stream_stall', match: { flavor: target.flavor }, count: 1, afterChunks: 1 });
    const engine = createEngine(config());
    const controller = new AbortController();
    const key = `${target.name}/abort`;
    const pending = failure(
      engine.stream!(request(key, { signal: controller.signal }), { text: () => controller.abort() }),
    );
    const err = await pending;
    expect(err.fault.kind).toBe('cancelled');
    await waitFor(() => callsWith(key)[0]?.status === 'stall', 'the emulator to see the connection closed');
  });

  it("the runtime's CallCancel mid-stream (no AbortSignal) closes the upstream connection: cancelled", async () => {
    emulator.addFault({ kind: 'stream_stall', match: { flavor: target.flavor }, count: 1, afterChunks: 1 });
    const engine = createEngine(config());
    const cancel = new CallCancel();
    const key = `${target.name}/call-cancel`;
    const pending = failure(
      engine.stream!(request(key, { abort: cancel }), {
        text: () => cancel.abort(new Error('left the call')),
      }),
    );
    const err = await pending;
    expect(err.fault.kind).toBe('cancelled');
    await waitFor(() => callsWith(key)[0]?.status === 'stall', 'the emulator to see the connection closed');
  });
});
