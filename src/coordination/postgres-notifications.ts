import pg from 'pg';
import type { SharedHealthMessage } from './coordination-backend.ts';
import { CoordinationUnavailableError } from './coordination-errors.ts';
import { withStep } from './postgres-coordination-errors.ts';
import { HEALTH_CHANNEL, TOKENS_CHANNEL } from './postgres-coordination-sql.ts';

/**
 * The dedicated LISTEN connection of a `postgres` coordination backend (a pooled one would lose its subscriptions):
 * its pool's wake-ups and health messages, handed to the backend's listeners. Re-made after a loss, on the
 * backend's next statement; `closed` is the backend's (no connection is made, or kept, after its close()).
 */
export class PostgresNotifications {
  readonly #url: string;
  readonly #timeoutMs: number;
  readonly #pool: string;
  readonly #closed: () => boolean;
  #listener: pg.Client | undefined;
  #listening: Promise<void> | undefined;
  readonly #wake = new Set<() => void>();
  readonly #health = new Set<(m: SharedHealthMessage) => void>();
  readonly #lost = new Set<(e: unknown) => void>();

  constructor(url: string, timeoutMs: number, pool: string, closed: () => boolean) {
    this.#url = url;
    this.#timeoutMs = timeoutMs;
    this.#pool = pool;
    this.#closed = closed;
  }

  /** Whether the connection is made, or being made. */
  get listening(): boolean {
    return this.#listening !== undefined;
  }

  onWake(listener: () => void): void {
    this.#wake.add(listener);
  }

  onHealth(listener: (message: SharedHealthMessage) => void): void {
    this.#health.add(listener);
  }

  onLost(listener: (error: unknown) => void): void {
    this.#lost.add(listener);
  }

  /** The dedicated LISTEN connection (a pooled one would lose its subscriptions). Re-made after a loss. */
  listen(): Promise<void> {
    if (this.#listening) return this.#listening;
    if (this.#closed())
      return Promise.reject(new CoordinationUnavailableError('the coordination backend is closed'));
    const client = new pg.Client({
      connectionString: this.#url,
      connectionTimeoutMillis: this.#timeoutMs,
      keepAlive: true,
      application_name: 'breakwater-coordination-listen',
    });
    const lost = (e: unknown) => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      this.#listening = undefined;
      if (!this.#closed()) for (const l of this.#lost) l(e);
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('the LISTEN connection ended')));
    client.on('notification', (n) => {
      if (n.channel === TOKENS_CHANNEL) {
        if (n.payload === this.#pool) for (const l of this.#wake) l();
      } else if (n.channel === HEALTH_CHANNEL && n.payload) {
        let m: unknown;
        try {
          m = JSON.parse(n.payload);
        } catch {
          return;
        }
        // Anyone may NOTIFY on the channel: only the pool is looked at here, the listener checks the rest.
        if (typeof m === 'object' && m !== null && (m as { pool?: unknown }).pool === this.#pool)
          for (const l of this.#health) l(m as SharedHealthMessage);
      }
    });
    this.#listener = client;
    this.#listening = (async () => {
      try {
        await client.connect();
        await client.query(`listen ${TOKENS_CHANNEL}`);
        await client.query(`listen ${HEALTH_CHANNEL}`);
        // close() ran while this connection was being made: it may have missed it (not yet connecting).
        if (this.#closed()) throw new CoordinationUnavailableError('the coordination backend is closed');
      } catch (e) {
        this.#listener = undefined;
        this.#listening = undefined;
        void client.end().catch(() => {});
        throw this.#closed() ? e : withStep(e, 'could not subscribe to wake-ups (LISTEN)');
      }
    })();
    return this.#listening;
  }

  /** The backend's close(): the connection, if any, is no longer this one's (the caller ends it). */
  detach(): pg.Client | undefined {
    const listener = this.#listener;
    this.#listener = undefined;
    return listener;
  }
}
