import { Redis } from 'ioredis';
import { redactUrl, scrubSecrets } from '../redact/secret-scrubber.ts';
import type {
  CoordinationBackend,
  GlobalAcquireResult,
  GlobalLease,
  RateAsk,
  RatePermit,
  RateTakeResult,
  SharedHealthFacts,
  SharedHealthMessage,
} from './coordination-backend.ts';
import { CoordinationUnavailableError } from './coordination-errors.ts';
import {
  ACQUIRE_LUA,
  CLAIM_PROBE_LUA,
  END_PROBE_LUA,
  PUBLISH_LUA,
  REFUND_RATE_LUA,
  RELEASE_LUA,
  RENEW_LUA,
  sha,
  TAKE_RATE_LUA,
} from './redis-coordination-lua.ts';

/** Options of {@link RedisCoordination}. */
export interface RedisCoordinationOptions {
  readonly url: string;
  readonly pool: string;
  readonly processId: string;
  readonly leaseTtlMs: number;
  /** Prefix of every key and channel. */
  readonly keyPrefix: string;
  /** Connecting and each command must answer within this, ms. Default 5 000. */
  readonly timeoutMs?: number;
}

/**
 * The `redis` coordination backend: the same contract as PostgreSQL with atomic Lua scripts (and the keys' layout
 * they share: redis-coordination-lua.ts), keys that expire with their leases, and pub/sub wake-ups (`ioredis`).
 *
 * @example
 * ```ts
 * const backend = new RedisCoordination({ url: 'redis://127.0.0.1:6379', pool: 'default', processId: 'w1',
 *   leaseTtlMs: 10_000, keyPrefix: 'breakwater:' });
 * await backend.connect();
 * ```
 */
export class RedisCoordination implements CoordinationBackend {
  readonly location: string;
  readonly #o: RedisCoordinationOptions;
  readonly #cmd: Redis;
  readonly #sub: Redis;
  readonly #keys: {
    tokens: string;
    gen: string;
    wake: string;
    health: string;
    healthChannel: string;
    rates: string;
    probes: string;
  };
  readonly #wake = new Set<() => void>();
  readonly #health = new Set<(m: SharedHealthMessage) => void>();
  readonly #lost = new Set<(e: unknown) => void>();
  #closed = false;
  /** The socket's own error (ECONNREFUSED…): ioredis rejects a failed connect with a vaguer one. */
  #lastError: unknown;

  constructor(options: RedisCoordinationOptions) {
    this.#o = options;
    this.location = `Redis at ${redactUrl(options.url)}`;
    const timeout = options.timeoutMs ?? 5_000;
    const common = {
      lazyConnect: true,
      connectTimeout: timeout,
      commandTimeout: timeout,
      maxRetriesPerRequest: 1,
      // Commands while disconnected fail at once (fail closed) instead of queueing for a later connection.
      enableOfflineQueue: false,
      retryStrategy: (times: number) => Math.min(200 * times, 2_000),
    };
    this.#cmd = new Redis(options.url, common);
    this.#sub = new Redis(options.url, { ...common, commandTimeout: undefined });
    for (const c of [this.#cmd, this.#sub])
      c.on('error', (e: unknown) => {
        this.#lastError = e;
      });
    const base = `${options.keyPrefix}${options.pool}:`;
    this.#keys = {
      tokens: `${base}tokens`,
      gen: `${base}generation`,
      wake: `${base}wake`,
      health: `${base}health`,
      healthChannel: `${base}health-changed`,
      rates: `${base}rate:`,
      probes: `${base}probe:`,
    };
    this.#sub.on('message', (channel: string, payload: string) => {
      if (channel === this.#keys.wake) for (const l of this.#wake) l();
      else if (channel === this.#keys.healthChannel) {
        let m: unknown;
        try {
          m = JSON.parse(payload);
        } catch {
          return;
        }
        // Anyone may PUBLISH on the channel: the listener checks every field before using it.
        for (const l of this.#health) l(m as SharedHealthMessage);
      }
    });
    this.#sub.on('close', () => {
      if (!this.#closed) for (const l of this.#lost) l(new Error('the subscription connection closed'));
    });
  }

  async connect(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    try {
      await Promise.all([this.#cmd.connect(), this.#sub.connect()]);
      await this.#checkDatabase();
      await this.#sub.subscribe(this.#keys.wake, this.#keys.healthChannel);
    } catch (e) {
      // Stop reconnecting: this backend is unusable until the caller makes a new one.
      this.#cmd.disconnect();
      this.#sub.disconnect();
      if (e instanceof CoordinationUnavailableError) throw e;
      throw this.#unavailable(this.#lastError ?? e, 'could not connect');
    }
  }

  async tryAcquire(limit: number): Promise<GlobalAcquireResult> {
    const r = (await this.#run(
      ACQUIRE_LUA,
      [this.#keys.tokens, this.#keys.gen],
      [limit, Math.round(this.#o.leaseTtlMs), this.#o.processId],
    )) as [number, number];
    if (r[0] === 1) return { ok: true, lease: { slot: `${this.#o.processId}|${r[1]}`, generation: r[1] } };
    return { ok: false, retryInMs: r[1] < 0 ? undefined : r[1] };
  }

  async release(lease: GlobalLease): Promise<void> {
    await this.#run(RELEASE_LUA, [this.#keys.tokens, this.#keys.wake], [lease.slot]);
  }

  async renew(leases: readonly GlobalLease[]): Promise<Set<string>> {
    if (leases.length === 0) return new Set();
    const members = leases.map((l) => l.slot);
    const r = (await this.#run(
      RENEW_LUA,
      [this.#keys.tokens],
      [Math.round(this.#o.leaseTtlMs), ...members],
    )) as string[];
    const renewed = new Set(r);
    // The member already names its generation: the key is the member and its generation, as leaseKey makes it.
    return new Set(leases.filter((l) => renewed.has(l.slot)).map((l) => `${l.slot}#${l.generation}`));
  }

  async takeRate(ask: RateAsk): Promise<RateTakeResult> {
    const r = (await this.#run(
      TAKE_RATE_LUA,
      [this.#rateKey(ask.key, ask.windowMs)],
      [ask.windowMs, ask.rpm ?? -1, ask.tpm ?? -1, ask.tokens],
    )) as [number, number, string?, string?];
    if (r[0] !== 1) return { ok: false, retryInMs: r[1] };
    return {
      ok: true,
      permit: {
        key: ask.key,
        windowMs: ask.windowMs,
        slot: r[1],
        requests: Number(r[2]),
        tokens: Number(r[3]),
      },
    };
  }

  async refundRate(permit: RatePermit): Promise<void> {
    await this.#run(
      REFUND_RATE_LUA,
      [this.#rateKey(permit.key, permit.windowMs)],
      [permit.slot, permit.requests, permit.tokens],
    );
  }

  async claimProbe(endpointId: string, ttlMs: number): Promise<boolean> {
    const r = await this.#run(
      CLAIM_PROBE_LUA,
      [`${this.#keys.probes}${endpointId}`],
      [this.#o.processId, Math.max(1, Math.round(ttlMs))],
    );
    return r === 1;
  }

  async endProbe(endpointId: string): Promise<void> {
    await this.#run(
      END_PROBE_LUA,
      [`${this.#keys.probes}${endpointId}`, this.#keys.wake],
      [this.#o.processId],
    );
  }

  /** The window length is part of the name: processes on another clock scale never read each other's slots. */
  #rateKey(key: string, windowMs: number): string {
    return `${this.#keys.rates}${key}@${windowMs}`;
  }

  async publishHealth(endpointId: string, facts: SharedHealthFacts): Promise<void> {
    const message: SharedHealthMessage = { endpointId, facts, from: this.#o.processId };
    const last = Math.max(facts.cooldownUntil, facts.disabledUntil, facts.openUntil ?? 0);
    const keep = Math.max(1_000, Math.ceil(last - Date.now()));
    await this.#run(
      PUBLISH_LUA,
      [this.#keys.health, this.#keys.healthChannel],
      [endpointId, JSON.stringify(facts), JSON.stringify(message), keep],
    );
  }

  async loadHealth(): Promise<SharedHealthMessage[]> {
    let all: Record<string, string>;
    try {
      all = await this.#cmd.hgetall(this.#keys.health);
    } catch (e) {
      throw this.#unavailable(e, 'lost');
    }
    // One unreadable field must not hide the others: it goes on as null, which the listener's check drops.
    return Object.entries(all).map(([endpointId, json]) => {
      let facts: unknown = null;
      try {
        facts = JSON.parse(json);
      } catch {}
      return { endpointId, facts: facts as SharedHealthFacts, from: '' };
    });
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

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // QUIT waits for the server: bounded, then the sockets are dropped (a frozen path must not hold the process).
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([this.#cmd.quit(), this.#sub.quit()]),
      new Promise((resolve) => (timer = setTimeout(resolve, 1_000))),
    ]);
    clearTimeout(timer);
    this.#cmd.disconnect();
    this.#sub.disconnect();
  }

  /**
   * ioredis only reports a failed SELECT of the URL's database as an error event and goes on in database 0 (where
   * other pools' keys may be): the database is selected again here and a refusal is one clear line.
   */
  async #checkDatabase(): Promise<void> {
    const db = this.#cmd.options.db ?? 0;
    if (db === 0) return;
    try {
      await this.#cmd.select(db);
    } catch (e) {
      const text = e instanceof Error ? e.message : String(e);
      throw new CoordinationUnavailableError(
        `coordination.url: ${this.location} names database ${db}, which the server refused (${scrubSecrets(text)}); not sending (fail closed)`,
        { cause: e },
      );
    }
  }

  /** EVALSHA, loading the script on NOSCRIPT (a fresh or restarted server). */
  async #run(script: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    if (this.#closed) throw new CoordinationUnavailableError('the coordination backend is closed');
    try {
      try {
        return await this.#cmd.evalsha(sha(script), keys.length, ...keys, ...args);
      } catch (e) {
        if (!(e instanceof Error && /NOSCRIPT/.test(e.message))) throw e;
        return await this.#cmd.eval(script, keys.length, ...keys, ...args);
      }
    } catch (e) {
      throw this.#unavailable(e, 'lost');
    }
  }

  #unavailable(e: unknown, what: string): CoordinationUnavailableError {
    const text = e instanceof Error ? e.message : String(e);
    const problem = /ECONNREFUSED/.test(text)
      ? 'connection refused (is the server running, on that port?)'
      : scrubSecrets(text.replace(/\s+/g, ' ').trim()) || 'connection failed';
    return new CoordinationUnavailableError(
      `coordination.url: ${this.location} is unreachable (${what}: ${problem}); not sending (fail closed)`,
      { cause: e },
    );
  }
}
