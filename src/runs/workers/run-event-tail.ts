import type { RuntimeEventListener } from '../../core/runtime-event.ts';
import { eventFromRecord } from '../../core/stored-event.ts';
import type { RunStore } from '../../store/run-store.ts';

/** Options of {@link createRunEventTail}. */
export interface RunEventTailOptions {
  /** How often the log is read for new events, real ms. Default 100. */
  readonly pollMs?: number;
  /** At most this many events per read (a read that fills it is followed at once by the next). Default 500. */
  readonly pageSize?: number;
  /** Deliver only the events after this `seq` (a resumed run shown from its resumption). Default 0: all. */
  readonly afterSeq?: number;
  /** Called when a read fails (the next tick tries again). Default none. */
  readonly onError?: (error: unknown) => void;
}

/** A live feed of a run's stored event log (a live view's `LiveSource`). */
export interface RunEventTail {
  subscribeEvents(listener: RuntimeEventListener): () => void;
  /** Reads what is new now, once (the last read before a report, say). */
  poll(): Promise<void>;
  /** The highest `seq` delivered. */
  readonly lastSeq: number;
  /** Stops reading. Safe to call twice. */
  close(): void;
}

/**
 * Follows a run's event log in the store as the worker processes of a run append to it (their `seq` numbers are
 * unique and increasing across processes, and a batch's numbers are taken and committed under one lock, so a
 * reader never sees a later number before an earlier one). Each tick reads only the events after the last `seq`
 * delivered, a page at a time — O(new events) per tick, on the `(run_id, seq)` key — and hands them to the
 * listeners in order. One read at a time; a failed read is tried again at the next tick.
 *
 * @example
 * ```ts
 * const tail = createRunEventTail(store, runId);
 * const live = createLiveView({ source: tail, out: process.stdout });
 * // … the workers run …
 * await tail.poll();
 * tail.close();
 * live.stop();
 * ```
 */
export function createRunEventTail(
  store: Pick<RunStore, 'readEvents'>,
  runId: string,
  options: RunEventTailOptions = {},
): RunEventTail {
  const pageSize = options.pageSize ?? 500;
  const listeners = new Set<RuntimeEventListener>();
  let lastSeq = options.afterSeq ?? 0;
  let closed = false;
  let reading: Promise<void> | undefined;

  const readNew = async () => {
    for (;;) {
      if (closed) return;
      const page = await store.readEvents(runId, { afterSeq: lastSeq, limit: pageSize });
      for (const r of page) {
        if (r.seq <= lastSeq) continue;
        lastSeq = r.seq;
        const event = eventFromRecord(r);
        for (const l of listeners) l(event);
      }
      if (page.length < pageSize) return;
    }
  };
  const poll = () => {
    reading ??= readNew().finally(() => {
      reading = undefined;
    });
    return reading;
  };
  const timer = setInterval(() => {
    if (!reading) poll().catch((e: unknown) => options.onError?.(e));
  }, options.pollMs ?? 100);
  timer.unref();

  return {
    subscribeEvents(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    poll,
    get lastSeq() {
      return lastSeq;
    },
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
