import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorFaultKind, EmulatorFlavor } from '../../src/emulator/emulator-types.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { z } from 'zod';
import { bestOutput } from '../../src/core/token-usage.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { defineTool } from '../../src/runtime/define-tool.ts';
import type { StreamEvent } from '../../src/runtime/turn-stream.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * Streamed turns per provider kind, the real SDKs over real HTTP against the emulator (system clock; the only real
 * wait is a 200 ms idle deadline on stalls). Every mid-stream fault before and after the first chunk: the final
 * Turn's text is exactly the text the events announced, the fault is recorded, and text of a dead endpoint is shown
 * only once it had started (continuation or restart says what happens to it). An abort mid-stream closes the
 * upstream connection and frees the token.
 */

const KINDS: readonly { flavor: EmulatorFlavor; model: string; continues: boolean }[] = [
  { flavor: 'anthropic', model: 'claude-sonnet-4-6', continues: true },
  { flavor: 'openai', model: 'gpt-4o-mini', continues: false },
  { flavor: 'gemini', model: 'gemini-2.5-flash', continues: false },
  { flavor: 'vllm', model: 'qwen2.5-7b', continues: true },
  { flavor: 'ollama', model: 'llama3.1', continues: false },
  { flavor: 'gemini-compat', model: 'gemini-2.5-flash', continues: false },
];

const PRIMARY_KEY = 'sk-stream-primary-000000000001';

/** The text the events announce: `endpoint` keeps its `kept` chars, `step` starts over, `text` appends. */
function announced(events: readonly StreamEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.type === 'endpoint') text = text.slice(0, e.kept);
    else if (e.type === 'step') text = '';
    else if (e.type === 'text') text += e.text;
  }
  return text;
}

let emulator: Emulator;
let supervisor: Supervisor | undefined;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 21, streamChunkChars: 12 } });
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

describe.each(KINDS)('streaming on $flavor', ({ flavor, model, continues }) => {
  // Only a stall needs a short idle deadline (it is what detects the stall); the others keep the default.
  const runtime = (kind?: EmulatorFaultKind) =>
    createSupervisor({
      endpoints: [
        emulatorEndpoint(
          emulator,
          'primary',
          flavor,
          model,
          PRIMARY_KEY,
          kind === 'stream_stall' ? { idleTimeoutMs: 200 } : {},
        ),
        emulatorEndpoint(emulator, 'backup', flavor, model),
      ],
      chains: { main: ['primary', 'backup'] },
      concurrency: { limit: 2 },
    });

  async function collect(prompt: string): Promise<StreamEvent[]> {
    const agent = supervisor!.agent('writer') ?? supervisor!.spawnAgent({ name: 'writer', chain: 'main' });
    const events: StreamEvent[] = [];
    for await (const e of agent.stream(prompt)) events.push(e);
    return events;
  }

  it('a plain stream: deltas, then done with the same turn ask gives', async () => {
    supervisor = runtime();
    const events = await collect('Stream me a status report.');
    const done = events[events.length - 1];
    expect(done?.type).toBe('done');
    const turn = done?.type === 'done' ? done.turn : undefined;
    expect(turn?.outcome).toBe('answered');
    expect(events.filter((e) => e.type === 'text').length).toBeGreaterThan(3);
    expect(events[0]).toMatchObject({ type: 'endpoint', endpointId: 'primary', mode: 'start', kept: 0 });
    expect(announced(events)).toBe(turn?.answer.text);
    const asked = await supervisor.agent('writer')!.ask('Stream me a status report.');
    expect(asked.answer.text.length).toBeGreaterThan(0);
    expect(supervisor.tokens().held).toBe(0);
  });

  const FAULTS: readonly EmulatorFaultKind[] = ['stream_cut', 'stream_error', 'stream_stall'];
  describe.each(FAULTS)('%s', (kind) => {
    it('before the first chunk: only a fault event, then the answer from the next attempt', async () => {
      emulator.addFault({ kind, match: { key: PRIMARY_KEY }, count: 1, afterChunks: 0 });
      supervisor = runtime(kind);
      const events = await collect(`Report after ${kind} before content.`);
      const turn = (events[events.length - 1] as Extract<StreamEvent, { type: 'done' }>).turn;
      const faults = events.filter((e) => e.type === 'fault');
      expect(faults).toHaveLength(1);
      expect(faults[0]).toMatchObject({ endpointId: 'primary', afterChars: 0 });
      // Nothing was shown before the fault: the first event is the fault, then a fresh start.
      expect(events[0]?.type).toBe('fault');
      expect(events[1]).toMatchObject({ type: 'endpoint', mode: 'start', kept: 0, withdrawn: 0 });
      expect(turn.faults).toHaveLength(1);
      expect(turn.attempts).toBe(2);
      expect(['answered', 'fallback']).toContain(turn.outcome);
      expect(announced(events)).toBe(turn.answer.text);
      expect(turn.answer.text.length).toBeGreaterThan(0);
    });

    it(`after the first chunk: ${continues ? 'a continuation from the partial answer' : 'a restart withdrawing the partial answer'}`, async () => {
      emulator.addFault({ kind, match: { key: PRIMARY_KEY }, count: 1, afterChunks: 1 });
      supervisor = runtime(kind);
      const events = await collect(`Report after ${kind} after content.`);
      const turn = (events[events.length - 1] as Extract<StreamEvent, { type: 'done' }>).turn;
      const firstText = events.find((e) => e.type === 'text');
      expect(firstText).toMatchObject({ endpointId: 'primary' });
      const fault = events.find((e) => e.type === 'fault');
      expect(fault).toMatchObject({ endpointId: 'primary' });
      const partialChars = (fault as Extract<StreamEvent, { type: 'fault' }>).afterChars;
      expect(partialChars).toBe(12);
      const second = events.filter((e) => e.type === 'endpoint')[1] as Extract<
        StreamEvent,
        { type: 'endpoint' }
      >;
      if (continues) {
        expect(second.mode).toBe('continuation');
        expect(second.kept + second.withdrawn).toBe(partialChars);
        expect(second.sources).toEqual([{ endpointId: 'primary', chars: second.kept }]);
        expect(
          turn.answer.text.startsWith(
            announced(events.slice(0, events.indexOf(second))).slice(0, second.kept),
          ),
        ).toBe(true);
      } else {
        expect(second).toMatchObject({ mode: 'restart', kept: 0, withdrawn: partialChars, sources: [] });
      }
      expect(turn.faults).toHaveLength(1);
      expect(turn.attempts).toBe(2);
      expect(announced(events)).toBe(turn.answer.text);
      // No text duplicated or dropped: a continuation is the prefix + what followed it, once.
      const after = events.slice(events.indexOf(second) + 1).filter((e) => e.type === 'text');
      const tail = after.map((e) => (e as { text: string }).text).join('');
      expect(turn.answer.text).toBe(announced(events.slice(0, events.indexOf(second) + 1)) + tail);
    });
  });

  it('breaking out mid-stream aborts the upstream request (the emulator sees it closed) and frees the token', async () => {
    emulator.addFault({ kind: 'stream_stall', match: { key: PRIMARY_KEY }, count: 1, afterChunks: 1 });
    // The idle deadline (10 min) is far past waitFor's bound (20 s): only the abort can close the stalled request.
    supervisor = createSupervisor({
      endpoints: [
        emulatorEndpoint(emulator, 'primary', flavor, model, PRIMARY_KEY, { idleTimeoutMs: 600_000 }),
      ],
      chains: { main: ['primary'] },
      concurrency: { limit: 1 },
    });
    const agent = supervisor.spawnAgent({ name: 'writer', chain: 'main' });
    const stream = agent.stream('Stall on me.');
    let sawText = false;
    for await (const e of stream) {
      if (e.type === 'text') {
        sawText = true;
        break;
      }
    }
    expect(sawText).toBe(true);
    const turn = await stream.turn;
    expect(turn.outcome).toBe('cancelled');
    await waitFor(
      () => emulator.stats().calls.some((c) => c.status === 'stall'),
      'the emulator to see the close',
    );
    await waitFor(() => supervisor!.tokens().held === 0, 'the token to be released');
  });
});

describe.each([
  { flavor: 'anthropic' as const, model: 'claude-sonnet-4-6' },
  { flavor: 'vllm' as const, model: 'qwen2.5-7b' },
])('a continuation on $flavor under maxTokens', ({ flavor, model }) => {
  it('asks only for what the kept prefix left: the capped answer equals the uncut one; usage is partial, the estimate counts the prefix', async () => {
    supervisor = createSupervisor({
      endpoints: [
        emulatorEndpoint(emulator, 'primary', flavor, model, PRIMARY_KEY),
        emulatorEndpoint(emulator, 'backup', flavor, model),
      ],
      chains: { main: ['primary', 'backup'] },
    });
    // The emulator's answer (60 tokens) is longer than the cap: the uncut answer stops at 30 tokens.
    const ask = {
      chain: 'main',
      maxTokens: 30,
      messages: [{ role: 'user' as const, content: 'Capped answer.' }],
    };
    const clean = await supervisor.call(ask);
    expect(clean.stopReason).toBe('max_tokens');
    emulator.addFault({ kind: 'stream_cut', match: { key: PRIMARY_KEY }, count: 1, afterChunks: 2 });
    const stream = supervisor.stream(ask);
    const events: StreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const turn = await stream.turn;
    const continued = events.find((e) => e.type === 'endpoint' && e.mode === 'continuation');
    expect(continued).toBeDefined();
    // Asked for the full 30 again, the continuation would run 30 tokens past the prefix: a longer answer.
    expect(turn.answer.text).toBe(clean.answer.text);
    expect(turn.stopReason).toBe('max_tokens');
    // The cut attempt wrote the prefix and read the prompt, and no provider reported those tokens: they are estimated
    // apart (the prefix's characters / 4, rounded up), the continuation's reported counts kept: partial. Reported and
    // estimated together are the uncut answer's tokens.
    expect(turn.usage.source).toBe('partial');
    const cleanOutput = clean.usage.outputTokens!;
    expect(turn.usage.outputTokens).toBeGreaterThan(0);
    expect(turn.usage.outputTokens).toBeLessThan(cleanOutput);
    expect(turn.usage.estimated?.outputTokens).toBeGreaterThan(0);
    expect(bestOutput(turn.usage)).toBeGreaterThanOrEqual(cleanOutput);
    expect(bestOutput(turn.usage)).toBeLessThanOrEqual(cleanOutput + 1);
  });
});

describe('an Anthropic stream that lost only its message_stop', () => {
  it('is a complete answer from the primary: no fault, no continuation, one attempt', async () => {
    supervisor = createSupervisor({
      endpoints: [
        emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6', PRIMARY_KEY),
        emulatorEndpoint(emulator, 'backup', 'anthropic', 'claude-sonnet-4-6'),
      ],
      chains: { main: ['primary', 'backup'] },
    });
    const ask = { chain: 'main', messages: [{ role: 'user' as const, content: 'Lose the last event.' }] };
    const clean = await supervisor.call(ask);
    emulator.addFault({ kind: 'stream_truncated', match: { key: PRIMARY_KEY }, count: 1 });
    const stream = supervisor.stream(ask);
    const events: StreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const turn = await stream.turn;
    expect(turn.outcome).toBe('answered');
    expect(turn.attempts).toBe(1);
    expect(turn.faults).toEqual([]);
    expect(turn.answer.text).toBe(clean.answer.text);
    expect(events.filter((e) => e.type === 'endpoint')).toHaveLength(1);
  });
});

describe('supervisor.stream (one-off)', () => {
  it('streams a one-off call and ends with its turn; an aborted signal ends it cancelled', async () => {
    supervisor = createSupervisor({
      endpoints: [emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6')],
      chains: { main: ['primary'] },
    });
    const stream = supervisor.stream({ chain: 'main', messages: [{ role: 'user', content: 'Hello there' }] });
    const events: StreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const turn = await stream.turn;
    expect(turn.outcome).toBe('answered');
    expect(announced(events)).toBe(turn.answer.text);
    expect(supervisor.agents()).toHaveLength(0);

    const controller = new AbortController();
    controller.abort();
    const cancelled = supervisor.stream({
      chain: 'main',
      messages: [{ role: 'user', content: 'Never mind' }],
      signal: controller.signal,
    });
    expect((await cancelled.turn).outcome).toBe('cancelled');
  });
});

describe('a streamed turn with tools', () => {
  it('announces the tool call, then a step, then the answer; the events build the final text', async () => {
    supervisor = createSupervisor({
      endpoints: [emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6')],
      chains: { main: ['primary'] },
    });
    const fxRate = defineTool({
      description: 'Latest rate of a currency pair',
      parameters: z.object({ pair: z.enum(['EURUSD', 'USDJPY']) }),
      run: async ({ pair }) => `${pair} 1.0842`,
    });
    const agent = supervisor.spawnAgent({ name: 'fx', chain: 'main', tools: { fx_rate: fxRate } });
    const events: StreamEvent[] = [];
    for await (const e of agent.stream('What is EURUSD?')) events.push(e);
    const types = events.map((e) => e.type);
    const turn = (events[events.length - 1] as Extract<StreamEvent, { type: 'done' }>).turn;
    expect(types.indexOf('tool-call')).toBeGreaterThanOrEqual(0);
    expect(types.indexOf('step')).toBeGreaterThan(types.indexOf('tool-call'));
    expect(events.find((e) => e.type === 'tool-call')).toMatchObject({ call: { name: 'fx_rate' } });
    expect(turn.answer.text).toContain('1.0842');
    expect(announced(events)).toBe(turn.answer.text);
  });
});
