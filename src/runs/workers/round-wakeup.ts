import { sql } from 'kysely';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { RoundNotices } from './round-notices.ts';

/** The channel a worker NOTIFYs (payload: the run id) when it staged a part, committed a round or ended a run. */
export const ROUND_CHANNEL = 'breakwater_round_parts';

/**
 * Tells the workers waiting on a run that its round moved (a part staged, a round committed, the run ended). Best
 * effort: a lost notification only costs a waiter its fallback poll.
 *
 * @example
 * ```ts
 * if (await stagePart(database, claim, turns, state)) await notifyRound(database, claim.runId);
 * ```
 */
export async function notifyRound(database: Pick<BreakwaterDatabase, 'db'>, runId: string): Promise<void> {
  await sql`select pg_notify(${ROUND_CHANNEL}, ${runId})`.execute(database.db).catch(() => {});
}

/** An idle worker's wait, woken early when its run's round moves. */
export interface RoundWakeup {
  /** True while notifications are received (else every wait is its fallback poll). */
  readonly listening: boolean;
  /** A mark of the notifications received so far: take it BEFORE reading the state a wait is about. */
  mark(): number;
  /**
   * Waits until a notification for `runId` (any run when undefined) arrives after `since` (a {@link mark}: one that
   * came while the caller was reading ends the wait at once), at most `fallbackMs` (the bounded poll that also covers
   * what sends no notification: a lease running out, a lost connection), or until `signal`.
   */
  wait(runId: string | undefined, fallbackMs: number, since: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** Backoff of the LISTEN connection made again after a loss, ms. */
const RELISTEN_MIN_MS = 500;
const RELISTEN_MAX_MS = 10_000;

/**
 * LISTENs on {@link ROUND_CHANNEL} on a dedicated connection (a pooled one would lose the subscription), so a
 * worker waiting at the round barrier goes on as soon as the last part is staged or the round is committed,
 * instead of at its next poll. Without the connection (it could not be made, or was lost) every wait is just its
 * fallback poll until the connection is made again in the background (after 0.5 s, doubling up to 10 s); once it
 * is, every wait looks again, since notifications sent meanwhile were lost.
 *
 * @example
 * ```ts
 * const wakeup = await listenForRounds(databaseUrl);
 * const since = wakeup.mark(); // before reading the parts: a notification after it is not lost
 * await wakeup.wait(runId, 1_000, since, signal);
 * await wakeup.close();
 * ```
 */
export async function listenForRounds(url: string, timeoutMs = 5_000): Promise<RoundWakeup> {
  const notices = new RoundNotices();
  // Loaded here, not on import: `breakwater run` without workers never loads it through this module.
  const { default: pg } = await import('pg');
  let client: InstanceType<typeof pg.Client> | undefined;
  /** LISTEN done on `client`: notifications arrive (not while a connection is still being made). */
  let listening = false;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let retryMs = RELISTEN_MIN_MS;
  const drop = (c: InstanceType<typeof pg.Client>) => {
    if (client !== c) return;
    client = undefined;
    listening = false;
    void c.end().catch(() => {});
    // A connection that could not be made or was lost is made again in the background, so a worker that met a
    // busy or restarting server goes back to NOTIFY instead of polling for the rest of its life.
    if (!closed && !retry) {
      retry = setTimeout(() => {
        retry = undefined;
        void listen();
      }, retryMs);
      retry.unref?.();
      retryMs = Math.min(retryMs * 2, RELISTEN_MAX_MS);
    }
  };
  const listen = async (): Promise<void> => {
    if (closed || client) return;
    const c = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
      keepAlive: true,
      // The process id tells an operator (pg_stat_activity) which worker process a LISTEN session belongs to.
      application_name: `breakwater-worker-rounds ${process.pid}`,
    });
    client = c;
    c.on('error', () => drop(c));
    c.on('end', () => drop(c));
    c.on('notification', (n) => {
      if (n.channel === ROUND_CHANNEL) notices.notified(n.payload);
    });
    try {
      await c.connect();
      await c.query(`listen ${ROUND_CHANNEL}`);
    } catch {
      drop(c);
      return;
    }
    if (closed || client !== c) return void c.end().catch(() => {});
    listening = true;
    const again = retryMs > RELISTEN_MIN_MS;
    retryMs = RELISTEN_MIN_MS;
    // Listening again after a gap: notifications sent meanwhile were lost.
    if (again) notices.resumed();
  };
  await listen();
  return {
    get listening() {
      return listening;
    },
    mark: () => notices.mark(),
    wait(runId, fallbackMs, since, signal) {
      return notices.wait(runId, fallbackMs, since, signal);
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      notices.wakeAll();
      const c = client;
      client = undefined;
      listening = false;
      await c?.end().catch(() => {});
    },
  };
}
