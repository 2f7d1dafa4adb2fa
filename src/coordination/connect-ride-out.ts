import { isConnectionFailure } from '../store/guarded-pg-pool.ts';

/**
 * How a PostgreSQL coordination backend rides out a connection that is cut under it (an administrator's
 * `pg_terminate_backend`, a proxy's reset, a server restarting), while it connects or under one statement: each
 * attempt on a fresh connection, a bounded number of attempts with a growing pause between them, all within one
 * window. What a cut is not (a refused connection, a wrong password, a server that does not answer in time) ends
 * it at once.
 */
export interface RideOut {
  /** The whole connect, every attempt and pause, ends within this, real ms. */
  readonly windowMs: number;
  /** Attempts at most. */
  readonly attempts: number;
  /** The first pause, ms; doubled after each cut, up to {@link maxPauseMs}. */
  readonly firstPauseMs: number;
  readonly maxPauseMs: number;
}

/**
 * The default: long enough for a connection pool's worth of terminated backends and a server that restarts
 * (PostgreSQL answers 57P03 "starting up" for a second or two), short enough that a worker or a run told to
 * coordinate somewhere gone says so within seconds.
 */
export const DEFAULT_CONNECT_RIDE_OUT: RideOut = {
  windowMs: 15_000,
  attempts: 8,
  firstPauseMs: 100,
  maxPauseMs: 2_000,
};

/**
 * One statement cut under it: asked again on fresh connections. More attempts than a process has pinned
 * connections (each may have been cut with the first, its error not read yet), short pauses, a few seconds in
 * all: a token's waiters answer degraded if the backend is failed closed, so a cut is not reason enough.
 */
export function statementRideOut(connections: number): RideOut {
  return { windowMs: 5_000, attempts: connections + 3, firstPauseMs: 10, maxPauseMs: 500 };
}

/**
 * True when `e` is a connection cut while the server is up (worth another attempt on a fresh connection): the
 * server ended it (57P01 admin shutdown, 57P02, 57P03 starting up, 53300 too many connections), or it was reset.
 * Not a refused connection (nothing listens: said at once), not a timeout (a frozen server: failed closed at once,
 * as every statement is), not SQL, authentication or a missing database.
 */
export function isConnectCut(e: unknown): boolean {
  // A failed migration wraps the driver's error: the first connection failure in the cause chain decides.
  const seen = new Set<unknown>();
  let at: unknown = e;
  while (at !== null && typeof at === 'object' && !seen.has(at) && !isConnectionFailure(at)) {
    seen.add(at);
    at = (at as { cause?: unknown }).cause;
  }
  if (!isConnectionFailure(at)) return false;
  const { code, message } = at as { code?: unknown; message?: unknown };
  const text = `${typeof message === 'string' ? message : ''} ${String(code ?? '')}`;
  if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH/.test(text)) return false;
  if (/timeout|timed out|ETIMEDOUT/i.test(text)) return false;
  // A server that speaks another protocol is not going to start speaking PostgreSQL on the next attempt.
  if (
    /unknown message code|invalid (?:response|message)|Received unexpected|unexpected message|SSL|ssl/.test(
      text,
    )
  )
    return false;
  return true;
}

/**
 * Runs `attempt` until it succeeds (a connect, or one statement), retrying only cuts ({@link isConnectCut}) within `policy`; `stopped` is
 * asked before each attempt and after each pause (a backend closed meanwhile stops at once).
 *
 * @returns the last attempt's result
 * @throws the last attempt's error, with `attempts` (how many were made) and `elapsedMs` on it
 * @example
 * ```ts
 * await rideOutCuts((n) => connectOnce(n), DEFAULT_CONNECT_RIDE_OUT, signal, () => closed);
 * ```
 */
export async function rideOutCuts<T>(
  attempt: (n: number) => Promise<T>,
  policy: RideOut,
  signal: AbortSignal | undefined,
  stopped: () => unknown,
  /** Called after each cut, before the pause (to drop connections the cut most likely broke too). */
  onCut: (e: unknown) => void = () => {},
  now: () => number = () => performance.now(),
): Promise<T> {
  const start = now();
  let pause = policy.firstPauseMs;
  for (let n = 1; ; n++) {
    const halt = stopped();
    if (halt) throw halt;
    signal?.throwIfAborted();
    try {
      return await attempt(n);
    } catch (e) {
      const left = policy.windowMs - (now() - start);
      if (!isConnectCut(e) || n >= policy.attempts || left <= pause || signal?.aborted)
        throw Object.assign(e instanceof Error ? e : new Error(String(e)), {
          attempts: n,
          elapsedMs: Math.round(now() - start),
        });
      onCut(e);
      await sleep(pause, signal);
      pause = Math.min(policy.maxPauseMs, pause * 2);
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
