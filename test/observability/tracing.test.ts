import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

// Tracing through the real OpenTelemetry SDK (in-memory exporter) over real HTTP to the emulator.
let emulator: Emulator;
let supervisor: Supervisor | undefined;
let clock: ManualClock;
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('breakwater-test');
const contextManager = new AsyncLocalStorageContextManager();
const PRIMARY_KEY = 'sk-ant-canary-primary-7Qz9XfK2LmN4pR8s';
const BACKUP_KEY = 'sk-canary-backup-3Hv6TgY1WcB5nJ0d';

beforeAll(async () => {
  context.setGlobalContextManager(contextManager.enable());
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 5, latency: { minMs: 0, maxMs: 0 } }, clock });
});
afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
  emulator.clearFaults();
  emulator.reset();
  exporter.reset();
});
afterAll(async () => {
  await emulator.close();
  context.disable();
});

function storm(options: { captureContent?: boolean } = {}): Supervisor {
  return createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6', PRIMARY_KEY),
        emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini', BACKUP_KEY),
      ],
      chains: { premium: ['primary', 'backup'] },
      concurrency: { limit: 2 },
    },
    { clock, tracing: { tracer, ...options } },
  );
}

const byName = (spans: readonly ReadableSpan[], prefix: string) =>
  spans.filter((s) => s.name.startsWith(prefix));
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('OpenTelemetry spans of turns and attempts (GenAI conventions)', () => {
  it('a failed-over turn: turn span → attempt spans, the 429 with its error.type, the fallback with usage', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
    supervisor = storm();
    const agents = ['kai', 'yuna', 'rex'].map((name) =>
      supervisor!.spawnAgent({ name, chain: 'premium', tier: 'analysis' }),
    );
    const turns = await Promise.all(agents.map((a) => a.ask(`status of ${a.name}`)));
    expect(turns.every((t) => t.outcome === 'fallback')).toBe(true);

    const spans = exporter.getFinishedSpans();
    const turnSpans = byName(spans, 'invoke_agent ');
    expect(turnSpans.map((s) => s.attributes['gen_ai.agent.name']).sort()).toEqual(['kai', 'rex', 'yuna']);
    const attempts = byName(spans, 'chat ');
    // Every attempt hangs under its turn, and the emulator saw exactly as many calls as there are attempt spans.
    const stats = emulator.stats();
    expect(attempts).toHaveLength(stats.totalCalls);
    for (const a of attempts) expect(turnSpans.map((t) => t.spanContext().spanId)).toContain(parentOf(a));

    const failed = attempts.filter((a) => a.attributes['error.type'] !== undefined);
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) {
      expect(f.attributes['error.type']).toBe('rate_limited');
      expect(f.attributes['gen_ai.provider.name']).toBe('anthropic');
      expect(f.attributes['gen_ai.request.model']).toBe('claude-sonnet-4-6');
      expect(f.attributes['breakwater.endpoint.id']).toBe('primary');
      expect(f.attributes['breakwater.retry_after_ms']).toBe(30_000);
      expect(f.attributes['http.response.status_code']).toBe(429);
      expect(f.status.code).toBe(SpanStatusCode.ERROR);
    }
    const ok = attempts.filter((a) => a.attributes['error.type'] === undefined);
    expect(ok).toHaveLength(3);
    for (const s of ok) {
      expect(s.attributes['gen_ai.operation.name']).toBe('chat');
      expect(s.attributes['gen_ai.provider.name']).toBe('openai');
      expect(s.attributes['gen_ai.response.model']).toBe('gpt-4o-mini');
      expect(s.attributes['breakwater.chain.position']).toBe(1);
      expect(Number(s.attributes['gen_ai.usage.input_tokens'])).toBeGreaterThan(0);
      expect(Number(s.attributes['gen_ai.usage.output_tokens'])).toBeGreaterThan(0);
    }
    for (const t of turnSpans) {
      expect(t.attributes['breakwater.turn.outcome']).toBe('fallback');
      expect(t.attributes['breakwater.tier']).toBe('analysis');
      expect(t.attributes['breakwater.endpoint.id']).toBe('backup');
      expect(t.events.map((e) => e.name)).toContain('breakwater.fallback');
    }
    // No key, and (content capture off) no prompt or answer, anywhere in the spans.
    const dump = JSON.stringify(
      spans.map((s) => ({ a: s.attributes, e: s.events, st: s.status, n: s.name })),
    );
    expect(dump).not.toContain(PRIMARY_KEY);
    expect(dump).not.toContain(BACKUP_KEY);
    expect(dump).not.toContain('status of');
    expect(dump).not.toContain(turns[0]!.answer.text);
  });

  it('the turn span is a child of the span active where ask() was called; content only when asked for', async () => {
    supervisor = storm({ captureContent: true });
    const agent = supervisor.spawnAgent({ name: 'miso', chain: 'premium', tier: 'analysis' });
    const outer = tracer.startSpan('handle-request');
    const turn = await context.with(trace.setSpan(context.active(), outer), () =>
      agent.ask('price of item 7'),
    );
    outer.end();
    expect(turn.outcome).toBe('answered');
    const spans = exporter.getFinishedSpans();
    const turnSpan = byName(spans, 'invoke_agent ')[0]!;
    expect(parentOf(turnSpan)).toBe(outer.spanContext().spanId);
    const content = (key: string) => JSON.parse(String(turnSpan.attributes[key]))[0].parts[0].content;
    expect(content('gen_ai.input.messages')).toBe('price of item 7');
    expect(content('gen_ai.output.messages')).toBe(turn.answer.text);
    const dump = JSON.stringify(spans.map((s) => s.attributes));
    expect(dump).not.toContain(PRIMARY_KEY);
  });

  it('cooling shows as a span event on the waiting turn', async () => {
    emulator.addFault({ kind: 'rate_limit', match: {}, retryAfterMs: 2_000, count: 2 });
    supervisor = storm();
    const agent = supervisor.spawnAgent({ name: 'dani', chain: 'premium', tier: 'analysis' });
    const pending = agent.ask('queue depth?');
    // Both endpoints answer 429 once: the agent cools until the earliest Retry-After, then succeeds.
    // The project's bounded poll (20 s of real time): a loaded machine only makes it wait longer.
    await waitFor(() => agent.state() === 'cooling', 'the agent cooling');
    clock.advance(2_000);
    const turn = await pending;
    expect(['answered', 'fallback']).toContain(turn.outcome);
    const turnSpan = byName(exporter.getFinishedSpans(), 'invoke_agent ')[0]!;
    expect(turnSpan.events.map((e) => e.name)).toContain('breakwater.cooling');
  });

  it('the call log lines carry the trace and span ids of their turn', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (l: string) => lines.push(l) } });
    supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini', BACKUP_KEY)],
        chains: { premium: ['backup'] },
      },
      { clock, logger, tracing: { tracer } },
    );
    await supervisor.spawnAgent({ name: 'juno', chain: 'premium' }).ask('blast radius?');
    const turnSpan = byName(exporter.getFinishedSpans(), 'invoke_agent ')[0]!;
    const calls = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'call');
    expect(calls).toHaveLength(1);
    expect(calls[0].trace_id).toBe(turnSpan.spanContext().traceId);
    expect(calls[0].span_id).toBe(turnSpan.spanContext().spanId);
  });

  it('with tracing: false, nothing is recorded', async () => {
    supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini', BACKUP_KEY)],
        chains: { premium: ['backup'] },
      },
      { clock, tracing: false },
    );
    const turn = await supervisor.spawnAgent({ name: 'hana', chain: 'premium' }).ask('hello');
    expect(turn.outcome).toBe('answered');
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});
