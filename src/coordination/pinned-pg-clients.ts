import type pg from 'pg';

/**
 * Up to `max` connections of a `pg.Pool` kept checked out between queries and reused directly.
 *
 * Why: a token grant is two tiny statements, and `pool.query` costs about as much client CPU per statement as
 * the statement costs the server (per query a checkout and a release, each with a timer armed and cleared, a
 * `nextTick`, events and listener changes). Here a query takes an idle connection from an array and puts it
 * back. The pool still makes (with its connect timeout) and destroys the connections: a connection whose query
 * failed, or that ended or errored while idle, is given back to the pool as broken (destroyed) and a new one is
 * made for the next query, as `pool.query` does.
 *
 * @example
 * ```ts
 * const clients = new PinnedPgClients(pool, 4);
 * const r = await clients.query({ name: 'one', text: 'select 1 as n', values: [] });
 * await clients.close();
 * ```
 */
export class PinnedPgClients {
  readonly #pool: pg.Pool;
  readonly #max: number;
  readonly #idle: pg.PoolClient[] = [];
  /** Callers waiting for a connection: handed one, or `undefined` (room to make a new one), or an error. */
  readonly #waiting: { resolve(c: pg.PoolClient | undefined): void; reject(e: unknown): void }[] = [];
  /** Connections that ended or errored (while idle here the next query must not use them). */
  readonly #dead = new WeakSet<pg.ClientBase>();
  /** Connections checked out of the pool: idle here or running a query. */
  #held = 0;
  #closed = false;

  constructor(pool: pg.Pool, max: number) {
    this.#pool = pool;
    this.#max = max;
    pool.on('connect', (client) => {
      client.on('error', () => this.#dead.add(client));
      client.on('end', () => this.#dead.add(client));
    });
  }

  async query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    const client = await this.#take();
    let result: pg.QueryResult<R>;
    try {
      result = await client.query<R>(config);
    } catch (e) {
      this.#drop(client, e);
      throw e;
    }
    this.#give(client);
    return result;
  }

  /** Gives every idle connection back to the pool; later queries fail, the running ones give theirs back. */
  close(): void {
    this.#closed = true;
    for (const c of this.#idle.splice(0)) this.#release(c);
    const closed = new Error('the connections are closed');
    for (const w of this.#waiting.splice(0)) w.reject(closed);
  }

  /**
   * Gives every idle connection back to the pool as broken (destroyed): after one was cut, the others were most
   * likely cut with it (an administrator terminating a process's backends, a server restart) even if their error
   * has not been read yet; the next queries make fresh ones.
   */
  dropIdle(): void {
    for (const c of this.#idle.splice(0)) this.#drop(c, new Error('dropped after a connection was cut'));
  }

  async #take(): Promise<pg.PoolClient> {
    if (this.#closed) throw new Error('the connections are closed');
    for (let c = this.#idle.pop(); c; c = this.#idle.pop()) {
      if (!this.#dead.has(c)) return c;
      this.#drop(c, new Error('the connection ended while idle'));
    }
    if (this.#held >= this.#max) {
      const handed = await new Promise<pg.PoolClient | undefined>((resolve, reject) =>
        this.#waiting.push({ resolve, reject }),
      );
      if (handed) return handed;
      // Handed the place of a dropped connection (still counted in #held): ours to fill.
    } else this.#held++;
    try {
      return await this.#pool.connect();
    } catch (e) {
      this.#vacate();
      throw e;
    }
  }

  #give(client: pg.PoolClient): void {
    if (this.#closed) {
      this.#release(client);
      return;
    }
    if (this.#dead.has(client)) {
      // It ended after its query answered: never handed on (a waiter gets its place and a new connection).
      this.#drop(client, new Error('the connection ended'));
      return;
    }
    const waiter = this.#waiting.shift();
    if (waiter) waiter.resolve(client);
    else this.#idle.push(client);
  }

  /** A connection whose query failed (or that ended): destroyed by the pool; a waiter may make a new one. */
  #drop(client: pg.PoolClient, e: unknown): void {
    client.release(e instanceof Error ? e : new Error(String(e)));
    this.#vacate();
  }

  /** A connection's place is free: a waiter takes it over (it stays counted), else it is uncounted. */
  #vacate(): void {
    const waiter = this.#waiting.shift();
    if (waiter) waiter.resolve(undefined);
    else this.#held--;
  }

  #release(client: pg.PoolClient): void {
    this.#held--;
    client.release();
  }
}
