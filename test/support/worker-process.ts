import { type ChildProcess, spawn } from 'node:child_process';

/** A `breakwater worker` test child (test/workers/worker-child.ts) and what it said on stderr. */
export interface WorkerProcess {
  readonly child: ChildProcess;
  stderr: string;
  readonly exited: Promise<number | null>;
}

/**
 * Spawns the bundled worker child on `databaseUrl` for `runId`, its stderr collected, and adds it to `children` so the
 * test file's afterAll can kill whatever is left.
 *
 * @example
 * ```ts
 * const w = spawnWorker(CHILD, postgresUrl(), runId, children);
 * expect(await w.exited).toBe(0);
 * ```
 */
export function spawnWorker(
  script: string,
  databaseUrl: string,
  runId: string,
  children: ChildProcess[],
): WorkerProcess {
  const child = spawn(process.execPath, [script, databaseUrl, runId], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, BREAKWATER_LOG_LEVEL: '' },
  });
  children.push(child);
  const w: WorkerProcess = {
    child,
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    w.stderr += s;
  });
  return w;
}
