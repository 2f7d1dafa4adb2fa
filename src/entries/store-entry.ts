/**
 * `breakwater/store`: the durable store (PostgreSQL through kysely, or embedded PGlite) where every round of a run
 * is committed exactly once, so a run resumes with its agents' whole context; and the shipped scenarios.
 *
 * @example
 * ```ts
 * import { createRunStore, openDatabase } from 'breakwater/store';
 * // PostgreSQL at DATABASE_URL, else PGlite in .breakwater/; migrated to the latest schema on open.
 * const database = await openDatabase({ url: process.env.DATABASE_URL });
 * const store = createRunStore(database);
 * console.log(await store.listRuns({ status: 'interrupted' }));
 * await database.close();
 * ```
 */
export * from '../store/index.ts';
export { listScenarios, loadScenario, parseScenario, resolveScenario } from '../scenarios/load-scenario.ts';
export type { ScenarioSpec } from '../scenarios/scenario-types.ts';
