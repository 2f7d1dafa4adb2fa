import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import type { CallMemo } from '../runtime/agent-actors.ts';
import type { RunStore } from '../store/run-store.ts';

/**
 * The durable memo of finished calls, for one round of a run. An engine (or tool) result is written the moment
 * it arrives (a virtual `clock` is held meanwhile), and the runtime waits for the write (holding no token) before it reports the turn done, so a run
 * resumed after a crash never asks again for an answer that had returned. Reads never touch the database while
 * the run goes: the results of the round a crash interrupted are read once, when the memo is made (a call of
 * this process is never asked twice: committed rounds are not re-run, and a memo is only written on success).
 *
 * @example
 * ```ts
 * const memo = await storeCallMemo(store, runId, run.currentRound + 1, clock);
 * const supervisor = createSupervisor(config, { memo });
 * ```
 */
export async function storeCallMemo(
  store: RunStore,
  runId: string,
  round: number,
  clock?: Clock,
): Promise<CallMemo> {
  const known = await store.recallCallsByPrefix(runId, `${runId}:${round}:`);
  const pending = new Set<Promise<void>>();
  return {
    recall: (key) => Promise.resolve(known.get(key)),
    remember(key, value) {
      // The agent waits for this write: on a virtual clock, time stands still meanwhile.
      const release = clock ? holdClock(clock) : undefined;
      const write = store.rememberCall({ runId, idempotencyKey: key, result: value }).then(() => undefined);
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
