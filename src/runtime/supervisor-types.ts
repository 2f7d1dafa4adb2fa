import type { EngineWireOptions } from '../engines/create-engine.ts';
import type { TracingOptions } from './tracing/turn-tracer.ts';
import type { CoordinationOptions } from '../coordination/coordination-options.ts';
import type { Clock } from '../clock/clock.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import type { ChatMessage, Engine } from '../core/engine-types.ts';
import type { RuntimeEventListener } from '../core/runtime-event.ts';
import type { EndpointHealth, EndpointHealthExport } from '../health/endpoint-health-view.ts';
import type { SchedulerReport, TokenView } from '../scheduler/token-scheduler.ts';
import type { CallMemo } from '../core/call-memo.ts';
import type { AgentDefinition, AgentTool, ClientTool, DegradedContext } from './agent-definition.ts';
import type { AgentHandle, AgentStateChange } from './agent-handle-types.ts';
import type { RuntimeConfig } from './runtime-config.ts';
import type { ActorInspectionEvent, RuntimeActor } from './runtime-actor.ts';
import type { SupervisorByok } from './supervisor-byok.ts';
import type { AgentMemory, DegradedAnswer, Turn } from '../core/turn.ts';
import type { TurnStream } from './turn-stream.ts';
import type { Logger } from 'pino';

/*
 * The supervisor's public shape: its options, the runtime object it returns, and how an agent definition becomes
 * the agent machine's settings. `create-supervisor.ts` builds it.
 */

/**
 * Options of {@link createSupervisor}. Every one is optional.
 *
 * @example
 * ```ts
 * createSupervisor(config, { clock: createManualClock(0), onEvent: (e) => log.push(e), keepAlive: false });
 * ```
 */
export interface SupervisorOptions {
  /** Time source for every deadline, cooldown and bucket. Default: the system clock. */
  readonly clock?: Clock;
  /** pino logger; one line per call attempt. Default: {@link createLogger} (silent unless BREAKWATER_LOG_LEVEL). */
  readonly logger?: Logger;
  /** Builds an endpoint's engine. Default: the unified adapter (`createEngine`). */
  readonly createEngine?: (config: ParsedEndpointConfig) => Engine;
  /**
   * How the engine of a BYOK key for each template (by name) reads the waits on the wire: `createEngine`'s twin
   * for keys injected at run time (`wireScale` for a template in wall time on a time-scaled clock). Default:
   * wall time, unscaled.
   */
  readonly byokWire?: (templateName: string) => EngineWireOptions;
  /** XState inspection events of every actor (each agent, the supervisor's lifecycle): the visualizer's feed. Default none. */
  inspect?(event: ActorInspectionEvent): void;
  /** Memo of finished calls by idempotency key (the durable store). Default: none (in-memory only). */
  readonly memo?: CallMemo;
  /** Receives the scheduler's decisions (grants, waits, denials, reclaims, probes). Default none. */
  readonly onReport?: (report: SchedulerReport) => void;
  /** Random source for backoff jitter. Default Math.random. */
  readonly random?: () => number;
  /**
   * Receives every runtime event as plain data: agent state changes, call attempts (probes included), token
   * grants and releases, waits, denials, probes, breaker changes, finished turns. The event log and the
   * visualizer are built from it. Default none.
   */
  readonly onEvent?: RuntimeEventListener;
  /**
   * Keep the process alive while an ask is pending (the clock's own timers never hold it open, so a script whose
   * agents all wait out a cooldown would otherwise exit with its asks unsettled). Default true.
   */
  readonly keepAlive?: boolean;
  /**
   * OpenTelemetry spans of turns and upstream attempts (GenAI conventions), through `@opentelemetry/api`.
   * Default: on when the app registered a tracer provider before creating the supervisor, else off (no cost).
   * `false` turns it off; `{ tracer }` uses that tracer; `{ captureContent: true }` records prompts and answers.
   */
  readonly tracing?: TracingOptions | false;
  /**
   * Several processes on one quota: `{ backend: 'postgres' | 'redis', url }` shares the concurrency tokens
   * (leases renewed by heartbeat, fenced) and the endpoints' health (cooldowns, disables, OPEN breakers).
   * A bad backend or URL throws a ConfigError naming the option; an unreachable or lost backend makes this
   * process stop sending (requests are denied, agents answer degraded) with one error line. Default
   * `{ backend: 'memory' }`: this process alone.
   */
  readonly coordination?: CoordinationOptions;
}

/**
 * Options of {@link Supervisor.spawnAgent}.
 *
 * @example
 * ```ts
 * supervisor.spawnAgent(definition, { memory: saved.memory, snapshot: saved.snapshot });
 * ```
 */
export interface SpawnOptions {
  /** Working memory to start from (a resumed run). Default: empty, with the definition's initial slots. */
  readonly memory?: AgentMemory;
  /**
   * A persisted snapshot of this agent's actor to restore instead of starting fresh (`handle.persistedSnapshot()`,
   * or the stored part of it, `durableAgentState(...).snapshot`: settings come from the definition and memory
   * from `memory`): a cooling agent wakes at its stored deadline, a queued one asks for a token again. Default none.
   */
  readonly snapshot?: unknown;
}

/** The runtime's durable state besides its agents: endpoint health and the degraded layer's answer cache. */
export interface SupervisorDurable {
  /** Every configured endpoint's health (breaker, cooldown, disable, buckets, AIMD), by endpoint id. */
  exportHealth(): Record<string, EndpointHealthExport>;
  /** Puts exported health back (a resumed run, before its first ask); unknown endpoint ids are skipped. */
  restoreHealth(data: Readonly<Record<string, EndpointHealthExport>>): void;
  /** Files earlier good answers in the answer cache, oldest first (a resumed run). */
  restoreAnswers(entries: readonly { agent: string; prompt: string; answer: string; at?: number }[]): void;
}

/**
 * Where the supervisor is in its life.
 *
 * @example
 * ```ts
 * if (supervisor.state() !== 'running') return;
 * ```
 */
export type SupervisorState = 'running' | 'draining' | 'stopped';

/**
 * A running breakwater runtime: the supervisor with its agents, tokens and endpoint health.
 *
 * @example
 * ```ts
 * const supervisor: Supervisor = createSupervisor(config);
 * console.log(supervisor.tokens().held, supervisor.health().map((h) => h.breaker));
 * await supervisor.stop();
 * ```
 */
export interface Supervisor {
  readonly config: RuntimeConfig;
  /** The supervisor's lifecycle actor (system id `supervisor`): running → draining → stopped. */
  readonly actor: RuntimeActor;
  /** The clock every deadline runs on. */
  readonly clock: Clock;
  /**
   * Starts an agent (an LLM agent actor, or plain `no_agent` work). Throws ConfigError on a bad definition or a
   * name in use, and AgentStoppedError once the supervisor is stopping. O(1).
   */
  spawnAgent(definition: AgentDefinition, options?: SpawnOptions): AgentHandle;
  /**
   * One call with no agent memory, under the same protection as an agent's turn: a token, the chain's breakers
   * and cooldowns, fallback, the degraded layer. Resolves with the same {@link Turn} (`outcome`, `endpointId`,
   * `faults`, `answer`); never rejects for an upstream fault. Rejects with a ConfigError for an unknown chain or
   * tier, and with AgentStoppedError once the supervisor is stopping.
   *
   * @example
   * ```ts
   * const turn = await supervisor.call({
   *   chain: 'premium',
   *   system: 'Answer in one sentence.',
   *   messages: [{ role: 'user', content: 'What moved EURUSD overnight?' }],
   *   signal: AbortSignal.timeout(30_000),
   * });
   * console.log(turn.outcome, turn.endpointId, turn.answer.text);
   * ```
   */
  call(options: CallOptions): Promise<Turn>;
  /**
   * The streaming twin of {@link Supervisor.call}: the same one-off call, as a {@link TurnStream} of events
   * (text deltas, tool calls, faults, endpoint changes) ending with the same {@link Turn}. Breaking out of the
   * `for await` aborts the upstream request and releases its token. Throws (synchronously, no stream is made) a
   * ConfigError for no messages, an unknown chain or tier, and AgentStoppedError once the supervisor is stopping.
   *
   * @example
   * ```ts
   * const stream = supervisor.stream({ chain: 'premium', messages: [{ role: 'user', content: 'Hi' }] });
   * for await (const e of stream) if (e.type === 'text') process.stdout.write(e.text);
   * console.log((await stream.turn).outcome);
   * ```
   */
  stream(options: CallOptions): TurnStream;
  agent(name: string): AgentHandle | undefined;
  agents(): readonly AgentHandle[];
  /** Calls `listener` on every agent state change. Returns the unsubscribe function. */
  subscribe(listener: (change: AgentStateChange) => void): () => void;
  /** Calls `listener` with every runtime event (the same feed as the `onEvent` option). Returns the unsubscribe function. */
  subscribeEvents(listener: RuntimeEventListener): () => void;
  health(): readonly EndpointHealth[];
  /** What the durable store keeps of the runtime besides the agents, and puts back on resume. */
  readonly durable: SupervisorDurable;
  tokens(): TokenView;
  /** Changes the number of global concurrency tokens (at least 1). */
  setLimit(limit: number): void;
  state(): SupervisorState;
  /**
   * Runtime BYOK: `inject(sessionId, provider, key, { signal })` a user's own key mid-run (checked, kept
   * encrypted in memory, used only by that session's agents after their chain), `revoke`, `list`,
   * `endSession`. Needs `byok.templates` in the config; without them `inject` throws a ConfigError.
   */
  readonly byok: SupervisorByok;
  /**
   * Drains, then stops: new asks and spawns are refused at once, the asks already given finish, then every
   * agent stops and every BYOK key is wiped. When `signal` aborts (before or during the drain), every pending
   * ask is cancelled instead: calls in flight are aborted, queued asks settle `cancelled` with nothing sent.
   * Resolves once stopped; every ask has settled by then. Calling it again returns the same stop.
   */
  stop(options?: { signal?: AbortSignal }): Promise<void>;
}

/**
 * Options of {@link Supervisor.call}: one request, no agent memory.
 *
 * @example
 * ```ts
 * const options: CallOptions = { chain: 'premium', messages: [{ role: 'user', content: 'Hi' }], signal };
 * const turn = await supervisor.call(options);
 * ```
 */
export interface CallOptions {
  /** The engine chain to call (one of the config's `chains`). */
  readonly chain: string;
  /** Priority tier of its token (one of the config's `tiers`). Default: the last (lowest) tier. */
  readonly tier?: string;
  /** System prompt. Default: none. */
  readonly system?: string;
  /**
   * The conversation to send, oldest first; at least one message, the last normally the user's. Tool calls and
   * results of earlier steps go in as `tool_call` / `tool_result` messages.
   */
  readonly messages: readonly ChatMessage[];
  /**
   * Tools the model may call. Tools with `run` (e.g. {@link defineTool}) are run by breakwater inside the call,
   * as an agent's are; a call of a tool without `run` ends the call with `turn.toolCalls` for you to run.
   * Default: none.
   */
  readonly tools?: Readonly<Record<string, AgentTool | ClientTool>>;
  /** Cancels the call: a queued call settles at once with nothing sent, a running one is aborted. The turn resolves `cancelled`. Default: none. */
  readonly signal?: AbortSignal;
  /** Upper bound on output tokens. Default: the config's `agentDefaults.maxTokens`. */
  readonly maxTokens?: number;
  /** Sampling temperature. Default: the provider's. */
  readonly temperature?: number;
  /** How long the call may wait for a token or a cooldown before it answers degraded, ms. Default: `agentDefaults.maxWaitMs`. */
  readonly maxWaitMs?: number;
  /** Upstream attempts per engine step before it answers degraded. Default: `agentDefaults.maxAttempts`. */
  readonly maxAttempts?: number;
  /** Structured answer when no engine can answer. Default: a summary of the prompt. */
  readonly decisionTree?: (context: DegradedContext) => DegradedAnswer;
  /** Name the call carries in events and logs (the `agent` of its turn). Default: `call-<8 hex digits>`, unique. */
  readonly name?: string;
  /** Prefix of the call's idempotency keys (a retried request that must not be asked twice). Default: `<name>:<turnId>`. */
  readonly key?: string;
}
