import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EngineResult } from '../../src/core/engine-types.ts';
import type { CallMemo } from '../../src/core/call-memo.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { StreamEvent } from '../../src/runtime/turn-stream.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * Durable streamed turns: a streamed answer is memoized once complete (a continued one as its whole text), a resumed
 * run reads it back without going upstream; a stream cut by a crash left nothing memoized, so the resumed run asks
 * again and stores the completed answer. Real SDKs, real HTTP, the emulator; the memo is a Map behind CallMemo.
 */

const KEY = 'sk-stream-memo-000000000001';
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 4, streamChunkChars: 10 } });
});
afterAll(() => emulator.close());

function mapMemo(): CallMemo & { entries: Map<string, unknown> } {
  const entries = new Map<string, unknown>();
  return {
    entries,
    recall: async (key) => entries.get(key),
    remember: async (key, value) => {
      entries.set(key, value);
    },
  };
}

const runtime = (memo: CallMemo) =>
  createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6', KEY)],
      chains: { main: ['primary'] },
    },
    { memo },
  );

async function drain(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const e of stream) events.push(e);
  return events;
}

describe('streamed turns and the call memo', () => {
  it('a continued stream is memoized whole; the resumed run replays it without an upstream call', async () => {
    emulator.addFault({ kind: 'stream_cut', match: { key: KEY }, count: 1, afterChunks: 2 });
    const memo = mapMemo();
    const first = runtime(memo);
    const stream = first
      .spawnAgent({ name: 'Kai', chain: 'main' })
      .stream('Report, please.', { key: 'run-a:1' });
    await drain(stream);
    const turn = await stream.turn;
    await first.stop();
    // The emulator counts a call when it ends; read the count once both calls have left.
    await waitFor(() => emulator.stats().inFlight === 0, 'both calls to end at the emulator');
    expect(turn.faults.map((f) => f.kind)).toEqual(['network']);
    const stored = memo.entries.get('run-a:1:call0') as EngineResult;
    expect(stored.text).toBe(turn.answer.text);

    const calls = emulator.stats().totalCalls;
    const resumed = runtime(memo);
    const again = resumed
      .spawnAgent({ name: 'Kai', chain: 'main' })
      .stream('Report, please.', { key: 'run-a:1' });
    const events = await drain(again);
    const replay = await again.turn;
    await resumed.stop();
    expect(emulator.stats().totalCalls).toBe(calls);
    expect(replay.attempts).toBe(0);
    expect(replay.answer.text).toBe(turn.answer.text);
    expect(events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text)).toEqual([
      turn.answer.text,
    ]);
  });

  it('a stream cut by a crash leaves nothing memoized: the resumed run asks again and stores the completed turn', async () => {
    emulator.addFault({ kind: 'stream_stall', match: { key: KEY }, count: 1, afterChunks: 1 });
    const memo = mapMemo();
    const crashed = runtime(memo);
    const stream = crashed
      .spawnAgent({ name: 'Kai', chain: 'main' })
      .stream('Crash mid-way.', { key: 'run-b:1' });
    for await (const e of stream) if (e.type === 'text') break;
    // The process "dies" with the stream half-read: everything in flight is cancelled.
    await crashed.stop({ signal: AbortSignal.abort() });
    expect(memo.entries.has('run-b:1:call0')).toBe(false);
    // The emulator counts a call when it ends, and it sees the stalled stream end only when the closed socket reaches
    // it: read the count after that, or the crashed call is counted as the resumed run's (4 calls where 3 were made).
    await waitFor(() => emulator.stats().inFlight === 0, 'the crashed stream to end at the emulator');

    const calls = emulator.stats().totalCalls;
    const resumed = runtime(memo);
    const again = resumed
      .spawnAgent({ name: 'Kai', chain: 'main' })
      .stream('Crash mid-way.', { key: 'run-b:1' });
    await drain(again);
    const turn = await again.turn;
    await resumed.stop();
    expect(turn.outcome).toBe('answered');
    expect(emulator.stats().totalCalls).toBe(calls + 1);
    expect((memo.entries.get('run-b:1:call0') as EngineResult).text).toBe(turn.answer.text);
  });
});
