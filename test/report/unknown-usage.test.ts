import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVirtualClock, type VirtualClock } from '../../src/clock/virtual-clock.ts';
import { type Emulator, type EmulatorFlavor, startEmulator } from '../../src/emulator/index.ts';
import { createBreakwaterMetrics } from '../../src/observability/prometheus-metrics.ts';
import { formatRunReport } from '../../src/report/format-report.ts';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import { runScenario } from '../../src/rounds/run-scenario.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, createRunStore, openDatabase } from '../../src/store/index.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * Issue 31, "usage that nobody reported is unknown, not a number": a stream cut after some text, before the
 * provider's usage, is answered by the next attempt (a continuation on Anthropic, a restart on OpenAI). The cut
 * attempt read the prompt and wrote tokens that no provider ever reported, so the turn's usage is unknown: the
 * counts are null with a flag, breakwater's estimate kept apart, in the turn, the span, the metrics, the stored
 * row and the report. Real SDKs over real HTTP against the emulator; a virtual clock, so no backoff is waited out.
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
  it('gives unknown usage in the turn, the span and the metrics; the estimate is kept apart and labelled', async () => {
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
    let stopped = false;
    try {
      // A plain answer first: what a reported usage looks like on the same endpoint.
      const agent = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
      const clean = await agent.ask('What moved EURUSD overnight?');
      expect(clean.usage.source).toBe('reported');
      expect(clean.usage.inputTokens).toBeGreaterThan(0);

      emulator.addFault({ kind: 'stream_cut', match: { key }, count: 1, afterChunks: 1 });
      const stream = agent.stream('And what moves it today?');
      const modes: string[] = [];
      for await (const e of stream) if (e.type === 'endpoint') modes.push(e.mode);
      const turn = await stream.turn;
      expect(turn.outcome).toBe('answered');
      expect(turn.faults.map((f) => f.kind)).toEqual(['network']);
      expect(modes).toEqual(['start', mode]);

      // The turn: counts unknown (null, never 0 or the estimate), flagged; the estimate apart and plausible.
      expect(turn.usage).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });
      expect(turn.usage.estimated?.inputTokens).toBeGreaterThan(0);
      expect(turn.usage.estimated?.outputTokens).toBeGreaterThanOrEqual(
        Math.ceil(turn.answer.text.length / 4),
      );

      // The turn's span: no gen_ai.usage.* (the conventions' counts are the provider's), the flag and the estimate
      // under breakwater's own names. The clean turn's span has the reported counts.
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
      expect(attr(cutSpan, 'breakwater.usage.source')).toBe('unknown');
      expect(attr(cutSpan, 'breakwater.usage.estimated_output_tokens')).toBe(
        turn.usage.estimated?.outputTokens,
      );
      expect(attr(cutSpan, 'breakwater.usage.estimated_input_tokens')).toBe(
        turn.usage.estimated?.inputTokens,
      );
      // The cut attempt's own span is a fault with no usage at all.
      const attempts = exporter
        .getFinishedSpans()
        .filter(
          (s) => s.name.startsWith('chat ') && s.parentSpanContext?.spanId === cutSpan.spanContext().spanId,
        );
      const cutAttempt = attempts.find((s) => attr(s, 'error.type') === 'network');
      expect(cutAttempt).toBeDefined();
      expect(Object.keys(cutAttempt!.attributes).filter((k) => k.includes('usage'))).toEqual([]);

      // Metrics: the measured counter holds the clean turn's reported tokens only; the unreported ones are
      // counted apart, their estimate in a metric of its own.
      const text = await metrics.registry.metrics();
      const value = (name: string, type: string) => {
        const m = new RegExp(`^breakwater_${name}\\{endpoint="cut",type="${type}"\\} (\\d+)$`, 'm').exec(
          text,
        );
        return m ? Number(m[1]) : undefined;
      };
      expect(value('upstream_tokens_total', 'input')).toBe(clean.usage.inputTokens);
      expect(value('upstream_tokens_total', 'output')).toBe(clean.usage.outputTokens);
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
  it('stores that turn with unknown usage; the report counts it apart and says its tokens were not reported', async () => {
    const runId = 'usage-cut-run';
    await runScenario({ scenario: spec, runId, database, virtualTime: true, stream: true });
    const store = createRunStore(database);
    const turns = await store.listTurns(runId);
    expect(turns).toHaveLength(4);
    const cut = turns.filter((t) => t.faults.some((f) => f.kind === 'network'));
    expect(cut).toHaveLength(1);
    // The row reads back with its flag: null counts, the estimate apart.
    expect(cut[0]!.usage).toMatchObject({ inputTokens: null, outputTokens: null, source: 'unknown' });
    expect(cut[0]!.usage?.estimated?.outputTokens).toBeGreaterThan(0);
    const others = turns.filter((t) => t !== cut[0]);
    for (const t of others) expect(t.usage?.source).toBe('reported');

    const report = await loadRunReport(store, runId);
    const reportedOutput = others.reduce((n, t) => n + (t.usage?.outputTokens ?? 0), 0);
    const reportedInput = others.reduce((n, t) => n + (t.usage?.inputTokens ?? 0), 0);
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
      `tokens 3 of 4 turns reported: input ${reportedInput}, output ${reportedOutput} + 1 turn not reported ` +
        `(≈${cut[0]!.usage?.estimated?.inputTokens} input + ≈${cut[0]!.usage?.estimated?.outputTokens} output estimated, not measured)`,
    );
  });
});
