/**
 * One statement per round trip for a process's token grants and give-backs on PostgreSQL.
 *
 * Why: a grant is an acquire and a release, and each used to be a statement of its own. Per statement the node
 * client and the server each spend about as much CPU as the statement's work itself, so on a small machine the
 * statements, not the row locks, capped the grants per second (bench/coordination.ts). Here the acquires and
 * releases a process asks for while its statements are in flight are gathered and sent as one statement: the
 * releases first-come, the acquires taking up to as many free slots as were asked for. Each caller still gets its
 * own answer, and nothing is held back longer than one statement's round trip.
 *
 * The statement never waits for a row lock (acquires and releases both skip locked rows), so it cannot take part
 * in a deadlock with another process's statement or with this process's renewal. A release it skipped (its row
 * was locked: a renewal in flight, or another process taking the expired lease) is answered `false`, and the
 * caller gives it back the old way, with a statement that waits for the lock.
 */

/** The statement: `$1` pool, `$2` limit, `$3` holder, `$4`/`$5` slots/generations to give back, `$6` how many
 * to take, `$7` where the search starts, `$8` lease TTL ms. Rows: `k` = 'a' (granted slot, generation),
 * 'r' (released slot). A release wakes waiters with NOTIFY only while the pool's wait mark (slot -1) is set. */
export const TOKEN_BATCH_SQL = `
with l as (select * from unnest($4::int[], $5::bigint[]) as l(slot, generation)),
rs as (
  select x.slot from coordination_tokens x join l on x.slot = l.slot and x.generation = l.generation
  where x.pool = $1 and x.holder = $3 for update of x skip locked
),
r as (
  update coordination_tokens t set holder = null, expires_at = null
  from rs where t.pool = $1 and t.slot = rs.slot
  returning t.slot
),
c as (
  select slot from coordination_tokens
  where pool = $1 and slot >= 0 and slot < $2 and (holder is null or expires_at < now())
    and slot <> all($4::int[])
  order by (slot + $7::int) % $2::int limit $6 for update skip locked
),
a as (
  update coordination_tokens t
  set holder = $3, generation = t.generation + 1, expires_at = now() + make_interval(secs => $8::float8 / 1000)
  from c where t.pool = $1 and t.slot = c.slot
  returning t.slot, t.generation
),
n as (
  select pg_notify('breakwater_tokens', $1) from (select 1 from r limit 1) x
  where exists (select 1 from coordination_tokens w where w.pool = $1 and w.slot = -1 and w.expires_at > now())
)
select 'a' as k, slot, generation from a
union all select 'r', slot, null from r
union all select 'n', null, null from n`;

/** What one statement is asked to do. */
export interface TokenBatch {
  /** The pool's limit the acquires ask under (0 when the batch only gives back). */
  readonly limit: number;
  /** How many tokens to take. */
  readonly acquire: number;
  readonly release: readonly { readonly slot: number; readonly generation: number }[];
}

/** What it did: the tokens granted (at most `acquire`) and the slots given back. */
export interface TokenBatchResult {
  readonly granted: readonly { readonly slot: number; readonly generation: number }[];
  readonly released: ReadonlySet<number>;
}

/** Most requests one statement carries: bounds its size and the time one caller waits on others' rows. */
const MAX_BATCH = 64;

interface PendingAcquire {
  readonly limit: number;
  /** Already sent again after a statement that released tokens: its next answer is final. */
  readonly again?: boolean;
  resolve(granted: { slot: number; generation: number } | undefined): void;
  reject(e: unknown): void;
}

interface PendingRelease {
  readonly slot: number;
  readonly generation: number;
  resolve(released: boolean): void;
  reject(e: unknown): void;
}

/**
 * Gathers token acquires and releases into batches, at most `maxInFlight` statements at once.
 *
 * @example
 * ```ts
 * const batcher = new PostgresTokenBatcher((b) => runStatement(b), 2);
 * const granted = await batcher.acquire(3); // { slot, generation } or undefined (none free)
 * if (granted && !(await batcher.release(granted.slot, granted.generation))) await releaseWaitingForLock(granted);
 * ```
 */
export class PostgresTokenBatcher {
  readonly #run: (batch: TokenBatch) => Promise<TokenBatchResult>;
  readonly #maxInFlight: number;
  #acquires: PendingAcquire[] = [];
  #releases: PendingRelease[] = [];
  #inFlight = 0;
  #scheduled = false;
  #closed: unknown;

  constructor(run: (batch: TokenBatch) => Promise<TokenBatchResult>, maxInFlight: number) {
    this.#run = run;
    this.#maxInFlight = Math.max(1, maxInFlight);
  }

  /** A free token under `limit`, or `undefined` when the statement found none free (or none unlocked). */
  acquire(limit: number): Promise<{ slot: number; generation: number } | undefined> {
    return new Promise((resolve, reject) => {
      if (this.#closed !== undefined) return reject(this.#closed);
      this.#acquires.push({ limit, resolve, reject });
      this.#schedule();
    });
  }

  /** `true` when the token was given back; `false` when the statement skipped it (its row was locked). */
  release(slot: number, generation: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      if (this.#closed !== undefined) return reject(this.#closed);
      this.#releases.push({ slot, generation, resolve, reject });
      this.#schedule();
    });
  }

  /** Refuses every request not yet sent, and later ones, with `error`. */
  close(error: unknown): void {
    this.#closed = error;
    for (const p of [...this.#acquires.splice(0), ...this.#releases.splice(0)]) p.reject(error);
  }

  /**
   * The batch goes out after the current turn of the event loop, so the requests made in one turn (the callers
   * woken by one answer) travel together.
   */
  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    while (this.#inFlight < this.#maxInFlight && (this.#acquires.length > 0 || this.#releases.length > 0)) {
      // Releases first: they free tokens, and a crowd of acquires must not hold them back.
      const releases = this.#releases.splice(0, MAX_BATCH);
      const limit = this.#acquires[0]?.limit ?? 0;
      // One limit per statement: a request under another limit (a pool re-sized mid-run) waits for the next.
      const acquires: PendingAcquire[] = [];
      const later: PendingAcquire[] = [];
      const room = MAX_BATCH - releases.length;
      for (const a of this.#acquires)
        (a.limit === limit && acquires.length < room ? acquires : later).push(a);
      this.#acquires = later;
      this.#inFlight++;
      this.#run({
        limit,
        acquire: acquires.length,
        release: releases.map((r) => ({ slot: r.slot, generation: r.generation })),
      })
        .then(
          (result) => {
            // First come, first granted. A caller left over in a statement that gave tokens back looks once more
            // in the next (a statement cannot see its own releases: with limit 1, a release and an acquire sent
            // together would refuse the acquire while the token is free); otherwise none was free.
            const again: PendingAcquire[] = [];
            for (const [i, a] of acquires.entries()) {
              const granted = result.granted[i];
              if (granted || a.again || result.released.size === 0) a.resolve(granted);
              else again.push({ ...a, again: true });
            }
            this.#acquires.unshift(...again);
            for (const r of releases) r.resolve(result.released.has(r.slot));
          },
          (e: unknown) => {
            for (const p of [...acquires, ...releases]) p.reject(e);
          },
        )
        .finally(() => {
          this.#inFlight--;
          if (this.#acquires.length > 0 || this.#releases.length > 0) this.#schedule();
        });
    }
  }
}
