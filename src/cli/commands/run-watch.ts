import { Registry } from 'prom-client';
import { type ByokConsole, canReadCommands, startByokConsole } from '../../byok/byok-console.ts';
import { openCommandInput } from '../../byok/command-input.ts';
import { createLiveView, type LiveView } from '../../live/live-view.ts';
import type { MetricsServer } from '../../observability/metrics-server.ts';
import { createBreakwaterMetrics } from '../../observability/prometheus-metrics.ts';
import type { BreakwaterExecutor } from '../../runs/breakwater-executor.ts';
import type { RunScenarioOptions, ScenarioRunContext } from '../../runs/run-scenario.ts';
import type { ScenarioSpec } from '../../scenarios/scenario-types.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import type { RunStore } from '../../store/run-store.ts';
import { createLiveSource, type LiveSource } from '../../viz/live-source.ts';
import { startVizServer, type VizServer } from '../../viz/viz-server.ts';
import type { Print } from '../cli-output.ts';
import type { RunCommandOptions } from './run-command-options.ts';

/**
 * What watches a one-process run: the live view, the visualizer, `/metrics` and the `/byok` console, opened as
 * the run starts (the metrics server before it), and what the run got to (for the line a lost database gets).
 */
export interface RunWatch {
  live: LiveView | undefined;
  viz: VizServer | undefined;
  vizSource: LiveSource | undefined;
  /** The run's clock, once it started: the visualizer's report is stamped on it. */
  runClock: { now(): number } | undefined;
  metrics: MetricsServer | undefined;
  readonly metricsRegistry: Registry;
  byokConsole: ByokConsole | undefined;
  started: { runId: string; rounds: number } | undefined;
  /** The last round committed. */
  committed: number;
}

/** A watch with nothing open yet. */
export function newRunWatch(): RunWatch {
  return {
    live: undefined,
    viz: undefined,
    vizSource: undefined,
    runClock: undefined,
    metrics: undefined,
    metricsRegistry: new Registry(),
    byokConsole: undefined,
    started: undefined,
    committed: 0,
  };
}

/** What the watch is opened with besides the run itself. */
export interface RunWatchParts {
  readonly options: RunCommandOptions;
  readonly print: Print;
  /** Lines meant for the user while --json keeps stdout for the report alone. */
  readonly note: (line: string) => void;
  readonly database: BreakwaterDatabase;
  readonly store: RunStore;
  readonly scenario: ScenarioSpec;
}

/** The run's callbacks that feed the watch: progress, streamed texts, the run's own events, and its start. */
export function watchCallbacks(
  watch: RunWatch,
  parts: RunWatchParts,
): Pick<RunScenarioOptions, 'onProgress' | 'stream' | 'onText' | 'onEvent' | 'onStart'> {
  const { options } = parts;
  return {
    onProgress: (p) => watch.live?.setProgress(p),
    ...(options.stream
      ? {
          stream: true,
          onText: (agent: string, text: string) => {
            watch.live?.setText(agent, text);
            options.onText?.(agent, text);
          },
        }
      : {}),
    onEvent: (e) => {
      // The run's own events are not the supervisor's: the visualizer's page gets them from here.
      if (e.type.startsWith('run.') || e.type.startsWith('round.')) watch.vizSource?.publish(e);
      if (e.type === 'round.committed')
        watch.committed = Number((e.data as { round?: unknown })?.round) || watch.committed;
    },
    onStart: (ctx: ScenarioRunContext) => watchStart(watch, ctx, parts),
  };
}

/** Opens what watches the run once it is set up, before its first turn. */
async function watchStart(watch: RunWatch, ctx: ScenarioRunContext, parts: RunWatchParts): Promise<void> {
  const { options, print, note, database, store, scenario } = parts;
  watch.started = { runId: ctx.runId, rounds: ctx.rounds };
  if (options.live !== false && !options.json) {
    // Printed before the live frame exists, so the frame's redraws stay aligned on a terminal.
    print(
      `run ${ctx.runId}: scenario ${scenario.name}, policy ${ctx.policy}, ${ctx.rounds} rounds, ${database.backend} at ${database.location}`,
    );
    watch.live = createLiveView({
      source: ctx.executor,
      agents: ctx.agents,
      clock: ctx.clock,
      title: `${scenario.name}  run ${ctx.runId}  policy ${ctx.policy}`,
    });
  }
  const supervisor = (ctx.executor as Partial<BreakwaterExecutor>).supervisor;
  watch.runClock = ctx.clock;
  if (options.vizPort !== undefined && supervisor) {
    watch.vizSource = createLiveSource(supervisor, { runId: ctx.runId, store });
    watch.viz = await startVizServer({ port: options.vizPort, live: watch.vizSource, store });
    if (watch.live) watch.live.log(`visualizer: ${watch.viz.url}`);
    else note(`visualizer: ${watch.viz.url}`);
  }
  if (watch.metrics && supervisor) {
    createBreakwaterMetrics(supervisor, { registry: watch.metricsRegistry });
    if (watch.live) watch.live.log(`metrics: ${watch.metrics.url}`);
    else note(`metrics: ${watch.metrics.url}`);
  }
  watch.byokConsole = startStdinByok(options, supervisor, (line) => {
    // Above the live frame; on stderr when stdout carries the JSON report.
    if (watch.live) watch.live.log(line);
    else note(line);
  });
}

/** Closes what the watch opened, the `/byok` console first. */
export async function closeRunWatch(watch: RunWatch): Promise<void> {
  watch.byokConsole?.stop();
  watch.live?.stop();
  await watch.viz?.close();
  watch.vizSource?.close();
  await watch.metrics?.close();
}

/**
 * Starts reading `/byok` lines for session `default` when asked to and stdin is a terminal or a pipe.
 * The typed line is never printed: only the outcome (`openai key sk-…a1b2 active for session default`).
 */
function startStdinByok(
  options: RunCommandOptions,
  supervisor: Partial<BreakwaterExecutor>['supervisor'],
  say: (line: string) => void,
): ByokConsole | undefined {
  if (options.stdin === false) return undefined;
  if (!options.input && !canReadCommands(0)) return undefined;
  const input = options.input ?? openCommandInput(0);
  const byok = supervisor?.byok;
  const started = startByokConsole({
    input,
    byok,
    print: say,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (byok?.enabled) {
    const hidden = input.isTTY === true ? ' (what you type is not shown)' : '';
    say(
      `type /byok PROVIDER KEY and Enter to go on with your own key${hidden}; providers: ${byok.providers().join(', ')}`,
    );
  }
  return started;
}
