import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { type StreamEvent, TurnEventChannel } from '../../src/runtime/turn-stream.ts';
import { isAgentStoppedError } from '../../src/core/errors/lifecycle-errors.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * The stream itself (the channel between the runtime and the consumer), over real HTTP against the emulator:
 * a turn's events reach its own stream only, whatever turn id the caller chose; reads made at once all settle;
 * an unread stream keeps its text, not one event per delta.
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

const rawText = (events: readonly StreamEvent[]) =>
  events.map((e) => (e.type === 'text' ? e.text : '')).join('');

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

const oneEndpoint = () =>
  createSupervisor({
    endpoints: [emulatorEndpoint(emulator, 'p', 'anthropic', 'claude-sonnet-4-6')],
    chains: { main: ['p'] },
    concurrency: { limit: 2 },
  });

describe('a streamed turn reaches its own stream only', () => {
  it('two agents streaming turns that share a turnId each see only their own text', async () => {
    supervisor = oneEndpoint();
    const a = supervisor.spawnAgent({ name: 'A', chain: 'main' });
    const b = supervisor.spawnAgent({ name: 'B', chain: 'main' });
    const sa = a.stream('Question for A', { turnId: 'request-42' });
    const sb = b.stream('Question for B', { turnId: 'request-42' });
    const [ea, eb] = await Promise.all([collect(sa), collect(sb)]);
    const [ta, tb] = [await sa.turn, await sb.turn];
    expect(announced(ea)).toBe(ta.answer.text);
    expect(announced(eb)).toBe(tb.answer.text);
    expect(ta.answer.text).not.toBe(tb.answer.text);
    expect(rawText(eb)).not.toContain(ta.answer.text);
    expect(rawText(ea)).not.toContain(tb.answer.text);
  });

  it('one agent given two streamed turns with the same turnId: each stream gets its own turn', async () => {
    supervisor = oneEndpoint();
    const a = supervisor.spawnAgent({ name: 'A', chain: 'main' });
    // The second waits behind the first (one turn at a time per agent) while its stream already exists.
    const s1 = a.stream('First question', { turnId: 'same' });
    const s2 = a.stream('Second question', { turnId: 'same' });
    const [e1, e2] = await Promise.all([collect(s1), collect(s2)]);
    const [t1, t2] = [await s1.turn, await s2.turn];
    expect(t1.answer.text).not.toBe(t2.answer.text);
    expect(announced(e1)).toBe(t1.answer.text);
    expect(announced(e2)).toBe(t2.answer.text);
  });
});

describe('reading a stream', () => {
  it('two next() calls made at once both settle, in order (the AsyncIterator protocol allows it)', async () => {
    supervisor = oneEndpoint();
    const stream = supervisor.stream({ chain: 'main', messages: [{ role: 'user', content: 'Two reads' }] });
    const it = stream[Symbol.asyncIterator]();
    const first = it.next();
    const second = it.next();
    // Both were asked before any event existed; the first must get the first event, the second the next one.
    const [r1, r2] = await Promise.all([first, second]);
    expect(r1.done).toBe(false);
    expect(r1.value).toMatchObject({ type: 'endpoint', mode: 'start' });
    expect(r2.done).toBe(false);
    const rest: StreamEvent[] = [r1.value as StreamEvent, r2.value as StreamEvent];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    const turn = await stream.turn;
    expect(announced(rest)).toBe(turn.answer.text);
    // Reads made at once after the end all settle done.
    const after = await Promise.all([it.next(), it.next(), it.next()]);
    expect(after.every((r) => r.done)).toBe(true);
  });

  it('reads waiting when the turn fails reject in order, with its error', async () => {
    let fail!: (e: unknown) => void;
    const failing = new TurnEventChannel(
      new Promise((_, reject) => {
        fail = reject;
      }),
      () => {},
    );
    failing.push({ type: 'step', step: 1 });
    const reads = [failing.next(), failing.next(), failing.next()];
    const boom = new Error('the turn failed');
    fail(boom);
    const settled = await Promise.allSettled(reads);
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect(settled.slice(1).map((r) => (r as PromiseRejectedResult).reason)).toEqual([boom, boom]);
  });

  it('an unread stream merges adjacent deltas of one endpoint: the same text in a few events', async () => {
    const big = await startEmulator({ profile: { seed: 5, streamChunkChars: 2, answerTokens: 600 } });
    try {
      supervisor = createSupervisor({
        endpoints: [emulatorEndpoint(big, 'p', 'openai', 'gpt-4o-mini')],
        chains: { main: ['p'] },
      });
      const stream = supervisor.stream({
        chain: 'main',
        messages: [{ role: 'user', content: 'A long one' }],
      });
      // Nobody reads until the turn is over: every delta was buffered.
      const turn = await stream.turn;
      const events = await collect(stream);
      expect(turn.answer.text.length).toBeGreaterThan(400);
      expect(announced(events)).toBe(turn.answer.text);
      // One endpoint, no fault: its hundreds of 2-char deltas are held as one text event.
      expect(events.map((e) => e.type)).toEqual(['endpoint', 'text', 'done']);
    } finally {
      await supervisor?.stop({ signal: AbortSignal.abort() });
      supervisor = undefined;
      await big.close();
    }
  });
});

describe('streaming once stopped', () => {
  it("a stopped agent's stream rejects with AgentStoppedError; supervisor.stream throws it once stopping", async () => {
    supervisor = oneEndpoint();
    const a = supervisor.spawnAgent({ name: 'A', chain: 'main' });
    a.stop();
    const stream = a.stream('Too late');
    await expect(collect(stream)).rejects.toSatisfy(isAgentStoppedError);
    await expect(stream.turn).rejects.toSatisfy(isAgentStoppedError);
    const stopped = supervisor;
    supervisor = undefined;
    await stopped.stop();
    let thrown: unknown;
    try {
      stopped.stream({ chain: 'main', messages: [{ role: 'user', content: 'Too late' }] });
    } catch (e) {
      thrown = e;
    }
    expect(isAgentStoppedError(thrown)).toBe(true);
  });
});

describe('cancelling a streamed turn', () => {
  it("the caller's signal aborted mid-stream: the turn ends cancelled, the upstream request is closed, the token freed", async () => {
    emulator.addFault({ kind: 'stream_stall', count: 1, afterChunks: 1 });
    supervisor = oneEndpoint();
    const a = supervisor.spawnAgent({ name: 'A', chain: 'main' });
    const controller = new AbortController();
    const stream = a.stream('Stall on me.', { signal: controller.signal });
    const events: StreamEvent[] = [];
    for await (const e of stream) {
      events.push(e);
      if (e.type === 'text') controller.abort();
    }
    expect(events.some((e) => e.type === 'text')).toBe(true);
    const turn = await stream.turn;
    expect(turn.outcome).toBe('cancelled');
    expect(events.at(-1)).toEqual({ type: 'done', turn });
    await waitFor(
      () => emulator.stats().calls.some((c) => c.status === 'stall'),
      'the emulator to see the close',
    );
    await waitFor(() => supervisor!.tokens().held === 0, 'the token to be released');
  });

  it('a turn cancelled while it waits behind another turn of its agent ends cancelled and never goes upstream', async () => {
    supervisor = oneEndpoint();
    const a = supervisor.spawnAgent({ name: 'A', chain: 'main' });
    const first = a.stream('First question', { turnId: 'first' });
    const second = a.stream('Second question', { turnId: 'second' });
    second.cancel();
    const [firstEvents, secondEvents] = await Promise.all([collect(first), collect(second)]);
    expect((await first.turn).outcome).toBe('answered');
    expect(announced(firstEvents)).toBe((await first.turn).answer.text);
    const cancelled = await second.turn;
    expect(cancelled.outcome).toBe('cancelled');
    expect(cancelled.attempts).toBe(0);
    expect(secondEvents).toEqual([{ type: 'done', turn: cancelled }]);
    expect(emulator.stats().calls).toHaveLength(1);
  });

  it('a signal aborted before the stream starts: cancelled at once, nothing sent', async () => {
    supervisor = oneEndpoint();
    const a = supervisor.spawnAgent({ name: 'A', chain: 'main' });
    const stream = a.stream('Never mind', { signal: AbortSignal.abort() });
    const events = await collect(stream);
    const turn = await stream.turn;
    expect(turn.outcome).toBe('cancelled');
    expect(events).toEqual([{ type: 'done', turn }]);
    expect(emulator.stats().calls).toHaveLength(0);
    // The agent is free for the next turn.
    expect((await a.stream('Now then').turn).outcome).toBe('answered');
  });
});
