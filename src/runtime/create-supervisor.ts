import type { Logger } from 'pino';
import { type Actor, type AnyActorRef, type InspectionEvent, createActor } from 'xstate';
import { type AgentInput, type AgentSettings, agentMachine } from '../../machines/agent.machine.ts';
import { type SupervisorReport, createSupervisorMachine } from '../../machines/supervisor.machine.ts';
import { type Clock, systemClock } from '../clock/clock.ts';
import { AnswerCache } from '../degraded/answer-cache.ts';
import { createDegradedResponder } from '../degraded/degraded-responder.ts';
import { createEngine as createAdapterEngine } from '../engines/create-engine.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import type { Engine } from '../engines/engine-types.ts';
import { ConfigError } from '../errors/config-error.ts';
import type { RuntimeEvent, RuntimeEventListener } from '../events/runtime-event.ts';
import { createLogger } from '../logging/logger.ts';
import { RetryBudget } from '../resilience/retry-budget.ts';
import { type CallMemo, createAgentActors } from './agent-actors.ts';
import { type AgentDefinition, type LlmAgentDefinition, isNoAgentDefinition } from './agent-definition.ts';
import { type AgentHandle, createAgentHandle, createNoAgentHandle, type TurnMeta } from './agent-handle.ts';
import { EnginePool, type EndpointHealth } from './engine-pool.ts';
import { type RuntimeConfig, type RuntimeConfigInput, defineConfig } from './runtime-config.ts';
import { DEFAULT_BYOK_SESSION, type SupervisorByok, wireByok } from './supervisor-byok.ts';
import { type AgentMemory, emptyMemory, type Turn } from './turn.ts';

/** The five states an agent is seen in (plus `queued` and `tools`, which are transient). */
export type AgentStateName =
  | 'idle'
  | 'queued'
  | 'calling'
  | 'fallback'
  | 'tools'
  | 'cooling'
  | 'degraded'
  | 'stopped';

/** One agent state change, as `subscribe` reports it. */
export interface AgentStateChange {
  readonly agent: string;
  readonly state: AgentStateName;
  readonly previous: AgentStateName;
  readonly at: number;
}

/** Options of {@link createSupervisor}. Every one is optional. */
export interface SupervisorOptions {
  /** Time source for every deadline, cooldown and bucket. Default: the system clock. */
  readonly clock?: Clock;
  /** pino logger; one line per call attempt. Default: {@link createLogger} (silent unless BREAKWATER_LOG_LEVEL). */
  readonly logger?: Logger;
  /** Builds an endpoint's engine. Default: the unified adapter (`createEngine`). */
  readonly createEngine?: (config: ParsedEndpointConfig) => Engine;
  /** XState inspection events of every actor (agents, supervisor, breakers): the visualizer's feed. Default none. */
  readonly inspect?: (event: InspectionEvent) => void;
  /** Memo of finished calls by idempotency key (the durable store). Default: none (in-memory only). */
  readonly memo?: CallMemo;
  /** Receives the supervisor's decisions (grants, waits, denials, reclaims, probes). Default none. */
  readonly onReport?: (report: SupervisorReport) => void;
  /** Random source for backoff jitter. Default Math.random. */
  readonly random?: () => number;
  /**
   * Receives every runtime event as plain data: agent state changes, call attempts, token grants and
   * releases, waits, denials, probes, breaker changes, finished turns. The event log and the visualizer
   * are built from it. Default none.
   */
  readonly onEvent?: RuntimeEventListener;
}

/** The token state at a glance. */
export interface TokenView {
  readonly limit: number;
  readonly held: number;
  readonly holders: readonly {
    readonly holder: string;
    readonly endpointId: string;
    readonly tier: string;
  }[];
  readonly queue: readonly { readonly agent: string; readonly tier: string }[];
}

/**
 * A running breakwater runtime: the supervisor actor with its agents, tokens and endpoint health.
 */
export interface Supervisor {
  readonly config: RuntimeConfig;
  /** The root XState actor (system id `supervisor`). */
  readonly actor: AnyActorRef;
  /** Starts an agent (an LLM agent actor, or plain `no_agent` work). Throws ConfigError on a bad definition. */
  spawnAgent(definition: AgentDefinition, options?: { memory?: AgentMemory }): AgentHandle;
  agent(name: string): AgentHandle | undefined;
  agents(): readonly AgentHandle[];
  /** Calls `listener` on every agent state change. Returns the unsubscribe function. */
  subscribe(listener: (change: AgentStateChange) => void): () => void;
  /** Calls `listener` with every runtime event (the same feed as the `onEvent` option). Returns the unsubscribe function. */
  subscribeEvents(listener: RuntimeEventListener): () => void;
  health(): readonly EndpointHealth[];
  tokens(): TokenView;
  /**
   * Runtime BYOK: `inject(sessionId, provider, key, { signal })` a user's own key mid-run (checked, kept
   * encrypted in memory, used only by that session's agents after their chain), `revoke`, `list`,
   * `endSession`. Needs `byok.templates` in the config; without them `inject` throws a ConfigError.
   */
  readonly byok: SupervisorByok;
  /** Drains: refuses new asks, waits for the turns in progress, then stops every actor; wipes every BYOK key. */
  stop(options?: { signal?: AbortSignal }): Promise<void>;
}

/**
 * Creates the runtime: validates the config (a bad one is refused with a ConfigError naming the field),
 * builds the engine pool and starts the supervisor actor.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor({
 *   endpoints: [
 *     { id: 'sonnet', provider: 'anthropic', model: 'claude-sonnet-4-6', apiKeyEnv: 'ANTHROPIC_API_KEY' },
 *     { id: 'flash', provider: 'gemini', model: 'gemini-2.5-flash', apiKeyEnv: 'GEMINI_API_KEY' },
 *   ],
 *   chains: { premium: ['sonnet', 'flash'] },
 * });
 * const analyst = supervisor.spawnAgent({ name: 'analyst', chain: 'premium', tier: 'analysis' });
 * const turn = await analyst.ask('Summarize the overnight moves.');
 * console.log(turn.outcome, turn.endpointId, turn.answer.text);
 * await supervisor.stop();
 * ```
 */
export function createSupervisor(
  input: RuntimeConfigInput | RuntimeConfig,
  options: SupervisorOptions = {},
): Supervisor {
  const config = defineConfig(input as RuntimeConfigInput);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger();
  const build = options.createEngine ?? ((c: ParsedEndpointConfig) => createAdapterEngine(c, { clock }));
  const eventListeners = new Set<RuntimeEventListener>();
  if (options.onEvent) eventListeners.add(options.onEvent);
  const emit = (e: RuntimeEvent) => {
    for (const l of eventListeners) l(e);
  };
  const onBreakerChange = (c: {
    endpointId: string;
    state: string;
    previous: string;
    openUntil: number | null;
  }) =>
    emit({
      type: 'breaker.state',
      at: clock.now(),
      endpoint: c.endpointId,
      data: { state: c.state, previous: c.previous, openUntil: c.openUntil },
    });
  let root: Actor<ReturnType<typeof createSupervisorMachine>> | undefined;
  const byok = wireByok({
    config,
    clock,
    logger,
    pool: () => pool,
    emit,
    endpointOptions: { ...(options.inspect ? { inspect: options.inspect } : {}), onBreakerChange },
    // Agents queued for pacing or concurrency may now be granted the new key's endpoint.
    onInjected: () => root?.send({ type: 'SCAN' }),
  });
  const pool = new EnginePool(config, {
    clock,
    createEngine: build,
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(options.random ? { random: options.random } : {}),
    onBreakerChange,
    onFault: (endpointId, fault) => byok.onFault(endpointId, fault),
  });
  const budget = new RetryBudget({
    ratio: config.retry.budgetRatio,
    windowMs: config.retry.budgetWindowMs,
    minRetriesPerWindow: config.retry.minRetriesPerWindow,
  });
  const definitions = new Map<string, AgentDefinition>();
  const cache = new AnswerCache();
  const trees: Record<string, NonNullable<LlmAgentDefinition['decisionTree']>> = {};
  const degraded = createDegradedResponder({ cache, trees });
  const actors = createAgentActors({
    pool,
    clock,
    logger,
    definitions,
    degraded,
    ...(options.memo ? { memo: options.memo } : {}),
    onCall: (c) =>
      emit({
        type: 'call.attempt',
        at: c.at,
        agent: c.agent,
        endpoint: c.endpointId,
        data: {
          tier: c.tier,
          outcome: c.outcome,
          startedAt: c.startedAt,
          latencyMs: c.at - c.startedAt,
          provider: c.provider,
          model: c.model,
          ...(c.fault
            ? {
                faultKind: c.fault.kind,
                ...(c.fault.status !== undefined ? { status: c.fault.status } : {}),
                ...(c.fault.retryAfterMs !== undefined ? { retryAfterMs: c.fault.retryAfterMs } : {}),
              }
            : { status: 200 }),
        },
      }),
  });

  /** The BYOK session of each LLM agent: only that session's keys come after its chain. */
  const sessions = new Map<string, string>();
  const machine = createSupervisorMachine({
    pool,
    clock,
    budget,
    tiers: config.tiers,
    limit: config.concurrency.limit,
    leaseMs: config.concurrency.leaseMs,
    startProbe: (endpointId, leaseId) => {
      void pool.probe(endpointId).finally(() => root?.send({ type: 'PROBE.DONE', leaseId }));
    },
    extraEndpoints: (agent) => byok.endpointsFor(sessions.get(agent) ?? DEFAULT_BYOK_SESSION),
    report: (r) => {
      if (r.type === 'probe.started') logger.info({ endpoint: r.endpointId }, 'probe');
      options.onReport?.(r);
      if (eventListeners.size > 0) emit(reportToEvent(r));
    },
  }).provide({ actors: { agent: agentMachine.provide({ actors }) } });

  const started = createActor(machine, {
    systemId: 'supervisor',
    clock: clock as never,
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });
  root = started;
  started.start();

  const handles = new Map<string, AgentHandle>();
  const listeners = new Set<(c: AgentStateChange) => void>();
  const notify = (c: AgentStateChange) => {
    emit({ type: 'agent.state', at: c.at, agent: c.agent, data: { state: c.state, previous: c.previous } });
    for (const l of listeners) l(c);
  };
  let stopping = false;

  const spawnAgent: Supervisor['spawnAgent'] = (definition, spawnOptions = {}) => {
    if (stopping) throw new Error('the supervisor is stopping; no new agents');
    const where = `agents.${definition.name}`;
    if (!definition.name)
      throw new ConfigError({ source: 'spawnAgent', path: 'name', message: 'an agent needs a name' });
    if (handles.has(definition.name))
      throw new ConfigError({
        source: 'spawnAgent',
        path: `${where}.name`,
        message: 'an agent of this name is already running; names must be unique',
      });
    const tier = definition.tier ?? config.tiers[config.tiers.length - 1]!;
    if (!config.tiers.includes(tier))
      throw new ConfigError({
        source: 'spawnAgent',
        path: `${where}.tier`,
        message: `unknown tier "${tier}"; use one of ${config.tiers.join(', ')}`,
      });
    definitions.set(definition.name, definition);
    if (isNoAgentDefinition(definition)) {
      const h = createNoAgentHandle(definition, tier, clock, (turn, meta) => emit(turnEvent(turn, meta)));
      handles.set(definition.name, h);
      return h;
    }
    if (!config.chains[definition.chain])
      throw new ConfigError({
        source: 'spawnAgent',
        path: `${where}.chain`,
        message: `unknown chain "${definition.chain}"; define it under chains (defined: ${Object.keys(config.chains).join(', ')})`,
      });
    if (
      definition.session !== undefined &&
      (typeof definition.session !== 'string' || definition.session.length === 0)
    )
      throw new ConfigError({
        source: 'spawnAgent',
        path: `${where}.session`,
        message: 'must be a non-empty string (the user session whose BYOK keys the agent may use)',
      });
    sessions.set(definition.name, definition.session ?? DEFAULT_BYOK_SESSION);
    if (definition.decisionTree) trees[definition.name] = definition.decisionTree;
    const d = config.agentDefaults;
    const settings: AgentSettings = {
      name: definition.name,
      tier,
      chain: definition.chain,
      ...(definition.role ? { role: definition.role } : {}),
      maxWaitMs: definition.maxWaitMs ?? d.maxWaitMs,
      maxAttempts: definition.maxAttempts ?? d.maxAttempts,
      maxTokens: definition.maxTokens ?? d.maxTokens,
      ...(definition.temperature !== undefined ? { temperature: definition.temperature } : {}),
      historyTurns: definition.historyTurns ?? d.historyTurns,
      probeIntervalMs: d.probeIntervalMs,
      tools: Object.entries(definition.tools ?? {}).map(([name, t]) => ({
        name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.parameters,
      })),
    };
    const agentInput: AgentInput = {
      settings,
      memory: spawnOptions.memory ?? emptyMemory(definition.memory),
    };
    started.send({ type: 'AGENT.SPAWN', name: definition.name, input: agentInput });
    const ref = started.system.get(`agent:${definition.name}`) as AnyActorRef;
    const h = createAgentHandle({
      name: definition.name,
      tier,
      ref,
      clock,
      onState: notify,
      onTurn: (turn, meta) => {
        if (turn.outcome === 'answered' || turn.outcome === 'fallback')
          cache.remember(turn.agent, turn.prompt, turn.answer.text);
        emit(turnEvent(turn, meta));
      },
      stop: () => started.send({ type: 'AGENT.STOP', name: definition.name }),
    });
    handles.set(definition.name, h);
    return h;
  };

  return {
    config,
    actor: started,
    spawnAgent,
    agent: (name) => handles.get(name),
    agents: () => [...handles.values()],
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    subscribeEvents(listener) {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
    health: () => pool.health(clock.now()),
    byok: byok.api,
    tokens() {
      const ctx = started.getSnapshot().context;
      return {
        limit: ctx.limit,
        held: Object.keys(ctx.leases).length,
        holders: Object.values(ctx.leases).map((l) => ({
          holder: l.holder,
          endpointId: l.endpointId,
          tier: l.tier,
        })),
        queue: ctx.queue.map((q) => ({ agent: q.agent, tier: q.tier })),
      };
    },
    async stop(stopOptions = {}) {
      stopping = true;
      const drains = [...handles.values()].map((h) => h.drain(stopOptions.signal));
      await Promise.allSettled(drains);
      started.stop();
      // Every user key is wiped (its endpoint removed) before the pool's breakers stop.
      byok.close();
      pool.stop();
    },
  };
}

function turnEvent(turn: Turn, meta: TurnMeta | undefined): RuntimeEvent {
  return {
    type: 'turn.completed',
    at: turn.finishedAt,
    agent: turn.agent,
    ...(turn.endpointId ? { endpoint: turn.endpointId } : {}),
    data: {
      turnId: turn.turnId,
      tier: turn.tier,
      ...(meta?.round !== undefined ? { round: meta.round } : {}),
      ...(meta?.itemId !== undefined ? { itemId: meta.itemId } : {}),
      outcome: turn.outcome,
      degraded: turn.degraded,
      ...(turn.degradedReason ? { degradedReason: turn.degradedReason } : {}),
      waitMs: turn.waitMs,
      attempts: turn.attempts,
      faults: turn.faults.map((f) => f.kind),
      startedAt: turn.startedAt,
    },
  };
}

function reportToEvent(r: SupervisorReport): RuntimeEvent {
  switch (r.type) {
    case 'token.granted':
      return {
        type: r.type,
        at: r.at,
        agent: r.agent,
        endpoint: r.endpointId,
        data: { leaseId: r.leaseId, waitedMs: r.waitedMs, held: r.held },
      };
    case 'token.released':
      return {
        type: r.type,
        at: r.at,
        agent: r.agent,
        endpoint: r.endpointId,
        data: { leaseId: r.leaseId, held: r.held },
      };
    case 'token.reclaimed':
      return {
        type: r.type,
        at: r.at,
        endpoint: r.endpointId,
        data: { leaseId: r.leaseId, holder: r.holder },
      };
    case 'token.wait':
      return {
        type: r.type,
        at: r.at,
        agent: r.agent,
        endpoint: r.endpointId,
        data: { until: r.until, cause: r.cause },
      };
    case 'token.denied':
      return { type: r.type, at: r.at, agent: r.agent, data: { reason: r.reason } };
    case 'probe.started':
      return { type: r.type, at: r.at, endpoint: r.endpointId, data: { leaseId: r.leaseId } };
  }
}
