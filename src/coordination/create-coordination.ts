import type { CoordinationBackend } from './coordination-backend.ts';
import type { ResolvedCoordination } from './coordination-options.ts';
import { PostgresCoordination } from './postgres-coordination.ts';
import { RedisCoordination } from './redis-coordination.ts';

/**
 * The shared backend for resolved coordination options (not connected yet: `connect()` it).
 *
 * @example
 * ```ts
 * const backend = createCoordinationBackend(resolveCoordination({ backend: 'redis', url }, 'w1')!);
 * await backend.connect();
 * ```
 */
export function createCoordinationBackend(c: ResolvedCoordination): CoordinationBackend {
  const common = { url: c.url, pool: c.pool, processId: c.processId, leaseTtlMs: c.leaseTtlMs };
  return c.backend === 'postgres'
    ? new PostgresCoordination(common)
    : new RedisCoordination({ ...common, keyPrefix: c.keyPrefix });
}
