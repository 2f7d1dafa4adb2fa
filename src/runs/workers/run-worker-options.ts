import type { Logger } from 'pino';
import type { BreakwaterDatabase } from '../../store/open-database.ts';

/** What a worker did, turn by turn (the live output of `breakwater worker`). */
export interface WorkerTurnNote {
  readonly runId: string;
  readonly round: number;
  readonly agent: string;
  readonly itemId: string;
  readonly outcome: string;
  readonly worker: string;
}

/** Options of {@link runWorker}. */
export interface RunWorkerOptions {
  /** The run's PostgreSQL store (not closed by the worker). */
  readonly database: BreakwaterDatabase;
  /** The same database's URL: the global tokens and endpoint health are coordinated on it unless the run says otherwise. */
  readonly databaseUrl: string;
  /**
   * This worker's URL of the run's coordination backend (`--coordination-url`), to bring its credentials: it must
   * name the server the run coordinates on (else the run is refused, or skipped when working on any run).
   * Default: the URL stored with the run.
   */
  readonly coordinationUrl?: string;
  /** Work on this run only, and return once it is no longer running. Default: any run that has work, until `signal`. */
  readonly runId?: string;
  /** This worker's name in leases, the report and the live output. Default `host:pid:nonce`. */
  readonly holder?: string;
  /**
   * How often an idle worker looks for work when nothing woke it, real ms: a worker waiting at the round barrier is
   * woken by NOTIFY as soon as a part is staged or a round committed; this bounded poll covers what sends none (a
   * lease running out, a new run). Default 1 000, or 100 when the LISTEN connection could not be made.
   */
  readonly pollMs?: number;
  readonly logger?: Logger;
  /** Called after every turn this worker asked and staged. Default none. */
  readonly onTurn?: (note: WorkerTurnNote) => void;
  /** Called after every round this worker committed. Default none. */
  readonly onCommit?: (runId: string, round: number) => void;
  /**
   * Called once per run this worker joined (its scenario loaded, its coordination reached), before it claims any
   * part: a parent that started the worker knows from here on that it did not die at start. Default none.
   */
  readonly onJoin?: (runId: string, holder: string) => void;
  /** Stream every turn this worker asks (`agent.stream`): the same committed turns, `onText` sees the text grow. Default false. */
  readonly stream?: boolean;
  /** With `stream`: an agent's current text of its running turn, after every change; `''` when the turn ends. */
  readonly onText?: (agent: string, text: string) => void;
  readonly signal?: AbortSignal;
}

/** What {@link runWorker} did. */
export interface WorkerSummary {
  readonly holder: string;
  /** Turns asked and staged by this worker. */
  readonly turns: number;
  /** Rounds this worker committed (the one that saw the last part in). */
  readonly commits: number;
}
