import { createHash } from 'node:crypto';
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

/*
 * Tokens are members `<process>|<generation>` of one sorted set scored by their expiry (the server's TIME, ms).
 * Every script first drops the expired members, so a dead process's token is free once its lease ran out; the
 * set itself expires with its last lease, so nothing outlives the leases. Scripts run atomically: the
 * count check and the add cannot interleave with another process's.
 */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/*
 * The set expires with its LAST lease (the highest score), never with the caller's TTL: processes of one pool with
 * different TTLs must not cut each other's leases short (a set expired early would hand out tokens still held).
 */
const EXPIRE_AT_LAST = `local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(last[2]))) end`;

/** KEYS: tokens, generation. ARGV: limit, ttl, process. → {1, generation} or {0, ms until the earliest expiry | -1}. */
const ACQUIRE_LUA = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  local g = redis.call('INCR', KEYS[2])
  -- The counter outlives every lease by far (a day without grants), then goes too: no key is left for good.
  redis.call('PEXPIRE', KEYS[2], 86400000)
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3] .. '|' .. g)
  ${EXPIRE_AT_LAST}
  return {1, g}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then return {0, tonumber(first[2]) - now} end
return {0, -1}`;

/** KEYS: tokens, wake channel. ARGV: member. */
const RELEASE_LUA = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then redis.call('PUBLISH', KEYS[2], '1') end
return 0`;

/** KEYS: tokens. ARGV: ttl, members… → the members renewed (not expired, not reissued). */
const RENEW_LUA = `${NOW}
local out = {}
for i = 2, #ARGV do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) > now then
    redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
    out[#out + 1] = ARGV[i]
  end
end
if #out > 0 then ${EXPIRE_AT_LAST} end
return out`;

/*
 * An endpoint's shared windows: one hash per quota, fields `r:<slot>` (requests) and `t:<slot>` (tokens), slots of
 * 1/60 of the window. A unit counts until its slot's end plus one window and one more slot (the call reaches the
 * provider a little after its permit), so at most 62 slots live and a take is O(1). The hash expires with its
 * last slot. KEYS: quota hash. ARGV: window ms, rpm | -1, tpm | -1, tokens.
 * → {1, slot, requests, tokens} (counts as strings: Lua numbers come back as integers) or {0, retry ms}.
 */
const TAKE_RATE_LUA = `${NOW}
local w = tonumber(ARGV[1])
local rpm = tonumber(ARGV[2])
local tpm = tonumber(ARGV[3])
local cur = math.floor(now * 60 / w)
local all = redis.call('HGETALL', KEYS[1])
local slots, order, old = {}, {}, {}
local usedR, usedT = 0, 0
for i = 1, #all, 2 do
  local f = all[i]
  local s = tonumber(string.sub(f, 3))
  local v = tonumber(all[i + 1])
  if s < cur - 61 then
    old[#old + 1] = f
  else
    local e = slots[s]
    if not e then e = {0, 0} slots[s] = e order[#order + 1] = s end
    if string.sub(f, 1, 1) == 'r' then e[1] = e[1] + v usedR = usedR + v else e[2] = e[2] + v usedT = usedT + v end
  end
end
if #old > 0 then redis.call('HDEL', KEYS[1], unpack(old)) end
local costR, costT, needR, needT = 0, 0, 0, 0
if rpm >= 0 then costR = math.min(1, rpm) needR = usedR + costR - rpm end
if tpm >= 0 then costT = math.min(math.max(tonumber(ARGV[4]), 0), tpm) needT = usedT + costT - tpm end
if needR <= 1e-9 and needT <= 1e-9 then
  if costR > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 'r:' .. cur, costR) end
  if costT > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 't:' .. cur, costT) end
  redis.call('PEXPIRE', KEYS[1], math.ceil((cur + 62) * w / 60 - now) + 1)
  return {1, cur, tostring(costR), tostring(costT)}
end
table.sort(order)
local fr, ft = 0, 0
for _, s in ipairs(order) do
  fr = fr + slots[s][1]
  ft = ft + slots[s][2]
  if fr >= needR - 1e-9 and ft >= needT - 1e-9 then return {0, math.max(1, math.ceil((s + 62) * w / 60 - now))} end
end
return {0, math.ceil(w)}`;

/** KEYS: quota hash. ARGV: slot, requests, tokens. A slot already gone (left the window) is not brought back. */
const REFUND_RATE_LUA = `
for i, f in ipairs({'r:' .. ARGV[1], 't:' .. ARGV[1]}) do
  local v = redis.call('HGET', KEYS[1], f)
  if v then
    local left = tonumber(v) - tonumber(ARGV[i + 1])
    if left <= 1e-9 then redis.call('HDEL', KEYS[1], f) else redis.call('HSET', KEYS[1], f, tostring(left)) end
  end
end
return 0`;

/** KEYS: probe claim. ARGV: process, ttl. A free or expired claim, or this process's own, is (re)taken. */
const CLAIM_PROBE_LUA = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

/** KEYS: probe claim, wake channel. ARGV: process. Only the holder's own claim is given back; waiters are woken. */
const END_PROBE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[2], '1')
end
return 0`;

/** KEYS: health hash, health channel. ARGV: endpoint, facts JSON, message JSON, keep ms. */
const PUBLISH_LUA = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local keep = tonumber(ARGV[4])
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 0`;

const shas = new Map<string, string>();
const sha = (s: string) => {
  let h = shas.get(s);
  if (!h) {
    h = createHash('sha1').update(s).digest('hex');
    shas.set(s, h);
  }
  return h;
};

/**
 * The `redis` coordination backend: the same contract as PostgreSQL with atomic Lua scripts, keys that expire
 * with their leases, and pub/sub wake-ups (`ioredis`).
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
