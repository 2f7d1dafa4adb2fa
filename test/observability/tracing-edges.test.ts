import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

// Review probes (issue 17). Real clock, real HTTP to the emulator.
let emulator: Emulator;
let supervisor: Supervisor | undefined;
const exporter = new InMemorySpanExporter();
const live = new Set<string>();
const tracker: SpanProcessor = {
  onStart: (s) => void live.add(s.spanContext().spanId),
  onEnd: (s) => void live.delete(s.spanContext().spanId),
  forceFlush: async () => {},
  shutdown: async () => {},
};
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter), tracker] });
const tracer = provider.getTracer('review17');
const cm = new AsyncLocalStorageContextManager();

beforeAll(async () => {
  context.setGlobalContextManager(cm.enable());
  emulator = await startEmulator({ profile: { seed: 3, latency: { minMs: 0, maxMs: 0 } } });
});
afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
  emulator.clearFaults();
  emulator.reset();
  exporter.reset();
  live.clear();
});
afterAll(async () => {
  await emulator.close();
  context.disable();
});

function make(): Supervisor {
  return createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6'),
        emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini'),
      ],
      chains: { slow: ['primary'], fast: ['backup'], both: ['primary', 'backup'] },
      concurrency: { limit: 4 },
    },
    { tracing: { tracer } },
  );
}
const turnsOf = (spans: readonly ReadableSpan[]) => spans.filter((s) => s.name.startsWith('invoke_agent '));
const attemptsOf = (spans: readonly ReadableSpan[]) => spans.filter((s) => s.name.startsWith('chat '));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('review17 tracing probes', () => {
  it('P1: an agent stopped mid-call and respawned under the same name: the old call does not land in the new turn', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' }, count: 1 });
    supervisor = make();
    const first = supervisor.spawnAgent({ name: 'ana', chain: 'slow' });
    const p1 = first.ask('first question');
    await waitFor(() => emulator.stats().held === 1, 'the hanging call');
    first.stop();
    const second = supervisor.spawnAgent({ name: 'ana', chain: 'fast' });
    const t2 = await second.ask('second question');
    const t1 = await p1;
    // The cut call's spans end when its socket is gone: wait for both turns' spans, however slow the machine.
    await waitFor(() => turnsOf(exporter.getFinishedSpans()).length >= 2, 'both turn spans to end');
    expect(t1.outcome).toBe('cancelled');
    expect(t2.outcome).toBe('answered');
    const spans = exporter.getFinishedSpans();
    const turns = turnsOf(spans);
    expect(turns).toHaveLength(2);
    const secondTurn = turns.find((t) => t.attributes['breakwater.turn.outcome'] === 'answered')!;
    const underSecond = attemptsOf(spans).filter(
      (a) => a.parentSpanContext?.spanId === secondTurn.spanContext().spanId,
    );
    // The second turn only ever called `backup`.
    expect(underSecond.map((a) => a.attributes['breakwater.endpoint.id'])).toEqual(['backup']);
  });

  it('P2: an attempt cut by agent.stop() still gets a span (the emulator saw the call)', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' }, count: 1 });
    supervisor = make();
    const a = supervisor.spawnAgent({ name: 'bo', chain: 'slow' });
    const p = a.ask('q');
    await waitFor(() => emulator.stats().held === 1, 'the hanging call');
    a.stop();
    await p;
    await waitFor(
      () =>
        emulator.stats().inFlight === 0 &&
        attemptsOf(exporter.getFinishedSpans()).length >= emulator.stats().totalCalls,
      'the cut attempt to end at the emulator and its span',
    );
    const spans = exporter.getFinishedSpans();
    expect(turnsOf(spans)).toHaveLength(1);
    expect(attemptsOf(spans)).toHaveLength(emulator.stats().totalCalls);
  });

  it('P3: no span is left open (no memory kept) after queued-cancel, stop mid-turn and supervisor stop(signal)', async () => {
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' } });
    supervisor = make();
    const a = supervisor.spawnAgent({ name: 'c1', chain: 'slow' });
    const ac = new AbortController();
    const pa = a.ask('running');
    const pq = a.ask('queued', { signal: ac.signal });
    ac.abort();
    expect((await pq).outcome).toBe('cancelled');
    const b = supervisor.spawnAgent({ name: 'c2', chain: 'slow' });
    const pb = b.ask('running b');
    await waitFor(() => emulator.stats().held >= 2, 'two hanging calls');
    b.stop();
    await pb;
    const stop = new AbortController();
    const stopping = supervisor.stop({ signal: stop.signal });
    stop.abort();
    await stopping;
    supervisor = undefined;
    await pa;
    // Spans still open now end with their calls' sockets: wait until none is (a hang would time out here).
    await waitFor(() => live.size === 0, 'every span to end');
    expect(live.size).toBe(0);
    // The running turn's span (not the queued one's) reflects the running turn.
    const turns = turnsOf(exporter.getFinishedSpans());
    expect(turns).toHaveLength(2);
  });

  it('P4: captureContent off — a degraded turn and a failed turn carry no prompt text', async () => {
    supervisor = make();
    const a = supervisor.spawnAgent({ name: 'd', chain: 'both' });
    const PROMPT = 'customer 4417 address is 12 Secret Lane';
    const ok = await a.ask(PROMPT);
    expect(['answered', 'fallback']).toContain(ok.outcome);
    emulator.addFault({ kind: 'server_error_empty', match: {} });
    const t = await a.ask(PROMPT);
    const spans = exporter.getFinishedSpans();
    const dump = JSON.stringify(
      spans.map((s) => ({ n: s.name, a: s.attributes, e: s.events, st: s.status })),
    );
    expect(t.outcome).not.toBe('answered');
    expect(dump).not.toContain('Secret Lane');
    expect(dump).not.toContain(ok.answer.text.slice(0, 40));
  });

  it('P5: a HALF-OPEN probe span is not parented to the (ended) request span of whoever tripped the breaker', async () => {
    emulator.addFault({ kind: 'connection_reset', match: { flavor: 'anthropic' }, count: 1 });
    supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6'),
          emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini'),
        ],
        chains: { both: ['primary', 'backup'] },
        breaker: { openMs: 300, consecutiveToOpen: 1 },
      } as never,
      { tracing: { tracer } },
    );
    const a = supervisor.spawnAgent({ name: 'e', chain: 'both' });
    const request = tracer.startSpan('user-request-A');
    await context.with(trace.setSpan(context.active(), request), async () => {
      for (let i = 0; i < 3; i++) await a.ask(`q${i}`);
    });
    request.end();
    console.log(
      'P5 breaker',
      JSON.stringify(supervisor.health().map((h) => [h.id, h.breaker])),
      emulator.stats().totalCalls,
    );
    await sleep(400);
    // A later ask from another context (no span active) is what wants the probe.
    await a.ask('later');
    await waitFor(
      () => exporter.getFinishedSpans().some((s) => s.attributes['breakwater.probe'] === true),
      'a probe span',
      10_000,
    );
    const probe = exporter.getFinishedSpans().find((s) => s.attributes['breakwater.probe'] === true)!;
    expect(probe.parentSpanContext?.spanId).not.toBe(request.spanContext().spanId);
    expect(probe.spanContext().traceId).not.toBe(request.spanContext().traceId);
  });

  it('P6: an agent restored mid-turn (cooling): the restored turn and its upstream attempt get spans', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'openai' }, count: 1, retryAfterMs: 800 });
    const cfg = () => ({
      endpoints: [emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini')],
      chains: { fast: ['backup'] },
      agentDefaults: { maxWaitMs: 30_000 },
    });
    const first = createSupervisor(cfg(), { tracing: false, keepAlive: false });
    const kai = first.spawnAgent({ name: 'kai', chain: 'fast' });
    void kai.ask('first');
    await waitFor(() => kai.state() === 'cooling', 'cooling');
    const snapshot = kai.persistedSnapshot();
    await first.stop({ signal: AbortSignal.abort() });
    const callsBefore = emulator.stats().totalCalls;
    supervisor = createSupervisor(cfg(), { tracing: { tracer }, keepAlive: false });
    const again = supervisor.spawnAgent({ name: 'kai', chain: 'fast' }, { snapshot });
    const t = await again.ask('second');
    expect(t.outcome).toBe('answered');
    await waitFor(
      () =>
        turnsOf(exporter.getFinishedSpans()).length >= 2 &&
        attemptsOf(exporter.getFinishedSpans()).length >= emulator.stats().totalCalls - callsBefore,
      'the restored turn and its attempt spans to end',
    );
    const spans = exporter.getFinishedSpans();
    const callsAfter = emulator.stats().totalCalls - callsBefore;
    console.log(
      'P6',
      'turn spans',
      turnsOf(spans).length,
      'attempt spans',
      attemptsOf(spans).length,
      'emulator calls after restore',
      callsAfter,
    );
    expect(attemptsOf(spans)).toHaveLength(callsAfter);
    expect(turnsOf(spans)).toHaveLength(2);
  });
});
