import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVirtualClock, type VirtualClock } from '../../src/clock/virtual-clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFaultKind, EmulatorFlavor } from '../../src/emulator/emulator-types.ts';
import type { Usage } from '../../src/core/engine-types.ts';
import { createBreakwaterMetrics } from '../../src/observability/prometheus-metrics.ts';
import { formatUsageSummary, summarizeUsage } from '../../src/report/usage-summary.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { Turn } from '../../src/core/turn.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * A turn's usage is the sum over its calls (issue 31, hostile review). A call refused with an HTTP error status
 * (429, 5xx, 4xx) was billed nothing: a reported 0. A call cut after it was sent (a stall, a dropped connection, a
 * stream cut) without usage is unknown: its counts are not known, breakwater's estimate is kept apart. A turn with
 * no call at all is a reported 0. So a degraded turn whose calls stalled is unknown, not a measured 0; and a streamed
 * turn cut on its primary and answered by its backup carries the backup's reported counts, flagged 'partial', the cut
 * call's estimate apart. Checked in the turn, its span, the Prometheus counters and the report's summary. Real SDKs
 * over real HTTP against the emulator, on one virtual clock (no deadline or backoff is waited out in real time).
 */

const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
  'turn-usage-sum',
);
const DEADLINE_MS = 2_000;
let emulator: Emulator;
let clock: VirtualClock;

beforeAll(async () => {
  clock = createVirtualClock({ origin: Date.parse('2026-03-02T09:00:00+09:00') });
  emulator = await startEmulator({
    profile: { seed: 33, latency: { minMs: 0, maxMs: 0 }, streamChunkChars: 12 },
    clock,
  });
});
afterAll(async () => {
  await emulator.close();
  clock.stop();
});

interface Outcome {
  readonly turn: Turn;
  /** The call records of the turn's agent (probes left out), in order. */
  readonly calls: readonly Extract<RuntimeEvent, { type: 'call.attempt' }>[];
  readonly span: ReadableSpan;
  readonly metrics: string;
}

/** One turn of a fresh runtime over `primary` → `backup`, with `fault` on the primary's key (and the backup's). */
async function oneTurn(options: {
  flavor: EmulatorFlavor;
  model: string;
  primary: { kind: EmulatorFaultKind; afterChunks?: number };
  backup?: { kind: EmulatorFaultKind };
  stream: boolean;
  tag: string;
}): Promise<Outcome> {
  exporter.reset();
  emulator.clearFaults();
  const key = (id: string) => `sk-${options.tag}-${id}-000000000000001`;
  const deadlines = { headersTimeoutMs: DEADLINE_MS, idleTimeoutMs: DEADLINE_MS };
  const supervisor = createSupervisor(
    {
      endpoints: ['primary', 'backup'].map((id) =>
        emulatorEndpoint(emulator, id, options.flavor, options.model, key(id), deadlines),
      ),
      chains: { main: ['primary', 'backup'] },
      concurrency: { limit: 2 },
    },
    { clock, tracing: { tracer } },
  );
  const metrics = createBreakwaterMetrics(supervisor);
  const calls: Extract<RuntimeEvent, { type: 'call.attempt' }>[] = [];
  const off = supervisor.subscribeEvents((e) => {
    if (e.type === 'call.attempt' && !e.data.probe) calls.push(e);
  });
  try {
    emulator.addFault({ ...options.primary, match: { key: key('primary') } });
    if (options.backup) emulator.addFault({ ...options.backup, match: { key: key('backup') } });
    // One attempt per endpoint: the turn tries each once and then answers degraded (no wait for probes).
    const agent = supervisor.spawnAgent({ name: 'Kai', chain: 'main', maxAttempts: 1 });
    let turn: Turn;
    if (!options.stream) turn = await agent.ask('What moved EURUSD overnight?');
    else {
      const stream = agent.stream('What moved EURUSD overnight?');
      for await (const _ of stream);
      turn = await stream.turn;
    }
    off();
    const text = await metrics.registry.metrics();
    await supervisor.stop();
    const span = exporter.getFinishedSpans().find((s) => s.name === 'invoke_agent Kai');
    if (!span) throw new Error('no span of the turn');
    return { turn, calls, span, metrics: text };
  } finally {
    off();
    metrics.detach();
    await supervisor.stop();
  }
}

/** A Prometheus counter's value for one endpoint and type (undefined: no such series). */
function counter(text: string, name: string, endpoint: string, type: string): number | undefined {
  const m = new RegExp(`^breakwater_${name}\\{endpoint="${endpoint}",type="${type}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return m ? Number(m[1]) : undefined;
}

const usageOf = (c: Outcome['calls'][number]): Usage | undefined => c.data.usage;

describe('a degraded turn whose calls were sent', () => {
  it.each([
    { name: 'both stall after their headers', kind: 'stall_after_headers' as EmulatorFaultKind },
    { name: 'both hang before any header', kind: 'hang_before_headers' as EmulatorFaultKind },
  ])('$name: its usage is unknown (estimated apart), never a reported 0', async ({ kind }) => {
    const o = await oneTurn({
      flavor: 'openai',
      model: 'gpt-4o-mini',
      primary: { kind },
      backup: { kind },
      stream: false,
      tag: `deg-${kind.slice(0, 5)}`,
    });
    expect(o.turn).toMatchObject({ outcome: 'degraded', attempts: 2 });
    expect(o.turn.faults.map((f) => f.kind)).toEqual(['timeout', 'timeout']);
    expect(o.turn.usage).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });
    expect(o.turn.usage.estimated?.inputTokens).toBeGreaterThan(0);
    // The span: no gen_ai.usage.* (nothing was reported), the flag says unknown.
    expect(o.span.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
    expect(o.span.attributes['gen_ai.usage.output_tokens']).toBeUndefined();
    expect(o.span.attributes['breakwater.usage.source']).toBe('unknown');
    // Metrics: each cut call counted as unreported, nothing in the measured counter.
    for (const endpoint of ['primary', 'backup']) {
      expect(counter(o.metrics, 'upstream_tokens_total', endpoint, 'input')).toBeUndefined();
      expect(counter(o.metrics, 'upstream_usage_unreported_total', endpoint, 'input')).toBe(1);
    }
    // The report: the turn is counted as not reported.
    const summary = summarizeUsage([{ usage: o.turn.usage }]);
    expect(summary).toMatchObject({ turns: 1, reportedTurns: 0, unknownTurns: 1 });
    expect(summary.input).toEqual({
      reported: 0,
      unreportedTurns: 1,
      estimated: o.turn.usage.estimated?.inputTokens,
    });
    expect(formatUsageSummary(summary)).toContain('1 turn not wholly reported');
  });

  it('refused with HTTP error statuses (500, 429): a reported 0, which the span carries as measured', async () => {
    const o = await oneTurn({
      flavor: 'openai',
      model: 'gpt-4o-mini',
      primary: { kind: 'server_error_empty' },
      backup: { kind: 'rate_limit_no_retry_after' },
      stream: false,
      tag: 'deg-http',
    });
    expect(o.turn).toMatchObject({ outcome: 'degraded', attempts: 2 });
    expect(o.turn.faults.every((f) => f.status !== undefined)).toBe(true);
    expect(o.turn.usage).toEqual({ inputTokens: 0, outputTokens: 0, source: 'reported' });
    expect(o.span.attributes['gen_ai.usage.input_tokens']).toBe(0);
    expect(o.span.attributes['breakwater.usage.source']).toBe('reported');
    expect(summarizeUsage([{ usage: o.turn.usage }])).toMatchObject({ reportedTurns: 1, unknownTurns: 0 });
  });

  it('one refused (429), one stalled: unknown, the refused call adding a known 0', async () => {
    const o = await oneTurn({
      flavor: 'openai',
      model: 'gpt-4o-mini',
      primary: { kind: 'rate_limit_no_retry_after' },
      backup: { kind: 'stall_after_headers' },
      stream: false,
      tag: 'deg-mixed',
    });
    expect(o.turn).toMatchObject({ outcome: 'degraded', attempts: 2 });
    expect(o.turn.usage).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });
    expect(counter(o.metrics, 'upstream_usage_unreported_total', 'backup', 'input')).toBe(1);
    expect(counter(o.metrics, 'upstream_usage_unreported_total', 'primary', 'input')).toBeUndefined();
  });
});

describe.each([
  { flavor: 'openai' as EmulatorFlavor, model: 'gpt-4o-mini', mode: 'restart' },
  { flavor: 'anthropic' as EmulatorFlavor, model: 'claude-sonnet-4-6', mode: 'continuation' },
])('a stream cut mid-way on the primary of $flavor, answered by the backup ($mode)', ({ flavor, model }) => {
  it("carries the backup's reported counts, flagged partial, the cut call's estimate apart", async () => {
    const o = await oneTurn({
      flavor,
      model,
      primary: { kind: 'stream_cut', afterChunks: 1 },
      stream: true,
      tag: `cut-${flavor.slice(0, 4)}`,
    });
    expect(o.turn).toMatchObject({ outcome: 'fallback', endpointId: 'backup', attempts: 2 });
    expect(o.turn.faults.map((f) => [f.kind, f.endpointId])).toEqual([['network', 'primary']]);
    const backup = o.calls.find((c) => c.endpoint === 'backup' && c.data.outcome === 'ok');
    const reported = usageOf(backup!);
    // The backup's own record: what its provider reported, nothing of the cut call mixed in.
    expect(reported).toMatchObject({ source: 'reported' });
    expect(reported!.inputTokens).toBeGreaterThan(0);
    const cut = o.calls.find((c) => c.endpoint === 'primary');
    expect(usageOf(cut!)).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });

    expect(o.turn.usage).toMatchObject({
      inputTokens: reported!.inputTokens,
      outputTokens: reported!.outputTokens,
      source: 'partial',
    });
    expect(o.turn.usage.estimated?.inputTokens).toBeGreaterThan(0);
    // The cut call had written one 12-character chunk: at least 3 tokens by characters ÷ 4.
    expect(o.turn.usage.estimated?.outputTokens).toBeGreaterThanOrEqual(3);

    // The span: the measured names only for complete counts; the reported part and the estimate apart.
    expect(o.span.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
    expect(o.span.attributes['breakwater.usage.source']).toBe('partial');
    expect(o.span.attributes['breakwater.usage.reported_input_tokens']).toBe(reported!.inputTokens);
    expect(o.span.attributes['breakwater.usage.reported_output_tokens']).toBe(reported!.outputTokens);
    expect(o.span.attributes['breakwater.usage.estimated_input_tokens']).toBe(
      o.turn.usage.estimated?.inputTokens,
    );

    // Metrics: the backup's reported tokens measured, the cut call unreported on the primary.
    expect(counter(o.metrics, 'upstream_tokens_total', 'backup', 'input')).toBe(reported!.inputTokens);
    expect(counter(o.metrics, 'upstream_tokens_total', 'backup', 'output')).toBe(reported!.outputTokens);
    expect(counter(o.metrics, 'upstream_usage_unreported_total', 'primary', 'output')).toBe(1);

    // The report: the reported part summed as reported, the turn counted as not fully reported.
    const summary = summarizeUsage([{ usage: o.turn.usage }]);
    expect(summary).toMatchObject({ turns: 1, reportedTurns: 0, unknownTurns: 1 });
    expect(summary.input).toEqual({
      reported: reported!.inputTokens,
      unreportedTurns: 1,
      estimated: o.turn.usage.estimated?.inputTokens,
    });
  });
});
