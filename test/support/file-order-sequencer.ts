import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import pg from 'pg';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { connectionBudgetOf } from './connection-budget.ts';
import { declaredConnections, planFileOrder } from './file-order.ts';
import { SERVER_URL, urlOfDatabase } from './test-databases.ts';

/*
 * vitest's sequencer: starts the files in the order test/support/file-order.ts plans from each file's expected wall
 * and connections (test/support/file-walls.json, measured by `node scripts/test-timeline.mjs --write-walls` after a
 * quiet run), or for a file not measured yet the connections it declares at its top. On a clean clone vitest has no durations cached and would order by size.
 */

const MEASURED: Readonly<Record<string, { readonly seconds: number; readonly connections: number }>> =
  JSON.parse(readFileSync(new URL('./file-walls.json', import.meta.url), 'utf8'));

/** A file not in file-walls.json: most files take a second or two. */
const UNMEASURED_SECONDS = 2;

/** The budget on a default server (max_connections 100, 3 reserved, 8 kept for admin), when it cannot be asked. */
const DEFAULT_BUDGET = 89;

async function serverBudget(): Promise<number> {
  const client = new pg.Client({
    connectionString: urlOfDatabase(SERVER_URL, 'postgres'),
    application_name: 'breakwater-tests sequencer',
    connectionTimeoutMillis: 3_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return await connectionBudgetOf(client);
  } catch {
    return DEFAULT_BUDGET;
  } finally {
    await client.end().catch(() => {});
  }
}

export default class FileOrderSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byFile = new Map<string, TestSpecification>();
    const planned = files.map((spec) => {
      const file = relative(spec.project.config.root, spec.moduleId);
      byFile.set(file, spec);
      const measured = MEASURED[file];
      return {
        file,
        seconds: measured?.seconds ?? UNMEASURED_SECONDS,
        connections: measured?.connections ?? declaredConnections(readFileSync(spec.moduleId, 'utf8')),
      };
    });
    const workers = Number(this.ctx.config.maxWorkers) || 1;
    return planFileOrder(planned, workers, await serverBudget()).map((p) => byFile.get(p.file)!);
  }
}
