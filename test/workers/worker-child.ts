/*
 * One worker process of the workers tests: joins run argv[3] on the PostgreSQL store argv[2] and works until the
 * run is no longer running. One JSON line per staged turn on stdout, then a `done` line with its summary.
 */
import pino from 'pino';
import { openDatabase } from '../../src/store/open-database.ts';
import { runWorker } from '../../src/runs/workers/run-worker.ts';
import { WORKER_STORE_POOL_SIZE } from '../../src/runs/workers/worker-store-pool.ts';

const [url, runId] = [process.argv[2]!, process.argv[3]!];
const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
// As `breakwater worker` opens it.
const database = await openDatabase({ url, poolSize: WORKER_STORE_POOL_SIZE });
try {
  const summary = await runWorker({
    database,
    databaseUrl: url,
    runId,
    logger: pino({ level: 'error' }, pino.destination(2)),
    onTurn: (t) => say({ type: 'turn', ...t }),
  });
  say({ type: 'done', ...summary });
} finally {
  await database.close();
}
