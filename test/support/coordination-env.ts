import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { CoordinationBackend } from '../../src/coordination/coordination-backend.ts';
import { resolveCoordination } from '../../src/coordination/coordination-options.ts';
import { createCoordinationBackend } from '../../src/coordination/create-coordination.ts';
import pg from 'pg';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { perFileDatabase, postgresUrl, redisKeyPrefix } from './per-file-database.ts';

export { perFileDatabase, postgresUrl, redisKeyPrefix } from './per-file-database.ts';

/** The Redis server of the tests (shared; each test file keeps to its own key prefix, {@link redisKeyPrefix}). */
export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * The two shared backends, each with a fresh pool name so tests never see each other's tokens, on this file's own
 * PostgreSQL database and Redis key prefix. Call it at the top level of the test file (it registers the file's
 * database, see test/support/per-file-database.ts); the options are made inside tests.
 */
export function coordinationCases(): { name: 'postgres' | 'redis'; options: () => CoordinationOptions }[] {
  perFileDatabase();
  return [
    {
      name: 'postgres',
      options: () => ({ backend: 'postgres', url: postgresUrl(), pool: `t-${randomUUID().slice(0, 8)}` }),
    },
    {
      name: 'redis',
      options: () => ({
        backend: 'redis',
        url: REDIS_URL,
        keyPrefix: redisKeyPrefix(),
        pool: `t-${randomUUID().slice(0, 8)}`,
      }),
    },
  ];
}

/** Removes what a test pool left behind (rows, keys). */
export async function cleanPool(options: CoordinationOptions): Promise<void> {
  if (options.backend === 'postgres') {
    const client = new pg.Client({ connectionString: options.url });
    await client.connect();
    try {
      await client.query('delete from coordination_tokens where pool = $1', [options.pool]);
      await client.query('delete from coordination_health where pool = $1', [options.pool]);
      await client.query('delete from coordination_rates where pool = $1', [options.pool]);
      await client.query('delete from coordination_probes where pool = $1', [options.pool]);
    } finally {
      await client.end();
    }
  } else if (options.backend === 'redis') {
    const redis = new Redis(options.url!);
    try {
      const keys = await redis.keys(`${options.keyPrefix}${options.pool}:*`);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  }
}

/**
 * Real backends for one test file: `open` connects one as a process of a pool, `track` marks a pool to clean; after
 * each test every backend is closed and every tracked pool cleaned.
 */
export function backendsPerTest() {
  const opened: CoordinationBackend[] = [];
  const pools: CoordinationOptions[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((b) => b.close()));
    for (const p of pools.splice(0)) await cleanPool(p);
  });
  return {
    async open(options: CoordinationOptions, processId: string, leaseTtlMs = 10_000) {
      const backend = createCoordinationBackend(
        resolveCoordination({ ...options, processId, leaseTtlMs }, processId)!,
      );
      opened.push(backend);
      await backend.connect();
      return backend;
    },
    track(options: CoordinationOptions): CoordinationOptions {
      pools.push(options);
      return options;
    },
    /** A new PostgreSQL pool of the test server (cleaned after the test) and its name. */
    freshPostgres(): { o: CoordinationOptions; pool: string } {
      const pool = `t-${randomUUID().slice(0, 8)}`;
      return { o: this.track({ backend: 'postgres', url: postgresUrl(), pool }), pool };
    },
  };
}

/**
 * A connection to this file's own database for reading and planting rows directly, open for the whole test file.
 * Call it at the top level of the file (it registers the file's database).
 */
export function postgresAdminPerFile(): () => pg.Client {
  perFileDatabase();
  let admin: pg.Client | undefined;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
  });
  return () => {
    if (!admin) throw new Error("postgresAdminPerFile: used outside the test file's tests");
    return admin;
  };
}
