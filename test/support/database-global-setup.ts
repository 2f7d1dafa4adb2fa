import { Redis } from 'ioredis';
import type { TestProject } from 'vitest/node';
import { redactUrl, scrubSecrets } from '../../src/redact/secret-scrubber.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { connectionBudgetOf } from './connection-budget.ts';
import {
  RUN_HOLDER_PREFIX,
  SERVER_URL,
  connectAdmin,
  dropDatabases,
  listTestDatabases,
  liveRuns,
  newRunTag,
  parseRunTag,
  sharedDatabaseName,
  templateName,
  urlOfDatabase,
} from './test-databases.ts';

/*
 * vitest globalSetup: once per `vitest run`, a template database migrated with the project's migrations, which every
 * test file that touches PostgreSQL copies into a database of its own (test/support/per-file-database.ts: CREATE
 * DATABASE … TEMPLATE costs ~0.1 s, migrating afresh ~0.7 s). The template's name is unique to the run, so parallel
 * runs (other checkouts, `npm run test:repeat`) never share or drop each other's. At the end the run's databases are
 * dropped together; databases and Redis keys left by runs that crashed are dropped at the start of the next.
 *
 * Without a reachable server the run goes on: the tests that need PostgreSQL fail naming the server and the reason,
 * the others pass.
 */

/** What the workers learn about this run's databases (`inject('testDatabases')`). */
export interface TestDatabasesContext {
  /** This run's tag, in every database name and Redis key prefix it makes. */
  readonly run: string;
  /** The migrated template; undefined when PostgreSQL could not be used (then `unavailable` says why). */
  readonly template: string | undefined;
  readonly unavailable: string | undefined;
  /** The shared database no test may connect to (`test`). */
  readonly shared: string;
  /** How many PostgreSQL connections the test files may hold at once (test/support/connection-budget.ts). */
  readonly connectionBudget: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    testDatabases: TestDatabasesContext;
  }
}

/** A leftover is only dropped when its run holds no connection and started over a minute ago. */
const STALE_AFTER_MS = 60_000;
/** Redis keys of per-file prefixes look like `bwtest:<run>:<file>:…` (see per-file-database.ts). */
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Drops the databases of runs that are gone (no holder connection, started over a minute ago); returns the live runs. */
export async function dropLeftovers(admin: import('pg').Client, now: number): Promise<Set<string>> {
  const live = await liveRuns(admin);
  const stale = (await listTestDatabases(admin)).filter(
    (d) => !live.has(d.run) && now - d.startedMs > STALE_AFTER_MS,
  );
  if (stale.length > 0) await dropDatabases(stale.map((d) => d.name));
  return live;
}

/** Keys under per-file prefixes of runs that are gone (best effort: without Redis there is nothing to clean). */
async function dropStaleRedisKeys(live: ReadonlySet<string>, now: number): Promise<void> {
  const redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', 'bwtest:bwt_*', 'COUNT', 1000);
      cursor = next;
      const gone = keys.filter((k) => {
        const tag = parseRunTag(k.slice('bwtest:'.length));
        return tag !== undefined && !live.has(tag.run) && now - tag.startedMs > STALE_AFTER_MS;
      });
      if (gone.length > 0) await redis.del(...gone);
    } while (cursor !== '0');
  } catch {
    // No Redis here: the Redis tests will say so themselves.
  } finally {
    redis.disconnect();
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = newRunTag();
  const shared = sharedDatabaseName();
  let holder: import('pg').Client | undefined;
  let template: string | undefined;
  let unavailable: string | undefined;
  let connectionBudget = 1;
  try {
    // Held until teardown: while it is there, other runs leave this run's databases alone.
    holder = await connectAdmin(`${RUN_HOLDER_PREFIX}${run}`);
    connectionBudget = await connectionBudgetOf(holder);
    const live = await dropLeftovers(holder, Date.now());
    await dropStaleRedisKeys(live, Date.now());
    const name = templateName(run);
    await holder.query(`create database "${name}"`);
    const database = await openDatabase({ url: urlOfDatabase(SERVER_URL, name) });
    await database.close();
    // Nobody connects to the template by mistake (a connection would also block every copy of it).
    await holder.query(`alter database "${name}" with is_template true allow_connections false`);
    template = name;
  } catch (e) {
    unavailable = `PostgreSQL at ${redactUrl(SERVER_URL)} could not be prepared for the tests (${scrubSecrets((e as Error).message)}). Start it (see CONTRIBUTING.md, Tests) or point DATABASE_URL at one.`;
  }
  project.provide('testDatabases', { run, template, unavailable, shared, connectionBudget });
  return async () => {
    if (holder) {
      const ours = (await listTestDatabases(holder).catch(() => [])).filter((d) => d.run === run);
      // The copies first: the template is dropped last.
      const names = ours.map((d) => d.name);
      await dropDatabases(names.filter((n) => !n.startsWith('bwtpl_')));
      await dropDatabases(names.filter((n) => n.startsWith('bwtpl_')));
      await holder.end().catch(() => {});
    }
  };
}
