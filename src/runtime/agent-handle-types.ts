import type { RuntimeActor } from './runtime-actor.ts';
import type { TurnStream } from './turn-stream.ts';
import type { AgentMemory, Turn } from '../core/turn.ts';

/**
 * The states an agent is seen in.
 *
 * @example
 * ```ts
 * const busy = (s: AgentStateName) => s === 'calling' || s === 'fallback';
 * ```
 */
export type AgentStateName =
  | 'idle'
  | 'queued'
  | 'calling'
  | 'fallback'
  | 'tools'
  | 'cooling'
  | 'degraded'
  | 'stopped';

/**
 * One agent state change, as `subscribe` reports it.
 *
 * @example
 * ```ts
 * supervisor.subscribe((c: AgentStateChange) => console.log(c.agent, c.previous, '→', c.state));
 * ```
 */
export interface AgentStateChange {
  readonly agent: string;
  readonly state: AgentStateName;
  readonly previous: AgentStateName;
  readonly at: number;
}

/**
 * Options of {@link AgentHandle.ask}.
 *
 * @example
 * ```ts
 * await agent.ask('Item 3?', { signal: AbortSignal.timeout(60_000), meta: { round: 2, itemId: 'U03' } });
 * ```
 */
export interface AskOptions {
  /**
   * Cancels the ask: a queued ask settles at once with nothing sent; a running one has its call aborted and its
   * token released. Either way the turn resolves with outcome `cancelled`. Default: none.
   */
  readonly signal?: AbortSignal;
  /** Id of the turn. Default: a random UUID. */
  readonly turnId?: string;
  /** Prefix of the turn's idempotency keys (the round runner uses run:round:item:agent). Default `<agent>:<turnId>`. */
  readonly key?: string;
  /** Where the turn belongs (round, agenda item); carried on its `turn.completed` event. Default none. */
  readonly meta?: TurnMeta;
}

/**
 * Where a turn belongs in a run.
 *
 * @example
 * ```ts
 * const meta: TurnMeta = { round: 2, itemId: 'U03' };
 * ```
 */
export interface TurnMeta {
  readonly round?: number;
  readonly itemId?: string;
}

/**
 * A running agent, as the embedding program sees it.
 *
 * @example
 * ```ts
 * const kai: AgentHandle = supervisor.spawnAgent({ name: 'Kai', chain: 'premium' });
 * const turn = await kai.ask('Summarize item 3');
 * kai.stop();
 * ```
 */
export interface AgentHandle {
  readonly name: string;
  readonly tier: string;
  /** The agent's XState actor (inspect, subscribe); `undefined` for `no_agent` work. */
  readonly actor?: RuntimeActor;
  /**
   * Gives the agent one piece of work and resolves with the finished turn: the answer, the endpoint used,
   * whether it is degraded, the faults met and the wait. Never rejects for an upstream fault: a fault no
   * engine swap can fix gives a turn with outcome `failed` and an `error`; a cancelled ask (its signal, the
   * agent's or the supervisor's stop) gives outcome `cancelled`. Asks to one agent run one at a time, in order.
   * Rejects with `AgentStoppedError` when the agent is already stopped.
   */
  ask(prompt: string, options?: AskOptions): Promise<Turn>;
  /**
   * The same turn as {@link AgentHandle.ask}, streamed: an async iterable of events (text deltas, tool calls,
   * faults met, endpoint changes with continuation or restart) ending with `done` and the same {@link Turn}.
   * Breaking out of the `for await` (or aborting `signal`) cancels the turn: the upstream request is aborted and
   * its token released, and the turn ends `cancelled`. Failover rules: README "Streaming". A stopped agent's
   * stream rejects (its iteration and `turn`) with `AgentStoppedError`. Each stream receives its own turn's
   * events only, whatever `turnId` it was given (two turns may share one).
   *
   * @example
   * ```ts
   * for await (const e of agent.stream('Item 3?', { signal })) if (e.type === 'text') process.stdout.write(e.text);
   * ```
   */
  stream(prompt: string, options?: AskOptions): TurnStream;
  /** `stopped` once stopped. */
  state(): AgentStateName;
  /** The agent's working memory (utterances, slots, tool results): plain JSON. */
  memory(): AgentMemory;
  /** XState persisted snapshot of the agent actor (for the durable store). */
  persistedSnapshot(): unknown;
  /** Sets memory slots (merged). */
  setMemory(slots: Readonly<Record<string, string>>): void;
  /** Resolves when the asks given so far have settled, or when `signal` aborts. */
  drain(signal?: AbortSignal): Promise<void>;
  /** Stops the agent: every pending ask settles `cancelled` (a call in flight is aborted); its name is free again. */
  stop(): void;
}
