import {
  type ActiveTurn,
  type AgentContext,
  type AgentSettings,
  agentMachine,
  tokenRequestOf,
} from '../../machines/agent.machine.ts';
import type { AgentMemory, ToolResultRecord } from '../core/turn.ts';

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
  const whole = (persisted ?? {}) as { context?: AgentContext } & Record<string, unknown>;
  // Stored mid-call already in the form it resumes in (queued, asking for a token): a breakwater that restores
  // snapshots as they are (an earlier version, a worker not yet upgraded) resumes it too, instead of waiting in
  // `calling` for a call that died with this process.
  const snap = (
    whole.context ? resumedMidCall(whole, whole.context as unknown as Record<string, unknown>) : whole
  ) as {
    context?: AgentContext;
  } & Record<string, unknown>;
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
  return resumedMidCall(snap, { ...(snap.context ?? {}), settings, memory });
}

/**
 * `snap` with `context` as it resumes: unchanged unless it was taken mid-call (`calling` / `fallback`), which
 * resumes in `queued` (see {@link restoredAgentSnapshot}).
 */
function resumedMidCall(
  snap: Record<string, unknown>,
  context: Record<string, unknown>,
): Record<string, unknown> {
  if (snap.value !== 'calling' && snap.value !== 'fallback') return { ...snap, context };
  // Stored mid-call: that call's lease died with the process that held it (and the call is no actor to re-run).
  // The agent resumes asking for a token, as a call that found its lease gone does; the idempotency key of the
  // call is the same, so an answer committed before the crash is read back, not asked again.
  const turn = context.turn as ActiveTurn | null | undefined;
  if (!turn) return { ...snap, context };
  const { leaseId: _lease, ...rest } = turn;
  const queued = { ...context, turn: rest } as unknown as AgentContext;
  const children: Record<string, unknown> = {};
  // One stored by an earlier breakwater (same agent@2 context) held the call as an invoked `callEngine` child.
  for (const [id, child] of Object.entries((snap.children as Record<string, { src?: unknown }>) ?? {}))
    if (child?.src !== 'callEngine') children[id] = child;
  // XState restores the children a snapshot lists (it does not invoke a state's actors again): `queued`'s token
  // request is listed as it would have been persisted there, under that invoke's own id.
  children[QUEUED_INVOKE_ID] = {
    src: 'acquireToken',
    snapshot: { status: 'active', input: tokenRequestOf(queued) },
    syncSnapshot: false,
  };
  return { ...snap, value: 'queued', children, context: queued };
}

/** The id XState gives `queued`'s invoked `acquireToken` (the key of its child in a persisted snapshot). */
const QUEUED_INVOKE_ID: string = (() => {
  const id = agentMachine.states.queued?.invoke[0]?.id;
  if (!id) throw new Error('the agent machine has no token request in `queued`');
  return id;
})();
