import { z } from 'zod';

/**
 * The shape an `agent_snapshots.data` document must have to be restored. `actorSnapshot` is an
 * XState v5 persisted snapshot: every kind of actor logic persists at least a `status`.
 *
 * @example
 * ```ts
 * agentSnapshotDataSchema.parse({ utterances: [], memory: {}, toolResults: [], actorSnapshot: actor.getPersistedSnapshot() });
 * ```
 */
export const agentSnapshotDataSchema = z.object({
  utterances: z.array(z.unknown()),
  memory: z.record(z.string(), z.unknown()),
  toolResults: z.array(z.unknown()),
  actorSnapshot: z.looseObject({
    status: z.enum(['active', 'done', 'error', 'stopped']),
  }),
});

/** Validates `data`; returns `undefined` when valid, else a one-line description of the first problem. */
export function describeSnapshotProblem(data: unknown): string | undefined {
  const parsed = agentSnapshotDataSchema.safeParse(data);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
  return `${path}: ${issue.message}`;
}
