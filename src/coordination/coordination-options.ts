import { ConfigError } from '../core/errors/config-error.ts';

/**
 * Where several processes share one quota: `memory` (this process alone), `postgres` or `redis`.
 *
 * @example
 * ```ts
 * const backend: CoordinationBackendKind = process.env.REDIS_URL ? 'redis' : 'postgres';
 * ```
 */
export type CoordinationBackendKind = 'memory' | 'postgres' | 'redis';

/**
 * How the supervisor shares its concurrency tokens and its endpoints' health with other processes.
 * Every process on one quota must use the same backend, URL, pool and token limit.
 *
 * @example
 * ```ts
 * createSupervisor(config, { coordination: { backend: 'postgres', url: process.env.DATABASE_URL } });
 * createSupervisor(config, { coordination: { backend: 'redis', url: 'redis://127.0.0.1:6379/0' } });
 * ```
 */
export interface CoordinationOptions {
  /** Default `memory`: tokens and health live in this process only (nothing shared). */
  readonly backend?: CoordinationBackendKind;
  /** `postgres://…` or `redis://…`. Required unless the backend is `memory`. */
  readonly url?: string;
  /** The quota's name: processes with the same pool share tokens and health. Default `default`. */
  readonly pool?: string;
  /**
   * A held token not renewed for this long is handed to another process (a dead process loses its tokens
   * within it). Heartbeats renew every third of it. Default 10 000 ms.
   */
  readonly leaseTtlMs?: number;
  /** Redis only: prefix of every key and channel. Default `breakwater:`. */
  readonly keyPrefix?: string;
  /** Names this process in leases, the live view and reports. Default `<hostname>:<pid>`. */
  readonly processId?: string;
}

/** {@link CoordinationOptions} with every default filled in. */
export interface ResolvedCoordination {
  readonly backend: Exclude<CoordinationBackendKind, 'memory'>;
  readonly url: string;
  readonly pool: string;
  readonly leaseTtlMs: number;
  readonly keyPrefix: string;
  readonly processId: string;
}

const SCHEMES: Record<ResolvedCoordination['backend'], readonly string[]> = {
  postgres: ['postgres:', 'postgresql:'],
  redis: ['redis:', 'rediss:'],
};

/**
 * Checks {@link CoordinationOptions}: `undefined` for the memory backend, else the resolved options. A bad
 * backend or URL is a ConfigError naming the option.
 *
 * @example
 * ```ts
 * const c = resolveCoordination({ backend: 'redis', url: 'redis://127.0.0.1:6379' }, 'host:42');
 * ```
 */
export function resolveCoordination(
  options: CoordinationOptions | undefined,
  defaultProcessId: string,
): ResolvedCoordination | undefined {
  const backend = options?.backend ?? 'memory';
  if (backend === 'memory') return undefined;
  const fail = (path: string, message: string) =>
    new ConfigError({ source: 'createSupervisor', path: `coordination.${path}`, message });
  if (backend !== 'postgres' && backend !== 'redis')
    throw fail('backend', `is "${String(backend)}"; use memory, postgres or redis`);
  const url = options?.url;
  if (typeof url !== 'string' || url.length === 0)
    throw fail('url', `is required with the ${backend} backend (e.g. ${SCHEMES[backend][0]}//127.0.0.1/…)`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw fail('url', `does not parse as a URL; give ${SCHEMES[backend][0]}//host:port/…`);
  }
  if (!SCHEMES[backend].includes(parsed.protocol))
    throw fail(
      'url',
      `has scheme "${parsed.protocol}" but the backend is ${backend}; use ${SCHEMES[backend].join(' or ')}//…`,
    );
  const leaseTtlMs = options?.leaseTtlMs ?? 10_000;
  if (!(Number.isFinite(leaseTtlMs) && leaseTtlMs >= 300))
    throw fail('leaseTtlMs', `is ${String(leaseTtlMs)}; give at least 300 ms`);
  const pool = options?.pool ?? 'default';
  if (!/^[\w.:-]{1,64}$/.test(pool)) throw fail('pool', 'must be 1-64 letters, digits, _ . : -');
  return {
    backend,
    url,
    pool,
    leaseTtlMs,
    keyPrefix: options?.keyPrefix ?? 'breakwater:',
    processId: options?.processId ?? defaultProcessId,
  };
}
