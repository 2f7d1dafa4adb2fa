/** One 'abort' listener per signal, fanning out to every callback registered on it. */
const fanouts = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `fn` once when `signal` aborts (at once if it already has); returns the function that unregisters it.
 * However many asks share one signal (a run's signal handed to every agent), the signal carries a single
 * listener, so Node never warns `MaxListenersExceededWarning`, and unregistering is O(1).
 *
 * @example
 * ```ts
 * const off = onAbort(signal, () => cancel(turnId));
 * // later, when the turn ended by itself:
 * off();
 * ```
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return () => {};
  }
  let set = fanouts.get(signal);
  if (!set) {
    const callbacks = new Set<() => void>();
    set = callbacks;
    fanouts.set(signal, callbacks);
    signal.addEventListener(
      'abort',
      () => {
        fanouts.delete(signal);
        for (const cb of [...callbacks]) cb();
      },
      { once: true },
    );
  }
  const entry = () => fn();
  set.add(entry);
  return () => {
    set.delete(entry);
  };
}
