import { Redis } from 'ioredis';
import { afterAll, expect } from 'vitest';
import { recordFileTimes } from './file-timeline.ts';
import { beginTestFile, endTestFile, installSharedDatabaseGuard } from './per-file-database.ts';

/*
 * vitest setupFiles: runs before every test file (again for each file, in the same worker, as `isolate: false`
 * keeps modules). Starts the file's state in per-file-database.ts (no DATABASE_URL inherited; a new Redis key prefix
 * on first use), installs the guard against the shared database once per worker, and when the file ends deletes the
 * Redis keys it made under its prefix. Its database is dropped with the run's others (database-global-setup.ts).
 */

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

installSharedDatabaseGuard();
const root = `${process.cwd()}/`;
const testPath = expect.getState().testPath ?? 'unknown test file';
const file = testPath.startsWith(root) ? testPath.slice(root.length) : testPath;
const startedAt = Date.now();
beginTestFile(file);

// The first hook registered: with vitest's stacked after-hooks it runs after the file's own.
afterAll(async () => {
  const { redisPrefix, connections, waitedMs } = endTestFile();
  recordFileTimes({ file, startedAt, endedAt: Date.now(), connections, waitedMs });
  if (!redisPrefix) return;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } catch {
    // Redis gone: the keys are dropped by the next run's global setup.
  } finally {
    redis.disconnect();
  }
});
