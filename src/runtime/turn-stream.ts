import type { ToolCall } from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';
import { onAbort } from '../clock/abort-fanout.ts';
import type { Turn } from '../core/turn.ts';

/**
 * How many characters of the text so far came from one endpoint.
 *
 * @example
 * ```ts
 * const from: StreamSource = { endpointId: 'primary', chars: 120 };
 * ```
 */
export interface StreamSource {
  readonly endpointId: string;
  readonly chars: number;
}

/**
 * One event of a streamed turn, in order. The text so far is rebuilt from them: `text` appends; `endpoint`
 * first cuts the text to its `kept` characters (a `restart` keeps none, a `continuation` keeps the partial answer
 * and at most drops its trailing whitespace); `step` (a new engine call after tools ran) starts it empty. For an
 * answered turn (`answered`, `fallback`) the text so built equals `turn.answer.text` of the final `done` event.
 *
 * - `endpoint`: an endpoint starts delivering this step's answer (before its first delta). `mode`: `start` (the
 *   first text of the step), `continuation` (the partial answer was given to it as an assistant prefix; `sources`
 *   says how many characters came from which endpoint), `restart` (it cannot continue a prefix: the earlier
 *   `withdrawn` characters are taken back and it answers from the start).
 * - `text`: a delta from `endpointId`.
 * - `tool-call`: a complete tool call the model asked for (never a partial one).
 * - `fault`: an attempt failed (`afterChars`: characters it had delivered; 0 = before its first chunk, which
 *   fails over like a plain call: no text of that endpoint is ever shown).
 * - `step`: tools ran; the next engine call's text starts empty.
 * - `done`: the last event, with the same {@link Turn} `ask` resolves with.
 *
 * @example
 * ```ts
 * let text = '';
 * for await (const e of agent.stream('Item 3?')) {
 *   if (e.type === 'endpoint') text = text.slice(0, e.kept);
 *   else if (e.type === 'step') text = '';
 *   else if (e.type === 'text') text += e.text;
 * }
 * ```
 */
export type StreamEvent =
  | {
      readonly type: 'endpoint';
      readonly endpointId: string;
      readonly chainPosition: number;
      readonly mode: 'start' | 'continuation' | 'restart';
      /** Characters of the text so far that stay. */
      readonly kept: number;
      /** Characters of the text so far taken back (the tail of it). */
      readonly withdrawn: number;
      /** Where the kept text came from, endpoint by endpoint (empty for `start` and `restart`). */
      readonly sources: readonly StreamSource[];
    }
  | { readonly type: 'text'; readonly text: string; readonly endpointId: string }
  | { readonly type: 'tool-call'; readonly call: ToolCall; readonly endpointId: string }
  | {
      readonly type: 'fault';
      readonly fault: Fault;
      readonly endpointId: string;
      readonly afterChars: number;
    }
  | { readonly type: 'step'; readonly step: number }
  | { readonly type: 'done'; readonly turn: Turn };

/**
 * A streamed turn: an async iterable of {@link StreamEvent}s ending with `done`, and the finished turn as a
 * promise. Breaking out of the `for await` (or `cancel()`) cancels the turn: the upstream request is aborted and
 * its token released; `turn` then resolves `cancelled`. Events wait for a reader that is behind: adjacent `text`
 * deltas of one endpoint are then merged into one (same text, same order), so an unread stream holds its text,
 * not one event per delta. Several `next()` calls may be pending at once; they settle in order.
 *
 * @example
 * ```ts
 * const stream = agent.stream('Summarize item 3', { signal });
 * for await (const e of stream) if (e.type === 'text') process.stdout.write(e.text);
 * const turn = await stream.turn;
 * ```
 */
export interface TurnStream extends AsyncIterable<StreamEvent> {
  /** The finished turn (what `ask` resolves with); resolves even when nobody iterates. */
  readonly turn: Promise<Turn>;
  /** Cancels the turn (as its signal would). */
  cancel(): void;
}

/** Buffered text deltas of one endpoint, read as one `text` event. */
interface TextRun {
  readonly type: 'text-run';
  readonly endpointId: string;
  readonly parts: string[];
}

/** What the runtime pushes events into while a streamed turn runs. @internal */
export interface TurnStreamSink {
  push(event: StreamEvent): void;
  /** The engine step the last events belonged to (-1 before any). */
  lastStep: number;
}

/**
 * The queue between the runtime (pushing) and the consumer (`for await`). Reads made before their event exists
 * wait in order (the AsyncIterator protocol lets a caller make several at once); no promise is made for an event
 * that is already queued. While the consumer is not reading, adjacent text deltas from one endpoint are merged
 * into one event (same text, same order): an unread stream holds its text, not one object per delta. @internal
 */
export class TurnEventChannel implements TurnStream, TurnStreamSink, AsyncIterator<StreamEvent> {
  readonly turn: Promise<Turn>;
  lastStep = -1;
  // A run of buffered deltas of one endpoint is kept as its pieces and joined when read: appending to one string
  // would build a rope of one node per delta (tens of bytes each), as large as the events it replaces.
  #queue: (StreamEvent | TextRun)[] = [];
  #head = 0;
  // Reads waiting for an event, in order, as flat (resolve, reject) pairs: a streamed answer makes one read per
  // delta, so no object per read beyond its promise.
  #waiting: ((r: never) => void)[] = [];
  // The one executor every waiting read's promise is made with (no closure per read).
  readonly #wait = (
    resolve: (r: IteratorResult<StreamEvent>) => void,
    reject: (e: unknown) => void,
  ): void => {
    this.#waiting.push(resolve, reject);
  };
  #ended = false;
  #returned = false;
  #failure: unknown;
  readonly #cancel: () => void;

  constructor(turn: Promise<Turn>, cancel: () => void) {
    this.#cancel = cancel;
    this.turn = turn.then(
      (t) => {
        this.push({ type: 'done', turn: t });
        this.#ended = true;
        this.#wake();
        return t;
      },
      (e: unknown) => {
        this.#failure = e ?? new Error('the streamed turn failed');
        this.#ended = true;
        this.#wake();
        throw e;
      },
    );
    // Whoever only iterates gets the failure from the iterator; `turn` must not also be an unhandled rejection.
    this.turn.catch(() => {});
  }

  push(event: StreamEvent): void {
    if (this.#ended || this.#returned) return;
    if (this.#waiting.length > 0) {
      const resolve = this.#waiting.shift() as (r: IteratorResult<StreamEvent>) => void;
      this.#waiting.shift();
      resolve({ value: event, done: false });
      return;
    }
    if (event.type === 'text') {
      const last = this.#queue.length > this.#head ? this.#queue[this.#queue.length - 1] : undefined;
      if (last?.type === 'text-run' && last.endpointId === event.endpointId) last.parts.push(event.text);
      else this.#queue.push({ type: 'text-run', endpointId: event.endpointId, parts: [event.text] });
      return;
    }
    this.#queue.push(event);
  }

  next(): Promise<IteratorResult<StreamEvent>> {
    if (this.#head < this.#queue.length) {
      const item = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as never;
      if (this.#head > 64 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      const value: StreamEvent =
        item.type === 'text-run'
          ? { type: 'text', text: item.parts.join(''), endpointId: item.endpointId }
          : item;
      return Promise.resolve({ value, done: false });
    }
    if (this.#failure !== undefined && !this.#returned) return Promise.reject(this.#failure);
    if (this.#ended || this.#returned) return Promise.resolve({ value: undefined, done: true });
    return new Promise(this.#wait);
  }

  return(): Promise<IteratorResult<StreamEvent>> {
    if (!this.#returned) {
      this.#returned = true;
      this.#queue = [];
      this.#head = 0;
      if (!this.#ended) this.#cancel();
      this.#wake();
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  cancel(): void {
    this.#cancel();
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    return this;
  }

  /** The stream ended (or was returned): every read still waiting settles, in order. */
  #wake(): void {
    if (this.#head < this.#queue.length) return;
    const waiting = this.#waiting.splice(0);
    for (let i = 0; i + 1 < waiting.length; i += 2) {
      if (this.#failure !== undefined && !this.#returned)
        (waiting[i + 1] as (e: unknown) => void)(this.#failure);
      else (waiting[i] as (r: IteratorResult<StreamEvent>) => void)({ value: undefined, done: true });
    }
  }
}

/**
 * How a streamed ask is cancelled (the stream's `cancel()`, a `break`, or the caller's signal), without an
 * `AbortController` per turn: an LLM agent's ask registers its cancel with {@link StreamCancel.onCancel}; a handle
 * that takes a signal reads {@link StreamCancel.signal}, made only then. @internal
 */
export class StreamCancel {
  #fn: (() => void) | undefined;
  #controller: AbortController | undefined;
  #reason: unknown;
  #cancelled = false;

  get cancelled(): boolean {
    return this.#cancelled;
  }

  /** A signal that aborts when the stream is cancelled (made on first use). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#cancelled) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** `fn` runs once when the stream is cancelled (at once if it already was). One per stream: the ask's. */
  onCancel(fn: () => void): void {
    if (this.#cancelled) fn();
    else this.#fn = fn;
  }

  cancel(reason: unknown): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.#reason = reason;
    const fn = this.#fn;
    this.#fn = undefined;
    fn?.();
    this.#controller?.abort(reason);
  }
}

/**
 * Runs `ask` as a streamed turn: its events go to the returned stream (the sink `ask` is given travels with that
 * one ask, never looked up by turn id: two turns sharing a caller-chosen id cannot see each other's text); the
 * stream's cancel (or a `break`), or the caller's `signal`, cancels the ask through `cancel`. @internal
 */
export function streamAsk(
  signal: AbortSignal | undefined,
  ask: (sink: TurnStreamSink, cancel: StreamCancel) => Promise<Turn>,
): TurnStream {
  const cancel = new StreamCancel();
  let settle!: (t: Turn) => void;
  let fail!: (e: unknown) => void;
  const turn = new Promise<Turn>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  const channel = new TurnEventChannel(turn, () => cancel.cancel(new Error('the stream was cancelled')));
  // Without a signal (the common streamed turn) there is no listener to take off: the ask settles the turn as is.
  if (!signal) {
    ask(channel, cancel).then(settle, fail);
    return channel;
  }
  // Through the fan-out: a run hands one signal to every agent's streamed ask, and a listener per ask on it is
  // Node's MaxListenersExceededWarning at the 11th agent (`breakwater run --stream`).
  const off = onAbort(signal, () => cancel.cancel(signal.reason));
  ask(channel, cancel).then(
    (t) => {
      off();
      settle(t);
    },
    (e: unknown) => {
      off();
      fail(e);
    },
  );
  return channel;
}
