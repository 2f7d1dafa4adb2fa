import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVirtualClock, type VirtualClock } from '../../src/clock/virtual-clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFlavor } from '../../src/emulator/emulator-types.ts';
import { createBreakwaterMetrics } from '../../src/observability/prometheus-metrics.ts';
import { formatRunReport } from '../../src/report/format-report.ts';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * Issue 31, "usage that nobody reported is unknown, not a number": a stream cut after some text, before the
 * provider's usage, is answered by the next attempt (a continuation on Anthropic, a restart on OpenAI). The cut
 * attempt read the prompt and wrote tokens that no provider ever reported: its usage is unknown, breakwater's
 * estimate kept apart. The turn's usage is the sum over its calls: the answering call's reported counts, flagged
 * `partial`, the cut call's estimate apart, in the turn, the span, the metrics, the stored row and the report (the
 * hostile review: the answering call's reported counts were lost in an estimate). Real SDKs over real HTTP against
 * the emulator; a virtual clock, so no backoff is waited out.
 */

const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
  'usage-test',
);

let emulator: Emulator;
let clock: VirtualClock;
let database: BreakwaterDatabase;

beforeAll(async () => {
  clock = createVirtualClock({ origin: Date.parse('2026-03-02T09:00:00+09:00') });
  emulator = await startEmulator({ profile: { seed: 21, latency: { minMs: 0, maxMs: 0 } }, clock });
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await emulator.close();
  clock.stop();
  await database.close();
});

const attr = (s: ReadableSpan, name: string) => s.attributes[name];

describe.each([
  { flavor: 'anthropic' as EmulatorFlavor, model: 'claude-sonnet-4-6', mode: 'continuation' },
  { flavor: 'openai' as EmulatorFlavor, model: 'gpt-4o-mini', mode: 'restart' },
])('a stream cut before usage on $flavor', ({ flavor, model, mode }) => {
  it('gives the cut call unknown usage and the turn the answering call reported counts, flagged partial, in the turn, the span and the metrics; the estimate is kept apart and labelled', async () => {
    exporter.reset();
    emulator.clearFaults();
    const key = `sk-cut-${flavor}-0000000000000001`;
    const supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'cut', flavor, model, key)],
        chains: { main: ['cut'] },
      },
      { clock, tracing: { tracer } },
    );
    const metrics = createBreakwaterMetrics(supervisor);
    const calls: Extract<RuntimeEvent, { type: 'call.attempt' }>[] = [];
    supervisor.subscribeEvents((e) => {
      if (e.type === 'call.attempt' && !e.data.probe) calls.push(e);
    });
    let stopped = false;
    try {
      // A plain answer first: what a reported usage looks like on the same endpoint.
      const agent = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
      const clean = await agent.ask('What moved EURUSD overnight?');
      expect(clean.usage.source).toBe('reported');
      expect(clean.usage.inputTokens).toBeGreaterThan(0);

      calls.length = 0;
      emulator.addFault({ kind: 'stream_cut', match: { key }, count: 1, afterChunks: 1 });
      const stream = agent.stream('And what moves it today?');
      const modes: string[] = [];
      for await (const e of stream) if (e.type === 'endpoint') modes.push(e.mode);
      const turn = await stream.turn;
      expect(turn.outcome).toBe('answered');
      expect(turn.faults.map((f) => f.kind)).toEqual(['network']);
      expect(modes).toEqual(['start', mode]);

      // The calls: the cut one unknown (its estimate apart), the answering one as its provider reported it.
      const cutCall = calls.find((c) => c.data.outcome === 'fault');
      const answering = calls.find((c) => c.data.outcome === 'ok');
      expect(cutCall?.data.usage).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });
      const answered = answering?.data.usage;
      expect(answered?.source).toBe('reported');

      // The turn: the answering call's reported counts (never 0, never the estimate), flagged partial; the cut
      // call's estimate apart and plausible (it wrote one chunk).
      expect(turn.usage).toMatchObject({
        inputTokens: answered?.inputTokens,
        outputTokens: answered?.outputTokens,
        source: 'partial',
      });
      expect(turn.usage.estimated?.inputTokens).toBeGreaterThan(0);
      expect(turn.usage.estimated?.outputTokens).toBeGreaterThan(0);
      expect(turn.usage.estimated).toEqual(cutCall?.data.usage?.estimated);

      // The turn's span: no gen_ai.usage.* (the conventions' counts are the provider's, whole), the flag, the
      // reported part and the estimate under breakwater's own names. The clean turn's span has the reported counts.
      await supervisor.stop();
      stopped = true;
      const turnSpans = exporter.getFinishedSpans().filter((s) => s.name === 'invoke_agent Kai');
      expect(turnSpans).toHaveLength(2);
      const [cleanSpan, cutSpan] = turnSpans as [ReadableSpan, ReadableSpan];
      expect(attr(cleanSpan, 'gen_ai.usage.input_tokens')).toBe(clean.usage.inputTokens);
      expect(attr(cleanSpan, 'gen_ai.usage.output_tokens')).toBe(clean.usage.outputTokens);
      expect(attr(cleanSpan, 'breakwater.usage.source')).toBe('reported');
      expect(attr(cutSpan, 'gen_ai.usage.input_tokens')).toBeUndefined();
      expect(attr(cutSpan, 'gen_ai.usage.output_tokens')).toBeUndefined();
      expect(attr(cutSpan, 'breakwater.usage.source')).toBe('partial');
      expect(attr(cutSpan, 'breakwater.usage.reported_input_tokens')).toBe(answered?.inputTokens);
      expect(attr(cutSpan, 'breakwater.usage.reported_output_tokens')).toBe(answered?.outputTokens);
      expect(attr(cutSpan, 'breakwater.usage.estimated_output_tokens')).toBe(
        turn.usage.estimated?.outputTokens,
      );
      expect(attr(cutSpan, 'breakwater.usage.estimated_input_tokens')).toBe(
        turn.usage.estimated?.inputTokens,
      );
      // The cut attempt's own span: no measured count, its usage flagged unknown with the estimate apart.
      const attempts = exporter
        .getFinishedSpans()
        .filter(
          (s) => s.name.startsWith('chat ') && s.parentSpanContext?.spanId === cutSpan.spanContext().spanId,
        );
      const cutAttempt = attempts.find((s) => attr(s, 'error.type') === 'network');
      expect(cutAttempt).toBeDefined();
      expect(Object.keys(cutAttempt!.attributes).filter((k) => k.startsWith('gen_ai.usage'))).toEqual([]);
      expect(attr(cutAttempt!, 'breakwater.usage.source')).toBe('unknown');

      // Metrics: the measured counter holds the reported tokens only (the clean turn's and the answering call's);
      // the cut call is counted apart, its estimate in a metric of its own.
      const text = await metrics.registry.metrics();
      const value = (name: string, type: string) => {
        const m = new RegExp(`^breakwater_${name}\\{endpoint="cut",type="${type}"\\} (\\d+)$`, 'm').exec(
          text,
        );
        return m ? Number(m[1]) : undefined;
      };
      expect(value('upstream_tokens_total', 'input')).toBe(clean.usage.inputTokens! + answered!.inputTokens!);
      expect(value('upstream_tokens_total', 'output')).toBe(
        clean.usage.outputTokens! + answered!.outputTokens!,
      );
      expect(value('upstream_usage_unreported_total', 'output')).toBe(1);
      expect(value('upstream_tokens_estimated_total', 'output')).toBe(turn.usage.estimated?.outputTokens);
    } finally {
      metrics.detach();
      if (!stopped) await supervisor.stop();
    }
  });
});

const spec: ScenarioSpec = {
  name: 'usage-cut',
  runtime: {
    endpoints: [
      {
        id: 'primary',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        emulator: 'anthropic',
        apiKey: 'sk-ant-usage-cut-000000001',
      },
    ],
    chains: { main: ['primary'] },
  },
  agents: [
    { name: 'Kai', chain: 'main' },
    { name: 'Yuna', chain: 'main' },
  ],
  rounds: { count: 2, items: [{ id: 'I1', title: 'First' }] },
  emulator: {
    seed: 12,
    faults: [{ kind: 'stream_cut', match: { flavor: 'anthropic' }, count: 1, afterChunks: 1 }],
  },
};

describe('a streamed run with one stream cut before usage', () => {
  it('stores that turn with partial usage; the report counts its reported part and says the rest was not reported', async () => {
    const runId = 'usage-cut-run';
    await runScenario({ scenario: spec, runId, database, virtualTime: true, stream: true });
    const store = createRunStore(database);
    const turns = await store.listTurns(runId);
    expect(turns).toHaveLength(4);
    const cut = turns.filter((t) => t.faults.some((f) => f.kind === 'network'));
    expect(cut).toHaveLength(1);
    // The row reads back with its flag: the answering call's reported counts, the cut call's estimate apart.
    expect(cut[0]!.usage?.source).toBe('partial');
    expect(cut[0]!.usage?.inputTokens).toBeGreaterThan(0);
    expect(cut[0]!.usage?.estimated?.outputTokens).toBeGreaterThan(0);
    const others = turns.filter((t) => t !== cut[0]);
    for (const t of others) expect(t.usage?.source).toBe('reported');

    const report = await loadRunReport(store, runId);
    // Every reported count, the cut turn's reported part included; its unreported part only as an estimate.
    const reportedOutput = turns.reduce((n, t) => n + (t.usage?.outputTokens ?? 0), 0);
    const reportedInput = turns.reduce((n, t) => n + (t.usage?.inputTokens ?? 0), 0);
    expect(report.usage).toEqual({
      turns: 4,
      reportedTurns: 3,
      unknownTurns: 1,
      input: {
        reported: reportedInput,
        unreportedTurns: 1,
        estimated: cut[0]!.usage?.estimated?.inputTokens,
      },
      output: {
        reported: reportedOutput,
        unreportedTurns: 1,
        estimated: cut[0]!.usage?.estimated?.outputTokens,
      },
    });
    const line = formatRunReport(report).find((l) => l.startsWith('tokens '));
    expect(line).toBe(
      `tokens 3 of 4 turns reported: input ${reportedInput}, output ${reportedOutput} + 1 turn not wholly reported ` +
        `(≈${cut[0]!.usage?.estimated?.inputTokens} input + ≈${cut[0]!.usage?.estimated?.outputTokens} output estimated, not measured)`,
    );
  });
});
