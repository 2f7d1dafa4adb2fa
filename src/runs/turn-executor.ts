import type { RuntimeEventListener } from '../core/runtime-event.ts';
import type { TurnMeta } from '../runtime/agent-handle.ts';
import type { AgentMemory, Turn } from '../core/turn.ts';

/** What the round runner needs to run one turn, whatever the policy behind it. */
export interface TurnRequest {
  readonly agent: string;
  readonly prompt: string;
  /** Prefix of the turn's idempotency keys: `<runId>:<round>:<itemId>:<agent>`. */
  readonly key: string;
  readonly turnId: string;
  readonly meta: TurnMeta;
  readonly signal?: AbortSignal;
}

/**
 * A policy that turns requests into turns. `breakwater` (the supervisor runtime) is one; `status-quo` (seed
 * 000's worker as it was: process-global cooldown by model name, blocking 30/60/120 s backoff, one two-model
 * chain, no semaphore, every cron through the LLM) is the other, so the same scenario shows both.
 * Every executor reports through the same runtime events (call.attempt, turn.completed, policy.log, …).
 */
export interface TurnExecutor {
  readonly policy: 'breakwater' | 'status-quo';
  ask(request: TurnRequest): Promise<Turn>;
  /** Each agent's working memory now (committed with every round). */
  memory(agent: string): AgentMemory;
  /** XState persisted snapshot of the agent actor, when the policy has one. */
  persistedSnapshot(agent: string): unknown;
  /** Plain-data health to keep with a round (breakers, cooldowns), when the policy has one. */
  health(): unknown;
  /** What of the endpoints' health a resume puts back (`supervisor.durable.exportHealth()`), when the policy has it. */
  durableHealth?(): unknown;
  /** Resolves when every durable write the policy started (the call memo) has landed. Default: nothing to wait for. */
  settle?(): Promise<void>;
  /** Adds a listener to the runtime event feed; returns the unsubscribe function. */
  subscribeEvents(listener: RuntimeEventListener): () => void;
  stop(): Promise<void>;
}
