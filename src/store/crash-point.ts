/**
 * Named moments at which the crash suite (`npm run test:crash`) kills the process with SIGKILL, exactly there:
 * `BREAKWATER_CRASH_POINT=<name>[:<n>]` kills it the n-th time (default the first) it reaches `<name>`. Unset (every
 * real run), each point is one comparison. With `BREAKWATER_CRASH_POINT_LOG=<file>`, each kill is noted there first. A timer cannot land a kill reliably in a window of a few milliseconds —
 * between a round's commit and what is written after it — and that is where a record can go missing.
 *
 * Points: `after-commit` (a round committed, nothing else written yet), `after-stage` (a worker staged a part,
 * nobody told yet), `restore` (a resumed run read its state and memo, nothing written yet).
 */
import { appendFileSync } from 'node:fs';

const SPEC = process.env.BREAKWATER_CRASH_POINT?.split(':');
/** A file each kill is noted in first (`<point> <pid>`), so the suite counts the kills that happened. */
const NOTE = process.env.BREAKWATER_CRASH_POINT_LOG;
let hits = 0;

/**
 * Kills this process with SIGKILL when `BREAKWATER_CRASH_POINT` names this point and this is its n-th hit.
 *
 * @example
 * ```ts
 * await store.commitRound(input);
 * crashPoint('after-commit');
 * ```
 */
export function crashPoint(name: 'after-commit' | 'after-stage' | 'restore'): void {
  if (!SPEC || SPEC[0] !== name) return;
  if (++hits !== Number(SPEC[1] ?? 1)) return;
  if (NOTE) appendFileSync(NOTE, `${name} ${process.pid}\n`);
  process.kill(process.pid, 'SIGKILL');
}
