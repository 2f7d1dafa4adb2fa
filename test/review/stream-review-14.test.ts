import { generateText, streamText } from 'ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBreakwater } from '../../src/ai-sdk/index.ts';
import { type Emulator, type EmulatorFlavor, startEmulator } from '../../src/emulator/index.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import type { StreamEvent } from '../../src/runtime/turn-stream.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * Review of issue 14 (streaming with safe failover): probes that pin what a user of the streaming API relies on.
 * Real SDKs over real HTTP against the emulator. The first three fail on the reviewed code (see the review report);
 * the last one passes and, unlike the break-out tests of stream-failover.test.ts, fails if the upstream request is
 * not aborted (its idle deadline is far beyond the wait's bound, so only the abort can close the connection).
 */

function announced(events: readonly StreamEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.type === 'endpoint') text = text.slice(0, e.kept);
    else if (e.type === 'step') text = '';
    else if (e.type === 'text') text += e.text;
  }
  return text;
}

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const e of stream) events.push(e);
  return events;
}

let emulator: Emulator;
let supervisor: Supervisor | undefined;
beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 3, streamChunkChars: 8 } });
});
afterEach(async () => {
  await supervisor?.stop({ signal: AbortSignal.abort() });
  supervisor = undefined;
  emulator.clearFaults();
  emulator.reset();
});
afterAll(() => emulator.close());

describe('review 14: streamed turns', () => {
  it('two agents streaming turns that share a turnId each see only their own text', async () => {
    supervisor = createSupervisor({
      endpoints: [emulatorEndpoint(emulator, 'p', 'anthropic', 'claude-sonnet-4-6')],
      chains: { main: ['p'] },
      concurrency: { limit: 2 },
    });
    const a = supervisor.spawnAgent({ name: 'A', chain: 'main' });
    const b = supervisor.spawnAgent({ name: 'B', chain: 'main' });
    const sa = a.stream('Question for A', { turnId: 'request-42' });
    const sb = b.stream('Question for B', { turnId: 'request-42' });
    const [ea, eb] = await Promise.all([collect(sa), collect(sb)]);
    const [ta, tb] = [await sa.turn, await sb.turn];
    expect(announced(ea)).toBe(ta.answer.text);
    expect(announced(eb)).toBe(tb.answer.text);
    const rawB = eb.map((e) => (e.type === 'text' ? e.text : '')).join('');
    expect(rawB).not.toContain(ta.answer.text);
  });

  it('two next() calls made at once both settle (the AsyncIterator protocol allows it)', async () => {
    supervisor = createSupervisor({
      endpoints: [emulatorEndpoint(emulator, 'p', 'anthropic', 'claude-sonnet-4-6')],
      chains: { main: ['p'] },
    });
    const stream = supervisor.stream({ chain: 'main', messages: [{ role: 'user', content: 'Two reads' }] });
    const it = stream[Symbol.asyncIterator]();
    const first = it.next();
    const second = it.next();
    await stream.turn;
    let firstSettled = false;
    first.then(() => {
      firstSettled = true;
    });
    await second;
    // Both reads were made before any event existed; the turn has ended: both must have an answer by now.
    for (let i = 0; i < 10 && !firstSettled; i++) await new Promise((r) => setImmediate(r));
    expect(firstSettled).toBe(true);
  });

  it('AI SDK streamText after a restart: result.text is the answer, without the withdrawn text', async () => {
    supervisor = createSupervisor({
      endpoints: [
        emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o-mini', 'sk-review-restart-0000001'),
        emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini'),
      ],
      chains: { premium: ['primary', 'backup'] },
    });
    const bw = createBreakwater(supervisor);
    const clean = await generateText({ model: bw('premium'), prompt: 'Restart me.' });
    emulator.addFault({
      kind: 'stream_cut',
      match: { key: 'sk-review-restart-0000001' },
      count: 1,
      afterChunks: 2,
    });
    const result = streamText({ model: bw('premium'), prompt: 'Restart me.' });
    expect(await result.text).toBe(clean.text);
  });

  it.each<EmulatorFlavor>(['anthropic', 'openai', 'gemini'])(
    'breaking out on %s closes the upstream connection by the abort, not by the idle deadline',
    async (flavor) => {
      const model = { anthropic: 'claude-sonnet-4-6', openai: 'gpt-4o-mini', gemini: 'gemini-2.5-flash' }[
        flavor as 'anthropic' | 'openai' | 'gemini'
      ];
      emulator.addFault({ kind: 'stream_stall', match: { flavor }, count: 1, afterChunks: 1 });
      // The idle deadline (10 min) is far past the wait's bound (20 s): only the abort can end the stalled request.
      supervisor = createSupervisor({
        endpoints: [emulatorEndpoint(emulator, 'p', flavor, model, undefined, { idleTimeoutMs: 600_000 })],
        chains: { main: ['p'] },
      });
      const stream = supervisor.stream({ chain: 'main', messages: [{ role: 'user', content: 'Stall' }] });
      for await (const e of stream) if (e.type === 'text') break;
      expect((await stream.turn).outcome).toBe('cancelled');
      await waitFor(
        () => emulator.stats().calls.some((c) => c.status === 'stall'),
        'the emulator to see the close',
      );
      await waitFor(() => supervisor!.tokens().held === 0, 'the token to be released');
    },
  );
});
