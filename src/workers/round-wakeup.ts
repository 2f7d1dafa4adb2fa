import { sql } from 'kysely';
import type { BreakwaterDatabase } from '../store/open-database.ts';

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

/**
 * LISTENs on {@link ROUND_CHANNEL} on a dedicated connection (a pooled one would lose the subscription), so a
 * worker waiting at the round barrier goes on as soon as the last part is staged or the round is committed,
 * instead of at its next poll. Without the connection (it could not be made, or was lost) every wait is just its
 * fallback poll.
 *
 * @example
 * ```ts
 * const wakeup = await listenForRounds(databaseUrl);
 * await wakeup.wait(runId, 1_000, signal);
 * await wakeup.close();
 * ```
 */
export async function listenForRounds(url: string, timeoutMs = 5_000): Promise<RoundWakeup> {
  const waiters = new Set<{ runId: string | undefined; wake: () => void }>();
  let count = 0;
  /** The count at the last notification for each run (and for any run). */
  const last = new Map<string | undefined, number>();
  // Loaded here, not on import: `breakwater run` without workers never loads it through this module.
  const { default: pg } = await import('pg');
  let client: InstanceType<typeof pg.Client> | undefined = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    keepAlive: true,
    application_name: 'breakwater-worker-rounds',
  });
  const drop = () => {
    const c = client;
    client = undefined;
    void c?.end().catch(() => {});
  };
  client.on('error', drop);
  client.on('notification', (n) => {
    if (n.channel !== ROUND_CHANNEL) return;
    count++;
    last.set(n.payload, count);
    last.set(undefined, count);
    for (const w of waiters) if (w.runId === undefined || w.runId === n.payload) w.wake();
  });
  try {
    await client.connect();
    await client.query(`listen ${ROUND_CHANNEL}`);
  } catch {
    drop();
  }
  return {
    get listening() {
      return client !== undefined;
    },
    mark: () => count,
    wait(runId, fallbackMs, since, signal) {
      return new Promise<void>((resolve) => {
        if (signal?.aborted || (last.get(runId) ?? 0) > since) return resolve();
        const waiter = { runId, wake: () => done() };
        const timer = setTimeout(() => done(), fallbackMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(waiter);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        waiters.add(waiter);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    async close() {
      for (const w of waiters) w.wake();
      drop();
    },
  };
}
