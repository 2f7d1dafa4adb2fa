import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import { type CallAbort, signalAbort } from '../core/call-abort.ts';
import { type CallCredential, redactKeyIn } from './call-credential.ts';
import { type CredentialFetchInit, credentialFetch, ON_BODY_CHUNK } from './credential-fetch.ts';
import { afterPendingIo } from './after-pending-io.ts';
import { stampReads } from './stamp-reads.ts';

/**
 * Per-call deadlines and response capture for every SDK, in one place.
 *
 * The SDKs' own timeouts stop at the response headers: a body that stalls after a 200 hangs until
 * undici's 300 s body timeout. So each engine hands {@link timedFetch} to its SDK as the `fetch`
 * option, and the fetch finds its call's deadlines one of two ways:
 * - in the fetch's `init`, under {@link TIMED_CALL} ({@link timedFetchOptions}), for an SDK that hands a
 *   request's `fetchOptions` to its fetch unchanged (`openai`): no `AsyncLocalStorage`, so the process
 *   never turns on promise hooks for it (on Node 20 they cost every promise in the process, the caller's
 *   own included);
 * - else from {@link runTimedCall}'s `AsyncLocalStorage` store, which the SDK's internal awaits keep.
 */

/** Why the adapter cut a call itself. */
export type TimedOutPhase = 'headers' | 'idle';

/** The live state of one call: its deadlines in, what the wire said out. */
export interface TimedCall {
  readonly clock: Clock;
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  /** Run-clock ms per endpoint ms the deadlines were scaled by (a wall-time endpoint on a scaled clock): for the messages. */
  readonly wireScale: number;
  /** The caller's cancellation (its signal, or the runtime's); aborting it aborts the request and the body read. */
  readonly caller: CallAbort | undefined;
  /**
   * The call's sealed key, when the endpoint has one: requests then go through `credentialFetch` (the key
   * is put on the wire from a wiped buffer) and an error body has the key's bytes removed before it is
   * read as text.
   */
  readonly credential: CallCredential | undefined;
  /** Set when one of our deadlines fired. */
  timedOut: TimedOutPhase | undefined;
  /** Wall-clock epoch ms (`Date.now`, or the injected one). What reset instants are read against. */
  readonly wallNow: () => number;
  status: number | undefined;
  headers: Headers | undefined;
  /** The run clock's now when the response headers arrived. */
  clockAtHeaders: number | undefined;
  /** The wall clock's now when the response headers arrived. */
  wallAtHeaders: number | undefined;
  /** Body text of a non-2xx response (error bodies are small; success bodies are not copied). */
  bodyText: string | undefined;
  /** Cleanups still owed (timers, listeners); run by {@link endTimedCall}. */
  cleanup: (() => void) | undefined;
  /**
   * A streamed call: its success body is handed to the SDK as it is (no wrapping stream, one hop less per chunk);
   * every chunk stamps {@link TimedCall.lastActivity} (as it arrives with a key, else as the SDK reads it).
   */
  streamed: boolean;
  /** The run clock's now at the last sign of life of the body (the idle deadline counts from it). */
  lastActivity: number;
}

/**
 * Creates the state of one call. Pass it to {@link runTimedCall} and, when the call settled,
 * to {@link endTimedCall}.
 */
export function beginTimedCall(
  clock: Clock,
  headersTimeoutMs: number,
  idleTimeoutMs: number,
  caller: CallAbort | AbortSignal | undefined,
  wallNow: () => number = Date.now,
  credential?: CallCredential,
  wireScale = 1,
): TimedCall {
  return {
    clock,
    headersTimeoutMs,
    idleTimeoutMs,
    wireScale,
    caller: caller instanceof AbortSignal ? signalAbort(caller) : caller,
    wallNow,
    credential,
    timedOut: undefined,
    status: undefined,
    headers: undefined,
    clockAtHeaders: undefined,
    wallAtHeaders: undefined,
    bodyText: undefined,
    cleanup: undefined,
    streamed: false,
    lastActivity: 0,
  };
}

/** Clears every timer and listener the call still holds. Idempotent. */
export function endTimedCall(call: TimedCall): void {
  const c = call.cleanup;
  call.cleanup = undefined;
  c?.();
}

const storage = new AsyncLocalStorage<TimedCall>();

/**
 * The `init` key under which a fetch finds its call (see {@link timedFetchOptions}).
 */
export const TIMED_CALL: unique symbol = Symbol('breakwater.timedCall');

/** A request's fetch options that carry its call to {@link timedFetch} (no standard `RequestInit` field set). */
export interface TimedFetchOptions {
  readonly [TIMED_CALL]: TimedCall;
}

/**
 * Fetch options that make every fetch of one SDK request governed by `call`, for an SDK that passes a
 * request's `fetchOptions` to its `fetch` as they are (no {@link runTimedCall} around the call then).
 *
 * @example
 * ```ts
 * const call = beginTimedCall(systemClock, 5_000, 2_000, signal);
 * try { return await client.chat.completions.create(body, { fetchOptions: timedFetchOptions(call) }); }
 * finally { endTimedCall(call); }
 * ```
 */
export function timedFetchOptions(call: TimedCall): TimedFetchOptions {
  return { [TIMED_CALL]: call };
}

/**
 * Runs `fn` (one SDK call) so that every fetch it makes is governed by `call`.
 *
 * @example
 * ```ts
 * const call = beginTimedCall(systemClock, 5_000, 2_000, signal);
 * try { return await runTimedCall(call, () => client.messages.create(body)); }
 * finally { endTimedCall(call); }
 * ```
 */
export function runTimedCall<T>(call: TimedCall, fn: () => Promise<T>): Promise<T> {
  return storage.run(call, fn);
}

/** The error a request or body read fails with when one of our deadlines fired. */
export class DeadlineError extends Error {
  readonly code = 'ENGINE_DEADLINE' as const;
  readonly phase: TimedOutPhase;
  /** `ms` on the run's clock; `scale` ≠ 1 when that is the endpoint's own deadline scaled (the message says both). */
  constructor(phase: TimedOutPhase, ms: number, scale = 1) {
    const span =
      scale === 1
        ? `${ms} ms`
        : `${Math.round(ms / scale)} ms of the endpoint's time (${ms} ms of the run's clock)`;
    super(
      phase === 'headers'
        ? `no response headers within ${span} (timed out)`
        : `response body idle for ${span} (timed out)`,
    );
    // SDKs recognise an abort by name; our deadline is an abort from their point of view.
    this.name = 'AbortError';
    this.phase = phase;
  }
}

/**
 * A `fetch` for the SDKs' `fetch` option. Outside {@link runTimedCall} it is plain `fetch`.
 * Inside, it arms the header deadline, links the caller's and the SDK's signals, records the
 * status and headers, copies error bodies as text, and wraps a success body in a stream whose
 * reads re-arm the idle deadline.
 */
export const timedFetch: typeof fetch = async (input, init) => {
  const carried = (init as Partial<TimedFetchOptions> | undefined)?.[TIMED_CALL];
  const call = carried ?? storage.getStore();
  if (!call) return fetch(input, init);
  // The platform fetch is not given our key (an own symbol property would travel on in `{ ...init }`).
  if (carried) init = withoutCall(init!);

  const { clock } = call;
  const watch = watchFetch(call, init?.signal ?? undefined);
  const { release } = watch;

  const stamp = () => {
    call.lastActivity = clock.now();
  };
  // A streamed call with a key: `credentialFetch` stamps each body chunk as it arrives (no hook on the SDK's reads).
  const stampedBelow = call.streamed && call.credential !== undefined;
  let response: Response;
  try {
    const sent: CredentialFetchInit = { ...init, signal: watch.controller.signal };
    response = call.credential
      ? await credentialFetch(input, stampedBelow ? { ...sent, [ON_BODY_CHUNK]: stamp } : sent)
      : await fetch(input, sent);
  } catch (err) {
    release();
    if (call.timedOut) throw new DeadlineError(call.timedOut, call.headersTimeoutMs, call.wireScale);
    throw err;
  } finally {
    watch.answered = true;
    clock.clearTimeout(watch.headersTimer);
  }
  call.status = response.status;
  call.headers = response.headers;
  call.clockAtHeaders = clock.now();
  call.wallAtHeaders = call.wallNow();
  if (!response.body) {
    release();
    return response;
  }

  armIdleDeadline(call, watch);
  // Any bytes are a sign of life, including what an SDK's parser drops (Anthropic `ping` events, SSE comments):
  // stamping only the events an SDK yields cut live streams whose content was slow while the provider kept
  // pinging. A streamed success body stays the SDK's own stream (a wrapping stream costs a pull cycle per chunk):
  // each chunk is stamped as it arrives (`credentialFetch`) or, over the platform fetch, as the SDK reads it; the
  // idle deadline aborts the request, which errors the body like any cut.
  if (call.streamed && response.ok) {
    if (!stampedBelow) stampReads(response.body, stamp);
    return response;
  }

  const body = idleWatchedBody(call, watch, response.body);
  const init2 = { status: response.status, statusText: response.statusText, headers: response.headers };
  if (response.ok) return new Response(body, init2);
  // Error bodies are small and the classifier needs them raw (Gemini-compat's array body is lost
  // by the OpenAI SDK), so read them here under the idle deadline and hand the SDK a copy. A provider
  // that echoes the key gets it cut out of the bytes, before any string of them exists.
  const bytes = redactKeyIn(call.credential, Buffer.from(await new Response(body).arrayBuffer()));
  const text = bytes.toString('utf8');
  call.bodyText = text;
  return new Response(text, init2);
};

/** One fetch of a timed call: what cuts it (its controller, its deadlines' timers) and how it lets go of them. */
interface FetchWatch {
  /** The platform fetch's signal: aborted by the SDK's signal, the caller's cancellation, or a deadline. */
  readonly controller: AbortController;
  /** Clears the timers and listeners and lets the clock go; also run by the call's cleanup. */
  readonly release: () => void;
  headersTimer: unknown;
  idleTimer: unknown;
  /** The controller of the body stream handed to the SDK (a body that is wrapped): an idle deadline errors it. */
  bodyController: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** The response headers came (or the request failed): the header deadline has nothing left to cut. */
  answered: boolean;
  /** Released: a deadline firing late has nothing left to cut. */
  ended: boolean;
}

/**
 * Starts watching one fetch of `call`: links the SDK's signal and the caller's cancellation to a controller of its
 * own, holds the clock, chains its release into the call's cleanup, and arms the header deadline.
 */
function watchFetch(call: TimedCall, sdkSignal: AbortSignal | undefined): FetchWatch {
  const { clock } = call;
  const controller = new AbortController();
  const caller = call.caller;
  const abort = () => controller.abort();
  sdkSignal?.addEventListener('abort', abort, { once: true });
  // The caller's cancellation, unless it is the very signal the SDK passed on (listened to above).
  const offCaller =
    caller && (caller.signal === undefined || caller.signal !== sdkSignal)
      ? caller.onAbort(abort)
      : undefined;
  if (sdkSignal?.aborted || caller?.aborted) controller.abort();

  // From send to the last body byte the call is real work: a virtual clock must not jump over it.
  const unhold = holdClock(clock);
  const watch: FetchWatch = {
    controller,
    release: () => {
      watch.ended = true;
      unhold();
      clock.clearTimeout(watch.headersTimer);
      if (watch.idleTimer !== undefined) clock.clearTimeout(watch.idleTimer);
      sdkSignal?.removeEventListener('abort', abort);
      offCaller?.();
    },
    headersTimer: undefined,
    idleTimer: undefined,
    bodyController: undefined,
    answered: false,
    ended: false,
  };
  const { release } = watch;
  const previous = call.cleanup;
  call.cleanup = previous
    ? () => {
        previous();
        release();
      }
    : release;

  watch.headersTimer = clock.setTimeout(
    () =>
      afterPendingIo(clock, () => {
        if (watch.answered) return;
        call.timedOut = 'headers';
        controller.abort(new DeadlineError('headers', call.headersTimeoutMs, call.wireScale));
      }),
    call.headersTimeoutMs,
  );
  return watch;
}

/** Arms the idle deadline of a body being read: it counts from {@link TimedCall.lastActivity}, stamped now. */
function armIdleDeadline(call: TimedCall, watch: FetchWatch): void {
  const { clock } = call;
  // One timer per call, not per chunk: a chunk only stamps the time, and the timer re-arms itself
  // for the remainder when it finds the body was active. That keeps per-chunk work to one clock read.
  const idleMs = call.idleTimeoutMs;
  const onIdle = () => {
    const quiet = clock.now() - call.lastActivity;
    if (quiet < idleMs) {
      watch.idleTimer = clock.setTimeout(onIdle, idleMs - quiet);
      return;
    }
    watch.idleTimer = undefined;
    afterPendingIo(clock, expireIdle);
  };
  const expireIdle = () => {
    // Bytes read meanwhile (they had arrived while this process was starved): the body is alive.
    const quiet = clock.now() - call.lastActivity;
    if (watch.ended) return;
    if (quiet < idleMs) {
      watch.idleTimer = clock.setTimeout(onIdle, idleMs - quiet);
      return;
    }
    call.timedOut = 'idle';
    const err = new DeadlineError('idle', idleMs, call.wireScale);
    try {
      watch.bodyController?.error(err);
    } catch {
      // the stream already closed
    }
    watch.controller.abort(err);
  };
  call.lastActivity = clock.now();
  watch.idleTimer = clock.setTimeout(onIdle, idleMs);
}

/** The body handed to the SDK in place of `source`: each read stamps activity; its end or failure releases the fetch. */
function idleWatchedBody(
  call: TimedCall,
  watch: FetchWatch,
  source: ReadableStream<Uint8Array>,
): ReadableStream<Uint8Array> {
  const { clock, idleTimeoutMs: idleMs } = call;
  const { release } = watch;
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        watch.bodyController = c;
      },
      async pull(c) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            release();
            c.close();
            return;
          }
          call.lastActivity = clock.now();
          c.enqueue(value);
        } catch (err) {
          release();
          c.error(call.timedOut === 'idle' ? new DeadlineError('idle', idleMs, call.wireScale) : err);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

function withoutCall(init: RequestInit): RequestInit {
  const { [TIMED_CALL]: _call, ...rest } = init as RequestInit & Partial<TimedFetchOptions>;
  return rest;
}
