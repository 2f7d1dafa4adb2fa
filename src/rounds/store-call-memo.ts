import type { CallMemo } from '../runtime/agent-actors.ts';
import type { RunStore } from '../store/run-store.ts';

/**
 * The durable memo of finished calls: an engine (or tool) result is written the moment it arrives, before its
 * round commits, so a run resumed after a crash reads it back by idempotency key instead of asking again. The
 * runtime does not wait for the write; `settle()` does, and the round runner calls it before every commit.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor(config, { memo: storeCallMemo(store, runId) });
 * ```
 */
export function storeCallMemo(store: RunStore, runId: string): CallMemo {
  const pending = new Set<Promise<void>>();
  return {
    recall: (key) => store.recallCall(key),
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
