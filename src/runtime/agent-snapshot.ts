import type { AgentContext, AgentSettings } from '../../machines/agent.machine.ts';
import type { AgentMemory, ToolResultRecord } from './turn.ts';

/**
 * What of an agent actor's XState persisted snapshot is kept durably, and how a whole snapshot is put together
 * again. The stored part leaves out what other rows hold or the definition gives: `settings` (from the agent's
 * definition), `memory.utterances` (the agent's last turns in the turns log) and `lastTurn` (a turns row). So an
 * agent's state row stays small and the same size at turn 10 and turn 10,000.
 */

/** An agent's durable state: the slim snapshot, its memory slots and the tool results its prompt repeats. */
export interface AgentDurableState {
  /** The persisted snapshot without `context.settings`, `context.memory` and `context.lastTurn`. */
  readonly snapshot: Record<string, unknown>;
  readonly slots: Readonly<Record<string, string>>;
  readonly toolResults: readonly ToolResultRecord[];
}

/**
 * Splits `actor.getPersistedSnapshot()` of an agent into what is stored.
 *
 * @example
 * ```ts
 * const { snapshot, slots, toolResults } = durableAgentState(handle.persistedSnapshot());
 * ```
 */
export function durableAgentState(persisted: unknown): AgentDurableState {
  const snap = (persisted ?? {}) as { context?: AgentContext } & Record<string, unknown>;
  const context = snap.context;
  if (!context) return { snapshot: { ...snap }, slots: {}, toolResults: [] };
  const { settings: _settings, memory, lastTurn: _lastTurn, ...rest } = context;
  return {
    snapshot: { ...snap, context: rest },
    slots: memory?.slots ?? {},
    toolResults: memory?.toolResults ?? [],
  };
}

/**
 * The whole persisted snapshot again, for `createActor(agentMachine, { snapshot })`: the stored part with the
 * agent's settings (from its definition now) and its memory (slots and tool results from the state row,
 * utterances rebuilt from its last turns).
 *
 * @example
 * ```ts
 * const snapshot = restoredAgentSnapshot(row.snapshot, agentSettings(definition, tier, config), memory);
 * ```
 */
export function restoredAgentSnapshot(
  stored: unknown,
  settings: AgentSettings,
  memory: AgentMemory,
): Record<string, unknown> {
  const snap = (stored ?? {}) as { context?: Record<string, unknown> } & Record<string, unknown>;
  return { ...snap, context: { ...(snap.context ?? {}), settings, memory } };
}
