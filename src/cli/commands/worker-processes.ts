import { type ChildProcess, spawn } from 'node:child_process';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';

/** A line a worker started with `--json` writes (see `breakwater worker`). */
export type WorkerMessage =
  | { readonly type: 'joined'; readonly runId: string; readonly worker: string }
  | {
      readonly type: 'turn';
      readonly runId: string;
      readonly round: number;
      readonly agent: string;
      readonly itemId: string;
      readonly outcome: string;
      readonly worker: string;
    }
  | { readonly type: 'commit'; readonly runId: string; readonly round: number }
  | { readonly type: 'text'; readonly agent: string; readonly add?: string; readonly text?: string };

/** How one worker process ended. */
export interface WorkerExit {
  /** 1-based, in the order they were started. */
  readonly index: number;
  readonly pid: number | undefined;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** What it wrote on stderr (its last 64 KiB), secrets scrubbed. */
  readonly stderr: string;
  /** Whether it said it joined the run before it ended. */
  readonly joined: boolean;
}

/** Options of {@link startWorkerProcesses}. */
export interface WorkerProcessesOptions {
  /** The `breakwater` entry file the workers run (`cliEntryPath()`). */
  readonly entry: string;
  readonly count: number;
  readonly databaseUrl: string;
  readonly runId: string;
  /** The workers' environment (the coordination URL travels here, never in argv). */
  readonly env: NodeJS.ProcessEnv;
  /** Start them with `--stream`. Default false. */
  readonly stream?: boolean;
  /** Every line they write on stdout, parsed; `index` is the worker's. Default none. */
  readonly onMessage?: (message: WorkerMessage, index: number) => void;
}

/** Worker processes started for one run. */
export interface WorkerProcesses {
  /** Resolves once every worker has exited, with how each ended. */
  readonly exited: Promise<WorkerExit[]>;
  /**
   * Resolves with the first worker that ended before it joined the run, other than with code 0 (a run already
   * over) or because {@link stop} asked it to; never resolves otherwise. Such a worker died at start: its
   * siblings, started the same way, will not do better.
   */
  readonly diedAtStart: Promise<WorkerExit>;
  /** Asks every worker still running to stop (SIGTERM: they finish cleanly). */
  stop(): void;
  /** Kills every worker still running (SIGKILL). */
  kill(): void;
}

const STDERR_KEPT = 64 * 1024;

/**
 * Starts `count` local `breakwater worker --json --run-id …` processes with the same Node as this one and
 * follows them: their stdout lines as {@link WorkerMessage}s, their stderr kept for the report of a worker that
 * died, and which of them died before joining the run.
 *
 * @example
 * ```ts
 * const workers = startWorkerProcesses({ entry: cliEntryPath(), count: 3, databaseUrl, runId, env: process.env });
 * const first = await Promise.race([workers.exited, workers.diedAtStart]);
 * ```
 */
export function startWorkerProcesses(options: WorkerProcessesOptions): WorkerProcesses {
  const children: ChildProcess[] = [];
  let stopping = false;
  let reportDeath: (exit: WorkerExit) => void = () => {};
  const diedAtStart = new Promise<WorkerExit>((resolve) => {
    reportDeath = resolve;
  });
  const args = [
    options.entry,
    'worker',
    '--json',
    '--database-url',
    options.databaseUrl,
    '--run-id',
    options.runId,
    ...(options.stream ? ['--stream'] : []),
  ];
  const exits = Array.from({ length: options.count }, (_, i) => {
    const index = i + 1;
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env });
    children.push(child);
    let stderr = '';
    let joined = false;
    let partial = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => {
      const lines = (partial + s).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const message = parseMessage(line);
        if (!message) continue;
        if (message.type === 'joined') joined = true;
        options.onMessage?.(message, index);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      stderr = (stderr + s).slice(-STDERR_KEPT);
    });
    return new Promise<WorkerExit>((resolve) => {
      const done = (code: number | null, signal: NodeJS.Signals | null) => {
        const exit: WorkerExit = {
          index,
          pid: child.pid,
          code,
          signal,
          stderr: scrubSecrets(stderr),
          joined,
        };
        if (!joined && !stopping && code !== 0) reportDeath(exit);
        resolve(exit);
      };
      // `close` (not `exit`): every line the worker wrote has been read by then.
      child.once('close', done);
      // The entry could not even be run (no such Node, say): no `close` follows a failed spawn.
      child.once('error', (e) => {
        stderr += `${e.message}\n`;
        if (child.pid === undefined) done(null, null);
      });
    });
  });
  const signalAll = (signal: NodeJS.Signals) => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
  };
  return {
    exited: Promise.all(exits),
    diedAtStart,
    stop() {
      stopping = true;
      signalAll('SIGTERM');
    },
    kill() {
      stopping = true;
      signalAll('SIGKILL');
    },
  };
}

function parseMessage(line: string): WorkerMessage | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value = JSON.parse(line) as { type?: unknown };
    return typeof value?.type === 'string' ? (value as WorkerMessage) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The line of a dead worker's stderr that says why: its error (`Error: Cannot find module …`, `breakwater worker:
 * …`), not the `Node.js v20…` banner Node ends a crash with.
 *
 * @example
 * ```ts
 * whyItDied('…\nError: Cannot find module \'/x\'\n    at …\n\nNode.js v20.20.2\n'); // "Error: Cannot find module '/x'"
 * ```
 */
export function whyItDied(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^Node\.js v\d/.test(l) && !/^at /.test(l));
  return (
    lines.find((l) => /^breakwater worker:/.test(l)) ??
    lines.find((l) => /^(?:\w+)?(?:Error|Exception)\b|^\w+Error:/.test(l)) ??
    lines.at(-1) ??
    ''
  );
}
