import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import type { CallMemo } from '../runtime/agent-actors.ts';
import type { RunStore } from '../store/run-store.ts';

/**
 * The durable memo of finished calls: an engine (or tool) result is written the moment it arrives, before its
 * round commits, so a run resumed after a crash reads it back by idempotency key instead of asking again. The
 * runtime does not wait for the write; `settle()` does, and the round runner calls it before every commit.
 * Given the run's `clock`, a read holds a virtual clock (`createVirtualClock`) until it is answered.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor(config, { memo: storeCallMemo(store, runId) });
 * ```
 */
export function storeCallMemo(store: RunStore, runId: string, clock?: Clock): CallMemo {
  const pending = new Set<Promise<void>>();
  return {
    // The agent waits for this read before it calls: on a virtual clock, time stands still meanwhile.
    recall: (key) => {
      const release = clock ? holdClock(clock) : undefined;
      const read = store.recallCall(key);
      if (release) read.then(release, release);
      return read;
    },
    remember(key, value) {
      const write = store.rememberCall({ runId, idempotencyKey: key, result: value }).then(() => undefined);
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
