import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { createLiveSource } from '../../src/viz/live-source.ts';
import { startVizServer } from '../../src/viz/viz-server.ts';
import type { VizEvent } from '../../src/viz/viz-state-types.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * The compact live feed: samples are deltas (an unchanged runtime sends an empty sample), the stream is
 * gzip-compressed for a client that asks for it, and closing the server delivers everything published
 * before it (the run's end and report), even when the sampler fires during the close.
 */

const clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
let emulator: Emulator;
let supervisor: Supervisor;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 7 }, clock });
  supervisor = createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'flash', 'gemini', 'gemini-2.5-flash')],
      chains: { main: ['flash'] },
    },
    { clock },
  );
  for (const name of ['a1', 'a2', 'a3']) supervisor.spawnAgent({ name, chain: 'main', tier: 'ops' });
});

afterAll(async () => {
  await supervisor?.stop();
  await emulator?.close();
});

/** Reads an SSE body to its end: the messages, by event name. */
async function readAll(body: ReadableStream<Uint8Array>): Promise<{ event: string; data: unknown }[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return text
    .split('\n\n')
    .filter((b) => /^data: /m.test(b))
    .map((b) => ({
      event: /^event: (.*)$/m.exec(b)?.[1] ?? 'message',
      data: JSON.parse(/^data: (.*)$/m.exec(b)![1]!),
    }));
}

describe('live feed', () => {
  it('sends delta samples: an unchanged runtime adds nothing but the instant', () => {
    const live = createLiveSource(supervisor, { clock, sampleIntervalMs: 0 });
    const seen: VizEvent[] = [];
    const off = live.subscribe((e) => seen.push(e));
    live.snapshot();
    live.snapshot();
    off();
    live.close();
    expect(seen.map((e) => e.type)).toEqual(['viz.sample', 'viz.sample']);
    for (const e of seen) expect(e.data).toEqual({});
  });

  it('gzip: everything published before close arrives, the stream ends cleanly, and late samples are not written', async () => {
    // A sampler every 5 ms keeps firing through the close, as a run's does.
    const live = createLiveSource(supervisor, { clock, sampleIntervalMs: 5 });
    const viz = await startVizServer({ live, port: 0, flushIntervalMs: 20 });
    try {
      const res = await fetch(`${viz.url}/api/live`, { headers: { 'accept-encoding': 'gzip' } });
      expect(res.headers.get('content-encoding')).toBe('gzip');
      const reading = readAll(res.body!);
      for (let i = 0; i < 500; i++)
        live.publish({ type: 'policy.log', at: clock.now(), agent: 'a1', data: { message: `line ${i}` } });
      live.publish({ type: 'run.finished', at: clock.now(), data: { runId: 'r', status: 'completed' } });
      live.publish({ type: 'viz.report', at: clock.now(), data: { status: 'completed', checks: [] } });
      await new Promise((r) => setTimeout(r, 30));
      await viz.close();
      const messages = await reading;
      const types = messages
        .map((m) => (m.data as { type?: string }).type ?? m.event)
        .filter((t) => t !== 'viz.sample');
      expect(types.filter((t) => t === 'policy.log')).toHaveLength(500);
      expect(types.slice(-2)).toEqual(['run.finished', 'viz.report']);
      // What went on the wire is compressed: far less than the JSON it carries.
      const json = messages.reduce((n, m) => n + JSON.stringify(m.data).length, 0);
      expect(viz.stats().liveBytes).toBeLessThan(json / 3);
    } finally {
      live.close();
      await viz.close();
    }
  });
});
