import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';

/*
 * Each test file's wall time as the run lived it: from its setup file to its last after-hook, hooks included (vitest's
 * own per-file durations leave out `beforeAll`, where the worker files make their whole run), with the PostgreSQL
 * connections it took from the budget and how long it waited for them. One JSON line per file in
 * test-output/timeline/<run>.jsonl; `node scripts/test-timeline.mjs` reads the newest and says where the wall went.
 */

export interface FileTimes {
  readonly file: string;
  readonly startedAt: number;
  readonly endedAt: number;
  /** Connections taken from the budget (0: the file used no PostgreSQL server). */
  readonly connections: number;
  /** How long the file waited for them, in ms. */
  readonly waitedMs: number;
}

export function recordFileTimes(times: FileTimes): void {
  try {
    const dir = join(process.cwd(), 'test-output', 'timeline');
    mkdirSync(dir, { recursive: true });
    appendFileSync(
      join(dir, `${inject('testDatabases').run}.jsonl`),
      `${JSON.stringify({ ...times, pid: process.pid })}\n`,
    );
  } catch {
    // A timeline is a developer's aid: a read-only checkout must not fail a test over it.
  }
}
