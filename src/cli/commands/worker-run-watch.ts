import { createLiveView, type LiveView } from '../../live/live-view.ts';
import { createBreakwaterMetrics } from '../../observability/prometheus-metrics.ts';
import { createRunEventTail, type RunEventTail } from '../../runs/workers/run-event-tail.ts';
import { runLogMetricsSource } from '../../runs/workers/run-log-metrics.ts';
import type { WorkerRun } from '../../runs/workers/start-worker-run.ts';
import { createLiveEventLog, type LiveEventLog } from '../../store/event-log.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import type { RunStore } from '../../store/run-store.ts';
import { createLogLiveSource, type LogLiveSource } from '../../viz/log-live-source.ts';
import { startVizServer, type VizServer } from '../../viz/viz-server.ts';
import type { RunWithWorkersOptions } from './run-workers-options.ts';

/**
 * What the parent of `run --workers N` holds while the workers run: the tail of their live stream and what it
 * feeds (live view, visualizer, `/metrics`), the emulator it started, and how to stop the workers.
 */
export interface WorkerRunWatch {
  tail: RunEventTail | undefined;
  live: LiveView | undefined;
  viz: VizServer | undefined;
  vizSource: LogLiveSource | undefined;
  detachMetrics: (() => void) | undefined;
  emulatorClose: (() => Promise<void>) | undefined;
  stopWorkers: (() => void) | undefined;
}

/** A watch with nothing open yet. */
export function newWorkerRunWatch(): WorkerRunWatch {
  return {
    tail: undefined,
    live: undefined,
    viz: undefined,
    vizSource: undefined,
    detachMetrics: undefined,
    emulatorClose: undefined,
    stopWorkers: undefined,
  };
}

/** What the watch is opened on. */
export interface WorkerRunWatchParts {
  readonly options: RunWithWorkersOptions;
  readonly database: BreakwaterDatabase;
  readonly store: RunStore;
  readonly started: WorkerRun;
  /** A line for the user: above the live view, on stderr with --json. */
  readonly note: (line: string) => void;
}

/** Tails the run's live stream and opens what it feeds; resolves with the tail. */
export async function openWorkerRunWatch(
  watch: WorkerRunWatch,
  parts: WorkerRunWatchParts,
): Promise<RunEventTail> {
  const { options, database, store, started, note } = parts;
  const showLive = options.live !== false && !options.json;
  // The parent shows the whole run from the log every worker appends to: each tick reads only what is new.
  // A resumed run is shown from its resumption on, as a one-process resume shows it.
  // It reads the workers' live stream (what they hear as it happens), not the committed log (a round's events
  // reach it with the round's commit).
  const liveLog = createLiveEventLog(database);
  const sinceSeq = started.resumedFrom !== undefined ? await firstSeqOfResume(liveLog, started.runId) : 0;
  const tail = createRunEventTail(liveLog, started.runId, { afterSeq: sinceSeq });
  watch.tail = tail;
  if (options.vizPort !== undefined) {
    watch.vizSource = createLogLiveSource(tail, { runId: started.runId, store, limit: started.tokenLimit });
    watch.viz = await startVizServer({ port: options.vizPort, live: watch.vizSource, store });
  }
  if (options.metrics) {
    const feed =
      watch.vizSource ?? createLogLiveSource(tail, { runId: started.runId, limit: started.tokenLimit });
    const metrics = createBreakwaterMetrics(runLogMetricsSource(tail, feed, started.clock), {
      registry: options.metrics.registry,
    });
    watch.detachMetrics = () => {
      metrics.detach();
      if (feed !== watch.vizSource) feed.close();
    };
  }
  if (showLive) watch.live = startLive(options, tail, started);
  if (watch.viz) note(`visualizer: ${watch.viz.url}`);
  if (options.metrics) note(`metrics: ${options.metrics.server.url}`);
  return tail;
}

/** Closes what the watch holds, the workers first, the emulator last. */
export async function closeWorkerRunWatch(watch: WorkerRunWatch): Promise<void> {
  watch.stopWorkers?.();
  watch.tail?.close();
  watch.live?.stop();
  watch.detachMetrics?.();
  await watch.viz?.close();
  watch.vizSource?.close();
  await watch.emulatorClose?.();
}

/** The `seq` just before the resumed run's `run.started`: the live view and the visualizer start there. */
async function firstSeqOfResume(store: Pick<LiveEventLog, 'readEvents'>, runId: string): Promise<number> {
  let last = 0;
  let resumedAt = 0;
  for (;;) {
    const page = await store.readEvents(runId, { afterSeq: last, limit: 1_000 });
    for (const e of page) if (e.type === 'run.started') resumedAt = e.seq;
    if (page.length < 1_000) return Math.max(0, resumedAt - 1);
    last = page[page.length - 1]!.seq;
  }
}

function startLive(options: RunWithWorkersOptions, tail: RunEventTail, started: WorkerRun): LiveView {
  const live = createLiveView({
    source: tail,
    ...(options.liveOut ? { out: options.liveOut } : {}),
    title: `${started.scenario}  run ${started.runId}  ${started.workers.count} workers`,
  });
  const done = new Map<number, number>();
  let round = (started.resumedFrom ?? 0) + 1;
  const progress = () =>
    live.setProgress({
      round,
      rounds: started.rounds,
      // A worker killed after flushing some turns' events has them asked again by another: never past the total.
      done: Math.min(done.get(round) ?? 0, started.turnsPerRound[round - 1] ?? 0),
      total: started.turnsPerRound[round - 1] ?? 0,
    });
  tail.subscribeEvents((e) => {
    if (e.type === 'run.started') progress();
    else if (e.type === 'turn.completed' && typeof e.data.round === 'number') {
      done.set(e.data.round, (done.get(e.data.round) ?? 0) + 1);
      if (e.data.round === round) progress();
    } else if (e.type === 'round.committed') {
      round = Math.min(started.rounds, Number(e.data.round) + 1);
      progress();
    }
  });
  return live;
}
