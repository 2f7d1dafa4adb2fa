import type { Registry } from 'prom-client';
import type { LiveStream } from '../../live/live-view.ts';
import type { MetricsServer } from '../../observability/metrics-server.ts';
import type { Print } from '../cli-output.ts';

/** Options of `runWithWorkers`. */
export interface RunWithWorkersOptions {
  readonly scenario?: string;
  /** How many local worker processes (≥ 1). With `resumeRunId`: default as many as the run was started with. */
  readonly workers?: number;
  /** Continue this run (started with `--workers`) instead of starting one. Default: a new run. */
  readonly resumeRunId?: string;
  /** The PostgreSQL store (default: env `DATABASE_URL`). */
  readonly databaseUrl?: string;
  readonly runId?: string;
  /** Control URL of a running emulator. Default: one started here, on the run's clock. */
  readonly emulatorUrl?: string;
  /**
   * Where the workers share the global tokens and endpoint health (checked by the caller): `postgres://…` or
   * `redis://…`, and for Redis its key prefix. Default: the run's PostgreSQL store.
   */
  readonly coordination?: { readonly url: string; readonly keyPrefix?: string };
  readonly json?: boolean;
  /**
   * Show the live view, fed from the run's event log in the store (every worker's events, each agent's line saying
   * which worker runs it). Default true (not with `json`).
   */
  readonly live?: boolean;
  /** Where the live view writes. Default `process.stdout`. */
  readonly liveOut?: LiveStream;
  /** Every worker streams its turns; their texts as they grow reach the live view (and `onText`). Default false. */
  readonly stream?: boolean;
  /** With `stream`: an agent's text of its running turn after every change, whichever worker asks it. Default none. */
  readonly onText?: (agent: string, text: string) => void;
  /** Serve the visualizer of the whole run (every worker's events) on 127.0.0.1 (0 = any free port). Default off. */
  readonly vizPort?: number;
  /** A `/metrics` server already listening, and its registry: the whole run's metrics are registered there. */
  readonly metrics?: { readonly server: MetricsServer; readonly registry: Registry };
  readonly print?: Print;
  /** Where a dead worker's stderr is shown. Default `process.stderr`. */
  readonly printErr?: (text: string) => void;
  readonly signal?: AbortSignal;
}
