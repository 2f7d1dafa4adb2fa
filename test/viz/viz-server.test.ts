import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION, agentMachine } from '../../machines/agent.machine.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { maskSecret } from '../../src/redact/secret-scrubber.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import { createLiveSource, type VizLiveSource } from '../../src/viz/live-source.ts';
import type { VizChart } from '../../src/viz/statechart-graph.ts';
import { startVizServer } from '../../src/viz/viz-server.ts';
import { applyEvent, emptyVizState } from '../../src/viz/viz-state.ts';
import type { VizEvent, VizState } from '../../src/viz/viz-state-types.ts';
import { emulatorEndpoint, settle } from '../support/runtime-harness.ts';
import { SONNET_KEY } from './viz-scenario.ts';

const RUN_ID = 'viz-api-1';
const BAD_KEY_MESSAGE = `Incorrect API key provided: ${SONNET_KEY}`;

let emulator: Emulator;
let clock: ManualClock;
let database: BreakwaterDatabase;
let store: RunStore;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 41 }, clock });
  database = await openDatabase({ dataDir: ':memory:' });
  store = createRunStore(database, { clock });
  await store.createRun({
    runId: RUN_ID,
    scenario: 'api',
    totalRounds: 1,
    machineVersion: AGENT_MACHINE_VERSION,
    config: { concurrency: { limit: 3 }, endpoints: [{ id: 'sonnet', apiKey: SONNET_KEY }] },
  });
  const at = clock.now();
  await store.appendEvents(RUN_ID, [
    { seq: 1, at, type: 'agent.state', agent: 'analyst', data: { state: 'queued', previous: 'idle' } },
    {
      seq: 2,
      at: at + 10,
      type: 'agent.state',
      agent: 'analyst',
      data: { state: 'calling', previous: 'queued' },
    },
    { seq: 3, at: at + 20, type: 'policy.log', agent: 'analyst', data: { message: BAD_KEY_MESSAGE } },
    {
      seq: 4,
      at: at + 30,
      type: 'agent.state',
      agent: 'analyst',
      data: { state: 'idle', previous: 'calling' },
    },
  ]);
});

afterAll(async () => {
  await database?.close();
  await emulator?.close();
});

async function get(
  url: string,
): Promise<{ status: number; type: string; text: string; json: () => unknown }> {
  const res = await fetch(url);
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    text,
    json: () => JSON.parse(text),
  };
}

/** Reads server-sent events from a fetch body until `enough` says stop (or the stream ends). */
async function readSse(
  body: ReadableStream<Uint8Array>,
  enough: (messages: { event: string; data: unknown }[]) => boolean,
): Promise<{ messages: { event: string; data: unknown }[]; ended: boolean; raw: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const messages: { event: string; data: unknown }[] = [];
  let buffer = '';
  let raw = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { messages, ended: true, raw };
    const chunk = decoder.decode(value, { stream: true });
    raw += chunk;
    buffer += chunk;
    for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data !== undefined) messages.push({ event, data: JSON.parse(data) });
    }
    if (enough(messages)) {
      reader.releaseLock();
      return { messages, ended: false, raw };
    }
  }
}

describe('startVizServer', () => {
  it('listens on 127.0.0.1 only and serves the page with a same-origin-only policy; JSON errors', async () => {
    const viz = await startVizServer({ port: 0 });
    try {
      expect(viz.url).toBe(`http://127.0.0.1:${viz.port}`);
      const res = await fetch(`${viz.url}/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.headers.get('content-security-policy')).toContain("connect-src 'self'");
      const html = await res.text();
      expect(html).toContain('src="/assets/viz-page.js"');
      expect(html).not.toMatch(/https?:\/\//);
      const script = await get(`${viz.url}/assets/viz-page.js`);
      expect(script.type).toMatch(/^text\/javascript/);
      // The page runs the very reducer the server uses, bundled in.
      expect(script.text).toContain('function applyEvent(');
      expect(script.text).not.toMatch(/^\s*import\s/m);
      expect(script.text).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
      expect((await get(`${viz.url}/assets/viz.css`)).type).toMatch(/^text\/css/);
      const missing = await get(`${viz.url}/api/nothing`);
      expect(missing.status).toBe(404);
      expect(missing.json()).toEqual({ error: 'no API at /api/nothing' });
      expect((await get(`${viz.url}/api/live`)).status).toBe(404);
      expect((await get(`${viz.url}/api/runs`)).status).toBe(404);
      expect((await fetch(`${viz.url}/`, { method: 'POST' })).status).toBe(405);
      expect((await get(`${viz.url}/api/config`)).json()).toEqual({
        live: false,
        liveRunId: null,
        replay: false,
        runId: null,
      });
    } finally {
      await viz.close();
    }
  });

  it('serves the agent statechart from the real machine definition', async () => {
    const viz = await startVizServer({ port: 0 });
    try {
      const chart = (await get(`${viz.url}/api/chart`)).json() as VizChart;
      expect(chart.machine).toBe('agent');
      expect(chart.root.initial).toBe('idle');
      expect(chart.root.children.map((c) => c.key)).toEqual(Object.keys(agentMachine.config.states ?? {}));
      const degraded = chart.root.children.find((c) => c.key === 'degraded')!;
      expect(degraded.initial).toBe('degraded.answering');
      expect(degraded.children.map((c) => c.path)).toEqual([
        'degraded.answering',
        'degraded.resting',
        'degraded.checking',
      ]);
      // The engine call is the state's entry effect (stopped by its exit), not an invoked actor.
      expect(chart.root.children.find((c) => c.key === 'calling')).toMatchObject({
        invokes: [],
        entry: ['startCall'],
      });
      expect(chart.edges).toContainEqual({ source: 'idle', target: 'queued', event: 'ASK', guards: [] });
      expect(chart.root.children.find((c) => c.key === 'queued')!.invokes).toEqual(['acquireToken']);
      expect(chart.edges).toContainEqual({
        source: 'queued',
        target: 'calling',
        event: 'TOKEN.ANSWER',
        guards: ['grantedPrimary'],
      });
      expect(chart.edges).toContainEqual({
        source: 'cooling',
        target: 'queued',
        event: 'WAKE',
        guards: [],
      });
      expect(chart.edges).toContainEqual({
        source: 'degraded.checking',
        target: 'idle',
        event: 'done(checkHealth)',
        guards: ['healthy'],
      });
    } finally {
      await viz.close();
    }
  });

  it('replay APIs read the store: runs, events (afterSeq, untilAt, limit), turns, snapshots; keys masked', async () => {
    const viz = await startVizServer({ store, runId: RUN_ID, port: 0 });
    try {
      expect((await get(`${viz.url}/api/config`)).json()).toMatchObject({ replay: true, runId: RUN_ID });
      const runs = (await get(`${viz.url}/api/runs`)).json() as { runId: string }[];
      expect(runs.map((r) => r.runId)).toContain(RUN_ID);
      const run = await get(`${viz.url}/api/runs/${RUN_ID}`);
      expect(run.text).not.toContain(SONNET_KEY);
      expect(run.text).toContain(maskSecret(SONNET_KEY));
      const page = (await get(`${viz.url}/api/runs/${RUN_ID}/events?afterSeq=1&limit=2`)).json() as {
        seq: number;
      }[];
      expect(page.map((e) => e.seq)).toEqual([2, 3]);
      const start = clock.now();
      const until = (await get(`${viz.url}/api/runs/${RUN_ID}/events?untilAt=${start + 10}`)).json() as {
        seq: number;
      }[];
      expect(until.map((e) => e.seq)).toEqual([1, 2]);
      const all = await get(`${viz.url}/api/runs/${RUN_ID}/events`);
      expect(all.text).not.toContain(SONNET_KEY);
      expect(all.text).toContain('Incorrect API key provided: sk-ant-…');
      expect((await get(`${viz.url}/api/runs/${RUN_ID}/turns?agent=analyst`)).json()).toEqual([]);
      expect((await get(`${viz.url}/api/runs/${RUN_ID}/snapshots?agent=analyst`)).json()).toBeNull();
      expect((await get(`${viz.url}/api/runs/nope`)).status).toBe(404);
      expect((await get(`${viz.url}/api/runs/nope/events`)).status).toBe(404);
      const bad = await get(`${viz.url}/api/runs/${RUN_ID}/events?afterSeq=-1`);
      expect(bad.status).toBe(400);
      expect(bad.json()).toEqual({ error: 'afterSeq must be a non-negative integer' });
    } finally {
      await viz.close();
    }
  });

  it('live: SSE starts with the reducer state, then streams every runtime event; the page folds them to the same state', async () => {
    const supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6', SONNET_KEY)],
        chains: { premium: ['sonnet'] },
      },
      { clock },
    );
    // No clock given: the live source reads the supervisor's own (the manual clock).
    clock.advance(5_000);
    const live = createLiveSource(supervisor, { sampleIntervalMs: 0, runId: RUN_ID });
    const viz = await startVizServer({ live, port: 0 });
    try {
      const analyst = supervisor.spawnAgent({ name: 'analyst', chain: 'premium', tier: 'analysis' });
      const res = await fetch(`${viz.url}/api/live`);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const first = await readSse(res.body!, (m) => m.length >= 1);
      const init = first.messages[0]!;
      expect(init.event).toBe('init');
      const initState = (init.data as { state: VizState; runId: string }).state;
      expect((init.data as { runId: string }).runId).toBe(RUN_ID);
      expect(initState.tokens.limit).toBe(3);
      expect(initState.agents.analyst?.state).toBe('idle');
      expect(initState.endpoints.sonnet?.breaker).toBe('closed');
      expect(JSON.stringify(initState)).not.toContain(SONNET_KEY);

      const turn = await analyst.ask('hello');
      expect(turn.outcome).toBe('answered');
      await settle(() => live.snapshot().agents.analyst?.turns === 1 && live.snapshot().tokens.held === 0);
      const rest = await readSse(res.body!, (m) =>
        m.some((x) => (x.data as RuntimeEvent).type === 'turn.completed'),
      );
      const types = rest.messages.map((m) => (m.data as VizEvent).type);
      expect(types).toContain('token.granted');
      expect(types).toContain('call.attempt');
      expect(types).toContain('turn.completed');
      expect(types).toContain('viz.sample');
      for (const m of rest.messages) expect((m.data as VizEvent).at).toBe(clock.now());
      // The page's fold of init + stream is the server's fold.
      let folded = initState;
      for (const m of rest.messages) folded = applyEvent(folded, m.data as VizEvent);
      const server = live.snapshot();
      expect(folded.agents.analyst!.turns).toBe(1);
      expect(folded.agents.analyst!.segments.map((s) => s.state)).toEqual(
        server.agents.analyst!.segments.map((s) => s.state),
      );
      expect(folded.endpoints.sonnet!.calls).toBe(server.endpoints.sonnet!.calls);

      // Without a store, the agent's turns come from its memory.
      const detail = (await get(`${viz.url}/api/live/agents/analyst`)).json() as {
        turns: { prompt: string; answer: string; endpoint: string; degraded: boolean }[];
        snapshot: { value: string };
      };
      expect(detail.turns).toHaveLength(1);
      expect(detail.turns[0]).toMatchObject({
        prompt: 'hello',
        answer: turn.answer.text,
        endpoint: 'sonnet',
        degraded: false,
      });
      expect(detail.snapshot.value).toBe('idle');
      expect((await get(`${viz.url}/api/live/agents/nobody`)).status).toBe(404);

      // close() ends the open stream.
      const stream = await fetch(`${viz.url}/api/live`);
      const reading = readSse(stream.body!, () => false);
      await viz.close();
      expect((await reading).ended).toBe(true);
    } finally {
      live.close();
      await viz.close();
      await supervisor.stop();
    }
  });

  it('scrubs whatever a live source hands it, and stops when its signal aborts', async () => {
    const listeners = new Set<(e: VizEvent) => void>();
    const leaky: VizLiveSource = {
      snapshot: () => ({
        ...emptyVizState(),
        recent: [{ at: 1, type: 'policy.log', text: BAD_KEY_MESSAGE }],
      }),
      subscribe(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const stop = new AbortController();
    const viz = await startVizServer({ live: leaky, port: 0, signal: stop.signal });
    const res = await fetch(`${viz.url}/api/live`);
    const first = await readSse(res.body!, (m) => m.length >= 1);
    for (const l of listeners)
      l({ type: 'policy.log', at: 2, agent: 'analyst', data: { message: BAD_KEY_MESSAGE } });
    const next = await readSse(res.body!, (m) => m.length >= 1);
    const raw = first.raw + next.raw;
    expect(raw).not.toContain(SONNET_KEY);
    expect(raw.match(/Incorrect API key provided: sk-ant-…/g)).toHaveLength(2);
    stop.abort();
    await viz.close();
    await expect(fetch(`${viz.url}/api/config`)).rejects.toThrow();
    expect(listeners.size).toBe(0);
  });
});
