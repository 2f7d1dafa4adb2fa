import { z } from 'zod';

/**
 * The shape an `agent_states` row must have to be restored (checked on load, never on save: a commit is the
 * hot path, a resume reads each row once). `snapshot` is an XState v5 persisted snapshot of the agent machine
 * without its settings, utterances and last turn.
 *
 * @example
 * ```ts
 * agentStateSchema.parse({ snapshot: { status: 'active', value: 'idle', context: { turn: null } }, slots: {}, toolResults: [] });
 * ```
 */
export const agentStateSchema = z.object({
  snapshot: z.looseObject({
    status: z.enum(['active', 'done', 'error', 'stopped']),
    value: z.union([z.string(), z.record(z.string(), z.unknown())]),
    context: z.looseObject({}),
  }),
  slots: z.record(z.string(), z.unknown()),
  toolResults: z.array(z.unknown()),
});

/** Validates a state row; returns `undefined` when valid, else a one-line description of the first problem. */
export function describeStateProblem(data: unknown): string | undefined {
  const parsed = agentStateSchema.safeParse(data);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
  return `${path}: ${issue.message}`;
}
