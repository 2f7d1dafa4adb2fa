/*
 * The order test files start in, planned so the workers are neither idle nor waiting. A file with worker processes
 * holds 12-36 of the PostgreSQL server's connections (test/support/connection-budget.ts); when the files started
 * together ask for more than the budget, one waits for another to end while holding its vitest worker, and every
 * file behind it in the budget's queue waits too. Ordering by length alone started four such files first and left
 * the machine idle for minutes. So the plan simulates the run: whenever a worker frees, it takes the longest file
 * whose connections fit beside the files running, else the longest file that needs none, and only when neither is
 * left the next file, which will wait.
 */

/** A file's share when it declares none: one store pool's worth as the files without children use it. */
export const DEFAULT_FILE_CONNECTIONS = 8;

export interface PlannedFile {
  readonly file: string;
  /** Expected wall time in seconds, hooks included. */
  readonly seconds: number;
  /** PostgreSQL connections the file takes from the budget (0: none). */
  readonly connections: number;
}

/** `files` in the order to start them on `workers` workers sharing `budget` connections. */
export function planFileOrder(files: readonly PlannedFile[], workers: number, budget: number): PlannedFile[] {
  const left = [...files].sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file));
  const running: { readonly endsAt: number; readonly connections: number }[] = [];
  const order: PlannedFile[] = [];
  let now = 0;
  while (left.length > 0) {
    if (running.length >= Math.max(1, workers)) {
      running.sort((a, b) => a.endsAt - b.endsAt);
      now = Math.max(now, running.shift()!.endsAt);
      continue;
    }
    const used = running.reduce((sum, r) => sum + r.connections, 0);
    let i = left.findIndex((f) => f.connections > 0 && used + Math.min(f.connections, budget) <= budget);
    const free = left.findIndex((f) => f.connections === 0);
    // The longest of the two kinds that can start now; a file that would wait only when nothing else can start.
    if (i < 0 || (free >= 0 && free < i)) i = free;
    if (i < 0) i = 0;
    const [next] = left.splice(i, 1);
    const waitsUntil =
      used + Math.min(next!.connections, budget) <= budget
        ? now
        : Math.max(now, ...running.map((r) => r.endsAt));
    running.push({ endsAt: waitsUntil + next!.seconds, connections: Math.min(next!.connections, budget) });
    order.push(next!);
  }
  return order;
}

/**
 * The connections a test file not yet measured declares at its top: `perFileDatabase({ connections: N })` or
 * `shareOfConnections(N)` is N; a file using the per-file helpers another way (`perFileDatabase()`,
 * `coordinationCases()`) the helper's default; a file that does not import them 0.
 */
export function declaredConnections(source: string, fallback = DEFAULT_FILE_CONNECTIONS): number {
  const declared = /(?:perFileDatabase\(\{\s*connections:\s*|shareOfConnections\()(\d+)/.exec(source);
  if (declared) return Number(declared[1]);
  return /support\/(?:per-file-database|coordination-env)\.ts['"]/.test(source) ? fallback : 0;
}
