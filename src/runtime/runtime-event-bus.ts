import type { Logger } from 'pino';
import type { RuntimeEvent, RuntimeEventListener } from '../core/runtime-event.ts';

/**
 * The supervisor's runtime events fanned out to their listeners (`onEvent`, `subscribeEvents`): a listener that
 * throws is a bug of its own, logged once per throw, and the runtime (its asks, its tokens) goes on.
 */
export interface RuntimeEventBus {
  emit(event: RuntimeEvent): void;
  /** Adds a listener; the returned function removes it. */
  listen(listener: RuntimeEventListener): () => void;
  /** Whether anyone listens: callers skip building events nobody hears (the hot path of a call). */
  heard(): boolean;
  /** Runs a user callback other than an event listener (`onReport`, `subscribe`) under the same rule. */
  guard(what: string, run: () => void): void;
}

export function createRuntimeEventBus(
  logger: Logger,
  first: RuntimeEventListener | undefined,
): RuntimeEventBus {
  const listeners = new Set<RuntimeEventListener>();
  if (first) listeners.add(first);
  const failed = (what: string, e: unknown) =>
    logger.error(
      { listener: what, error: e instanceof Error ? e.name : typeof e },
      'a runtime listener threw',
    );
  const guard = (what: string, run: () => void) => {
    try {
      run();
    } catch (err) {
      failed(what, err);
    }
  };
  return {
    emit: (event) => {
      for (const l of listeners) guard('onEvent', () => l(event));
    },
    listen: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    heard: () => listeners.size > 0,
    guard,
  };
}
