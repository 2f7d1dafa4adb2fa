import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import type { CallMemo } from '../runtime/agent-actors.ts';
import { findDatabaseUnavailable } from '../store/database-unavailable-error.ts';
import type { RunStore } from '../store/run-store.ts';
import { roundKeyPrefix, TURN_KEY_FORMAT, type TurnKeyFormat } from '../store/turn-key.ts';

/**
 * The durable memo of finished calls, for one round of a run. An engine (or tool) result is written the moment
 * it arrives (a virtual `clock` is held meanwhile), and the runtime waits for the write (holding no token) before it reports the turn done, so a run
 * resumed after a crash never asks again for an answer that had returned. Reads never touch the database while
 * the run goes: the results of the round a crash interrupted are read once, when the memo is made (a call of
 * this process is never asked twice: committed rounds are not re-run, and a memo is only written on success).
 *
 * @example
 * ```ts
 * const memo = await storeCallMemo(store, runId, run.currentRound + 1, clock, { keyFormat: keyFormatOf(run.config) });
 * const supervisor = createSupervisor(config, { memo });
 * ```
 */
export async function storeCallMemo(
  store: RunStore,
  runId: string,
  round: number,
  clock?: Clock,
  options: StoreCallMemoOptions = {},
): Promise<CallMemo> {
  const stored = await store.recallCallsByPrefix(
    runId,
    roundKeyPrefix(runId, round, options.keyFormat ?? TURN_KEY_FORMAT),
  );
  const known = options.answered ?? new Map<string, unknown>();
  for (const [key, value] of stored) known.set(key, value);
  const pending = new Set<Promise<void>>();
  const retryForMs = options.retryForMs ?? MEMO_WRITE_RETRY_MS;
  const reach: Reach = { lost: false };
  return {
    recall: (key) => Promise.resolve(known.get(key)),
    remember(key, value) {
      // Answered upstream: kept here at once, so this process never asks for it again whatever the write does.
      known.set(key, value);
      // The agent waits for this write: on a virtual clock, time stands still meanwhile.
      const release = clock ? holdClock(clock) : undefined;
      const write = writeThrough(
        options.write
          ? () => options.write!(key, value)
          : () => store.rememberCall({ runId, idempotencyKey: key, result: value }).then(() => undefined),
        retryForMs,
        reach,
      );
      if (release) write.then(release, release);
      pending.add(write);
      const forget = () => pending.delete(write);
      write.then(forget, forget);
      return write;
    },
    async settle() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}

/**
 * How long a memo write is tried again while the database is unreachable, real ms, by default: longer than the
 * store's quarantine after a lost connection (10 s), so a write whose connection was cut lands on the next one. A
 * worker's part is taken over only this long after its lease ran out (round-parts.ts), so the new holder reads
 * every answer the old one had.
 */
export const MEMO_WRITE_RETRY_MS = 12_000;

/** Options of {@link storeCallMemo}. */
export interface StoreCallMemoOptions {
  /**
   * How long a memo write is tried again while the database is unreachable (a connection terminated, a restart),
   * real ms. Short enough that a run whose database froze still stops within the CLI's bound (its database
   * deadline plus this).
   * @default MEMO_WRITE_RETRY_MS (12 000)
   */
  readonly retryForMs?: number;
  /**
   * Writes one result durably, in place of the run store's `rememberCall` (a worker fences its writes by its part
   * leases: `rememberCallHeld`). A database that is unreachable is tried again as for the store's; any other error
   * is final. Default: `store.rememberCall`.
   */
  readonly write?: (key: string, value: unknown) => Promise<void>;
  /** How the run's keys are spelled (`keyFormatOf(run.config)`). Default the current format. */
  readonly keyFormat?: TurnKeyFormat;
  /**
   * The answers this process already holds for the round (a stored answer wins over its own), added to as calls are
   * answered: a worker that claims a part of the round again (its lease ran out while its database was cut) keeps
   * the answers whose writes never landed, instead of asking and paying for them again. Default a new map.
   */
  readonly answered?: Map<string, unknown>;
}

/** Between two tries of a memo write, real ms: doubling from the first to the last. */
const FIRST_RETRY_MS = 250;
const LAST_RETRY_MS = 2_000;

/** What the memo's writes learned of the database: `lost` once one of them waited out its whole retry window. */
interface Reach {
  lost: boolean;
}

/**
 * A memo write, tried again while the database is unreachable: a call answered upstream is paid for, and a memo
 * lost to a connection cut once (the server still up) would have it asked and paid again by whoever resumes the
 * round. Any other error (the SQL refused) is final at once.
 *
 * Once one write waited out its window, the database is taken as lost: the next writes try once (the store
 * fails fast while it is lost) instead of each waiting the window again, so a run whose database went away
 * stops within one window, not one per turn still under way. A write that lands finds it back.
 */
async function writeThrough(write: () => Promise<void>, retryForMs: number, reach: Reach): Promise<void> {
  const giveUpAt = Date.now() + (reach.lost ? 0 : retryForMs);
  for (let wait = FIRST_RETRY_MS; ; wait = Math.min(LAST_RETRY_MS, wait * 2)) {
    try {
      await write();
      reach.lost = false;
      return;
    } catch (e) {
      if (!findDatabaseUnavailable(e)) throw e;
      const left = giveUpAt - Date.now();
      if (left <= 0) {
        reach.lost = true;
        throw e;
      }
      // The last wait is cut to the window's end, so a try is made at its very end (after a quarantine that began
      // a little after the answer), not skipped because a full wait would overrun it.
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, left)));
    }
  }
}
