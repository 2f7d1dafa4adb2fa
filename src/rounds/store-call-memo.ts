import type { CallMemo } from '../runtime/agent-actors.ts';
import type { RunStore } from '../store/run-store.ts';

/**
 * The durable memo of finished calls: an engine (or tool) result is written the moment it arrives, before its
 * round commits, so a run resumed after a crash reads it back by idempotency key instead of asking again.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor(config, { memo: storeCallMemo(store, runId) });
 * ```
 */
export function storeCallMemo(store: RunStore, runId: string): CallMemo {
  return {
    recall: (key) => store.recallCall(key),
    remember: async (key, value) => {
      await store.rememberCall({ runId, idempotencyKey: key, result: value });
    },
  };
}
