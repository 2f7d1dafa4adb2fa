import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { BreakwaterDatabase } from './open-database.ts';
import { RunNotFoundError } from './store-errors.ts';

/**
 * Another live process drives the run: it holds the run's lease. Nothing was changed.
 *
 * @example
 * ```ts
 * try { await acquireRunLease(database, runId); } catch (e) { if (isRunLeaseHeldError(e)) console.error(e.message); }
 * ```
 */
export class RunLeaseHeldError extends Error {
  readonly code = 'RUN_LEASE_HELD' as const;
  readonly runId: string;
  readonly holder: string;
  readonly expiresAt: number;
  constructor(runId: string, holder: string, expiresAt: number) {
    super(
      `run "${runId}" is being driven by another process (${holder}); only one process may drive a run at a time — wait for it to finish, or stop it (its lease then expires by ${new Date(expiresAt).toISOString()})`,
    );
    this.name = 'RunLeaseHeldError';
    this.runId = runId;
    this.holder = holder;
    this.expiresAt = expiresAt;
  }
}

/** Type guard for {@link RunLeaseHeldError} (also matches by `code`). */
export function isRunLeaseHeldError(e: unknown): e is RunLeaseHeldError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'RUN_LEASE_HELD';
}

/** `host:pid:nonce` names a process of this host that no longer exists. */
function deadOnThisHost(holder: string): boolean {
  const [host, pidText] = holder.split(':');
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as { code?: string }).code === 'ESRCH';
  }
}

/** A held run lease: renewed by a heartbeat until released. */
export interface RunLease {
  /** Who holds it: `host:pid:nonce`. */
  readonly holder: string;
  /** Stops the heartbeat and frees the run (only if this process still holds it). Safe to call twice. */
  release(): Promise<void>;
}

/** Options of {@link acquireRunLease}. */
export interface RunLeaseOptions {
  /** How long the lease lives without a heartbeat, ms: a dead holder's lease expires after this. Default 15 000. */
  readonly ttlMs?: number;
  /** Heartbeat period, ms. Default `ttlMs / 3`. */
  readonly heartbeatMs?: number;
  /** The holder's name. Default `host:pid:nonce`. */
  readonly holder?: string;
}

/**
 * Takes the run's lease, so one process drives a run at a time: a compare-and-set on `runs` (`lease_holder`,
 * `lease_expires_at`, with the database's own clock so every process agrees), renewed every `heartbeatMs`. A
 * holder that died stops renewing and its lease expires after `ttlMs`; one that died on this host (its pid is
 * gone) is taken over at once.
 *
 * @throws {RunLeaseHeldError} naming the live holder
 * @throws {RunNotFoundError}
 * @example
 * ```ts
 * const lease = await acquireRunLease(database, runId);
 * try { await runRounds(…); } finally { await lease.release(); }
 * ```
 */
export async function acquireRunLease(
  database: Pick<BreakwaterDatabase, 'db'>,
  runId: string,
  options: RunLeaseOptions = {},
): Promise<RunLease> {
  const { db } = database;
  const ttlMs = options.ttlMs ?? 15_000;
  const holder = options.holder ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const ttl = sql`make_interval(secs => ${ttlMs / 1000})`;
  const take = (from?: string) =>
    db
      .updateTable('runs')
      .set({ lease_holder: holder, lease_expires_at: sql<Date>`now() + ${ttl}` })
      .where('run_id', '=', runId)
      .where((eb) =>
        from !== undefined
          ? eb('lease_holder', '=', from)
          : eb.or([
              eb('lease_holder', 'is', null),
              eb('lease_expires_at', '<', sql<Date>`now()`),
              eb('lease_holder', '=', holder),
            ]),
      )
      .returning('run_id')
      .executeTakeFirst();
  let took = await take();
  if (!took) {
    const row = await db
      .selectFrom('runs')
      .select(['lease_holder', 'lease_expires_at'])
      .where('run_id', '=', runId)
      .executeTakeFirst();
    if (!row) throw new RunNotFoundError(runId);
    // A holder on this host whose process is gone (SIGKILL, a crash) cannot renew: its lease is void now, not
    // only once it expires. Taken over with a compare-and-set on that exact holder, so two takers cannot both win.
    if (row.lease_holder && deadOnThisHost(row.lease_holder)) took = await take(row.lease_holder);
  }
  if (!took) {
    const row = await db
      .selectFrom('runs')
      .select(['lease_holder', 'lease_expires_at'])
      .where('run_id', '=', runId)
      .executeTakeFirst();
    if (!row) throw new RunNotFoundError(runId);
    throw new RunLeaseHeldError(
      runId,
      row.lease_holder ?? 'unknown',
      row.lease_expires_at ? new Date(row.lease_expires_at).getTime() : 0,
    );
  }
  const renew = () =>
    db
      .updateTable('runs')
      .set({ lease_expires_at: sql<Date>`now() + ${ttl}` })
      .where('run_id', '=', runId)
      .where('lease_holder', '=', holder)
      .execute()
      .catch(() => {});
  const timer = setInterval(renew, options.heartbeatMs ?? Math.max(100, Math.floor(ttlMs / 3)));
  timer.unref();
  let released: Promise<void> | undefined;
  return {
    holder,
    release() {
      clearInterval(timer);
      released ??= db
        .updateTable('runs')
        .set({ lease_holder: null, lease_expires_at: null })
        .where('run_id', '=', runId)
        .where('lease_holder', '=', holder)
        .execute()
        .then(() => undefined);
      return released;
    },
  };
}
