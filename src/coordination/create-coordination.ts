import { notRedis } from '../core/errors/foreign-server.ts';
import { redactUrl } from '../redact/secret-scrubber.ts';
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
import type { ResolvedCoordination } from './coordination-options.ts';
import { CoordinationUnavailableError } from './coordination-errors.ts';

/**
 * The shared backend for resolved coordination options (not connected yet: `connect()` it). Its driver (`pg`,
 * `ioredis`) is loaded on `connect()`, not on import: a process alone never loads either.
 *
 * @example
 * ```ts
 * const backend = createCoordinationBackend(resolveCoordination({ backend: 'redis', url }, 'w1')!);
 * await backend.connect();
 * ```
 */
export function createCoordinationBackend(c: ResolvedCoordination): CoordinationBackend {
  return new LazyBackend(c);
}

/** Loads the real backend on `connect()`; listeners given before are handed over then. */
class LazyBackend implements CoordinationBackend {
  readonly location: string;
  readonly #c: ResolvedCoordination;
  #real: CoordinationBackend | undefined;
  #loading: Promise<CoordinationBackend> | undefined;
  readonly #wake: (() => void)[] = [];
  readonly #health: ((m: SharedHealthMessage) => void)[] = [];
  readonly #lost: ((e: unknown) => void)[] = [];
  #closed = false;

  constructor(c: ResolvedCoordination) {
    this.#c = c;
    this.location = `${c.backend === 'postgres' ? 'PostgreSQL' : 'Redis'} at ${redactUrl(c.url)}`;
  }

  async connect(signal?: AbortSignal): Promise<void> {
    try {
      await (await this.#load()).connect(signal);
    } catch (e) {
      throw (await this.#foreign(e)) ?? e;
    }
  }

  /**
   * A Redis driver that meets another protocol says "Unknown RESP type 72. Please report this": not the
   * user's to report. Says what really answers there instead (see foreign-server.ts).
   */
  async #foreign(e: unknown): Promise<CoordinationUnavailableError | undefined> {
    const text = `${(e as Error)?.message ?? ''} ${((e as Error)?.cause as Error | undefined)?.message ?? ''}`;
    if (this.#c.backend !== 'redis' || !/Unknown RESP type|Protocol error|Please report this/i.test(text))
      return undefined;
    let url: URL;
    try {
      url = new URL(this.#c.url);
    } catch {
      return undefined;
    }
    const seen = await notRedis(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 6379), 2_000);
    return new CoordinationUnavailableError(
      `coordination.url: ${this.location} is unreachable (${seen ?? 'what answers there does not speak the Redis protocol'}; check the host and port); not sending (fail closed)`,
      { cause: e },
    );
  }

  async tryAcquire(limit: number): Promise<GlobalAcquireResult> {
    return (await this.#load()).tryAcquire(limit);
  }

  async release(lease: GlobalLease): Promise<void> {
    return (await this.#load()).release(lease);
  }

  async renew(leases: readonly GlobalLease[]): Promise<Set<string>> {
    return (await this.#load()).renew(leases);
  }

  async takeRate(ask: RateAsk): Promise<RateTakeResult> {
    return (await this.#load()).takeRate(ask);
  }

  async refundRate(permit: RatePermit): Promise<void> {
    return (await this.#load()).refundRate(permit);
  }

  async claimProbe(endpointId: string, ttlMs: number): Promise<boolean> {
    return (await this.#load()).claimProbe(endpointId, ttlMs);
  }

  async endProbe(endpointId: string): Promise<void> {
    return (await this.#load()).endProbe(endpointId);
  }

  async publishHealth(endpointId: string, facts: SharedHealthFacts): Promise<void> {
    return (await this.#load()).publishHealth(endpointId, facts);
  }

  async loadHealth(): Promise<SharedHealthMessage[]> {
    return (await this.#load()).loadHealth();
  }

  onWake(listener: () => void): void {
    if (this.#real) this.#real.onWake(listener);
    else this.#wake.push(listener);
  }

  onHealth(listener: (message: SharedHealthMessage) => void): void {
    if (this.#real) this.#real.onHealth(listener);
    else this.#health.push(listener);
  }

  onLost(listener: (error: unknown) => void): void {
    if (this.#real) this.#real.onLost(listener);
    else this.#lost.push(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    // A driver still loading is closed once loaded: its sockets must not outlive the runtime.
    const real = this.#real ?? (await this.#loading?.catch(() => undefined));
    await real?.close();
  }

  #load(): Promise<CoordinationBackend> {
    if (this.#closed)
      return Promise.reject(new CoordinationUnavailableError('the coordination backend is closed'));
    this.#loading ??= (async () => {
      const c = this.#c;
      const common = { url: c.url, pool: c.pool, processId: c.processId, leaseTtlMs: c.leaseTtlMs };
      const real: CoordinationBackend =
        c.backend === 'postgres'
          ? new (await import('./postgres-coordination.ts')).PostgresCoordination(common)
          : new (await import('./redis-coordination.ts')).RedisCoordination({
              ...common,
              keyPrefix: c.keyPrefix,
            });
      for (const l of this.#wake.splice(0)) real.onWake(l);
      for (const l of this.#health.splice(0)) real.onHealth(l);
      for (const l of this.#lost.splice(0)) real.onLost(l);
      this.#real = real;
      return real;
    })();
    return this.#loading;
  }
}
