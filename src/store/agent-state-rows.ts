import type { Kysely } from 'kysely';
import { describeStateProblem } from './agent-state-schema.ts';
import { requireRun } from './run-rows.ts';
import { SnapshotRestoreError } from './snapshot-restore-error.ts';
import { requireId } from './store-codec.ts';
import type { StoreSchema } from './store-schema.ts';
import type { AgentStateRecord, LoadStatesOptions } from './store-types.ts';

/*
 * The agents' state rows (`agent_states`): upserted by a round's commit (round-commit.ts), loaded and validated
 * when a run resumes. Part of the run store (see run-store.ts).
 */

/** The run store's agent state methods. */
export function agentStateMethods(db: Kysely<StoreSchema>): {
  loadAgentStates(runId: string, opts: LoadStatesOptions): Promise<Record<string, AgentStateRecord>>;
} {
  return {
    async loadAgentStates(runId: string, opts: LoadStatesOptions) {
      const op = 'loadAgentStates';
      opts.signal?.throwIfAborted();
      const id = requireId(op, 'runId', runId);
      const expected = requireId(op, 'machineVersion', opts?.machineVersion);
      await requireRun(db, id);
      opts.signal?.throwIfAborted();
      const rows = await db
        .selectFrom('agent_states')
        .selectAll()
        .where('run_id', '=', id)
        .orderBy('agent')
        .execute();
      const out: [string, AgentStateRecord][] = [];
      for (const row of rows) {
        const where = { runId: id, agent: row.agent, round: row.last_round };
        // Version first: a state from another version may legitimately have another shape.
        if (row.machine_version !== expected) {
          throw new SnapshotRestoreError({
            ...where,
            reason: 'machine_version_mismatch',
            storedVersion: row.machine_version,
            expectedVersion: expected,
          });
        }
        const data = { snapshot: row.snapshot, slots: row.slots, toolResults: row.tool_results };
        const problem = describeStateProblem(data);
        if (problem) throw new SnapshotRestoreError({ ...where, reason: 'corrupt', detail: problem });
        out.push([
          row.agent,
          Object.freeze({
            runId: id,
            agent: row.agent,
            lastRound: row.last_round,
            machineVersion: row.machine_version,
            snapshot: data.snapshot as Record<string, unknown>,
            slots: data.slots as Record<string, unknown>,
            toolResults: data.toolResults as unknown[],
          }),
        ]);
      }
      return Object.fromEntries(out);
    },
  };
}
