import type OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { openaiClient, rejectionOf } from './sdk-clients.ts';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

/** Waits for real I/O only (requests arriving, sockets closing), bounded far above any load. */
const until = (check: () => boolean) => waitFor(check, 'the emulator to see the requests');

describe('local servers under load', () => {
  it('vLLM queues beyond max_num_seqs instead of rejecting: latency grows, nothing fails', async () => {
    const clock = createManualClock(0);
    emu = await startEmulator({
      clock,
      profile: { latency: { minMs: 1_000, maxMs: 1_000 }, servers: { vllm: { maxNumSeqs: 1 } } },
    });
    const client = openaiClient(emu, 'vllm');
    const calls = Promise.all(
      [0, 1, 2].map((i) =>
        client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `${i}` }] }),
      ),
    );
    // All three must be in before simulated time moves, or a late one would start its wait later.
    await until(() => emu?.stats().inFlight === 3);
    for (let i = 0; i < 3; i++) {
      await until(() => clock.pending() === 1);
      clock.advance(1_000);
    }
    await calls;
    const stats = emu.stats();
    expect(stats.byStatus).toEqual({ '200': 3 });
    expect(stats.calls.map((c) => c.endedAt - c.startedAt).sort()).toEqual([1_000, 2_000, 3_000]);
  });

  it('Ollama rejects with 503 "server busy" once OLLAMA_MAX_QUEUE requests wait', async () => {
    const clock = createManualClock(0);
    emu = await startEmulator({
      clock,
      profile: {
        latency: { minMs: 1_000, maxMs: 1_000 },
        servers: { ollama: { numParallel: 1, maxQueue: 1 } },
      },
    });
    const client = openaiClient(emu, 'ollama');
    const call = () =>
      client.chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'x' }] });
    const running = call();
    await until(() => clock.pending() === 1);
    const queued = call();
    await until(() => emu!.stats().maxInFlight === 2);
    const e = (await rejectionOf(call())) as InstanceType<typeof OpenAI.InternalServerError>;
    expect(e.status).toBe(503);
    expect(e.type).toBe('api_error');
    expect(e.message).toBe('503 server busy, please try again.  maximum pending requests exceeded');
    clock.advance(1_000);
    await until(() => clock.pending() === 1);
    clock.advance(1_000);
    await expect(Promise.all([running, queued])).resolves.toHaveLength(2);
  });
});
