import { hostname } from 'node:os';
import { type Actor, createActor, fromPromise, type Snapshot } from 'xstate';
import { type AgentInput, agentMachine } from '../../machines/agent.machine.ts';
import type { AgentContext } from '../../machines/agent.types.ts';
import { supervisorMachine } from '../../machines/supervisor.machine.ts';
import { systemClock } from '../clock/clock.ts';
import { isScaledClock } from '../clock/scaled-clock.ts';
import { AnswerCache } from '../degraded/answer-cache.ts';
import { createDegradedResponder } from '../degraded/degraded-responder.ts';
import { createEngine as createAdapterEngine } from '../engines/create-engine.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { AgentStoppedError } from '../core/errors/lifecycle-errors.ts';
import type { RuntimeEvent, RuntimeEventListener } from '../core/runtime-event.ts';
import { EndpointRegistry } from '../health/endpoint-registry.ts';
import { createLogger } from '../logging/logger.ts';
import { RetryBudget } from '../resilience/retry-budget.ts';
import { MemoryTokenScheduler } from '../scheduler/memory-token-scheduler.ts';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import { resolveCoordination } from '../coordination/coordination-options.ts';
import { createCoordinationBackend } from '../coordination/create-coordination.ts';
import { CoordinatedTokenScheduler } from '../coordination/coordinated-token-scheduler.ts';
import { SharedHealthLink } from '../coordination/shared-health-link.ts';
import { TimerHeap } from '../clock/timer-heap.ts';
import { onAbort } from '../clock/abort-fanout.ts';
import { type CallRecordEvent, createAgentActors } from './agent-actors.ts';
import {
  type AgentDefinition,
  isNoAgentDefinition,
  type LlmAgentDefinition,
  unknownAgentField,
} from './agent-definition.ts';
import {
  type AgentHandleHooks,
  type AgentStateChange,
  LlmAgentHandle,
  type ManagedHandle,
} from './agent-handle.ts';
import { KeepAlive } from './keep-alive.ts';
import { reportedCall } from './key-check-record.ts';
import { NoAgentHandle } from './no-agent-handle.ts';
import { createOneOffCaller, createOneOffStreamer } from './one-off-call.ts';
import { createProbeRunner } from './probe-runner.ts';
import { agentSettings } from './agent-settings.ts';
import type { Supervisor, SupervisorOptions } from './supervisor-types.ts';
import { type RuntimeConfig, type RuntimeConfigInput, defineConfig } from './runtime-config.ts';
import { globalTracingRegistered } from './tracing/global-tracing.ts';
import { TurnTracer } from './tracing/turn-tracer.ts';
import { callEvent, reportToEvent, turnEvent } from './runtime-events.ts';
import { DEFAULT_BYOK_SESSION, wireByok } from './supervisor-byok.ts';
import { restoredAgentSnapshot } from './agent-snapshot.ts';
import { emptyMemory } from '../core/turn.ts';

export type { AgentStateChange, AgentStateName } from './agent-handle-types.ts';
export type { TokenView } from '../scheduler/token-scheduler.ts';
export type { SpawnOptions, Supervisor, SupervisorOptions, SupervisorState } from './supervisor-types.ts';

/**
 * Creates the runtime: validates the config (a bad one is refused with a ConfigError naming the field),
 * builds the endpoints with their health, the token scheduler, and starts the supervisor's lifecycle.
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
  const config = defineConfig(input as RuntimeConfigInput, 'createSupervisor');
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger();
  const coordination = resolveCoordination(options.coordination, `${hostname()}:${process.pid}`);
  const build = options.createEngine ?? ((c: ParsedEndpointConfig) => createAdapterEngine(c, { clock }));
  const eventListeners = new Set<RuntimeEventListener>();
  if (options.onEvent) eventListeners.add(options.onEvent);
  // A listener that throws is a bug of its own: logged, and the runtime (its asks, its tokens) goes on.
  const listenerFailed = (what: string, e: unknown) =>
    logger.error(
      { listener: what, error: e instanceof Error ? e.name : typeof e },
      'a runtime listener threw',
    );
  const emit = (e: RuntimeEvent) => {
    for (const l of eventListeners) {
      try {
        l(e);
      } catch (err) {
        listenerFailed('onEvent', err);
      }
    }
  };
  // Tracing is on when a tracer is given, or when the app registered a tracer provider before this point.
  const tracer =
    options.tracing === false || (!options.tracing?.tracer && !globalTracingRegistered())
      ? undefined
      : new TurnTracer(options.tracing || {});
  const timers = new TimerHeap(clock);
  const keepAlive = new KeepAlive(options.keepAlive ?? true);
  let scheduler!: TokenScheduler;
  let healthLink: SharedHealthLink | undefined;
  let coordinated: CoordinatedTokenScheduler | undefined;
  const byok = wireByok({
    config,
    clock,
    logger,
    pool: () => ({
      addEndpoint: (c, o) => {
        endpoints.add(c, o.createEngine);
        scheduler.rescan();
      },
      removeEndpoint: (id) => {
        endpoints.remove(id);
        scheduler.rescan();
      },
    }),
    emit,
    endpointOptions: {},
    ...(options.byokWire ? { wireOf: options.byokWire } : {}),
    // A key's check call is an upstream call: it takes a token (served first, like a HALF-OPEN probe).
    withToken: async (label, run, signal) => {
      const grant = await scheduler.acquireProbe(label, signal);
      try {
        return await reportedCall(label, () => run(grant.signal), clock, reportCall);
      } finally {
        scheduler.release(grant.leaseId, { kind: 'unused' });
      }
    },
    onInjected: () => {
      scheduler.rescan();
      // Agents cooling on their own timers may use the new key now.
      recheckCooling();
    },
  });
  const probes = { request: (id: string) => probeRunner.request(id) };
  /** A probe's or a key check's upstream call, as the call log, metrics and traces see it. */
  const reportCall = (c: CallRecordEvent) => {
    emit(callEvent(c));
    tracer?.attempt(c, endpoints.get(c.endpointId)?.health.breakerState);
  };
  const endpoints = new EndpointRegistry(config.endpoints, config.chains, {
    timers,
    createEngine: build,
    ...(options.random ? { random: options.random } : {}),
    settings: {
      breaker: config.breaker,
      baseBackoffMs: config.retry.baseBackoffMs,
      maxBackoffMs: config.retry.maxBackoffMs,
      creditCooldownMs: config.creditCooldownMs,
      adaptive: config.concurrency.adaptive,
      defaultConcurrency: config.concurrency.limit,
    },
    hooks: {
      onBreakerChange: (c) => {
        emit({
          type: 'breaker.state',
          at: clock.now(),
          endpoint: c.endpointId,
          data: { state: c.state, previous: c.previous, openUntil: c.openUntil },
        });
        // A probe closed it: agents cooling until their next look (the probe's outcome had no known time) go now.
        if (c.state === 'closed') recheckCooling(c.endpointId);
      },
      onProbeWanted: (id) => probes.request(id),
      onReadinessChange: (id) => scheduler?.wake(id),
      onFault: (id, fault) => {
        byok.onFault(id, fault);
        // Other processes on the same quota hear of the cooldown / disable at once.
        healthLink?.publish(id);
      },
      // Only with a shared backend: one process alone has nobody to tell (no cost on its hot path).
      ...(coordination ? { onRateLimit: (id, windows) => healthLink?.rateLimit(id, windows) } : {}),
    },
  });
  /** The BYOK session of each LLM agent: only that session's keys come after its chain. */
  const sessions = new Map<string, string>();
  const endpointsOf = (chain: string, session: string | undefined) => {
    const extra = byok.endpointsFor(session ?? DEFAULT_BYOK_SESSION);
    const own = endpoints.chain(chain);
    return extra.length === 0 ? own : [...own, ...extra];
  };
  const local = new MemoryTokenScheduler({
    clock,
    timers,
    endpoints,
    limit: config.concurrency.limit,
    tiers: config.tiers,
    ...(config.tierAgingMs !== undefined ? { tierAgingMs: config.tierAgingMs } : {}),
    leaseMs: config.concurrency.leaseMs,
    reclaimGraceMs: config.concurrency.reclaimGraceMs,
    budget: new RetryBudget({
      ratio: config.retry.budgetRatio,
      windowMs: config.retry.budgetWindowMs,
      minRetriesPerWindow: config.retry.minRetriesPerWindow,
    }),
    endpointsFor: (r) => endpointsOf(r.chain, r.session),
    onReport: (r) => {
      try {
        options.onReport?.(r);
      } catch (err) {
        listenerFailed('onReport', err);
      }
      tracer?.report(r);
      if (eventListeners.size > 0) emit(reportToEvent(r));
    },
    onForcedReclaim: (g) =>
      logger.warn(
        { endpoint: g.endpointId, holder: g.holder, leaseId: g.leaseId },
        'a call ignored the cancellation of its overrun lease; its token was taken back',
      ),
  });
  scheduler = local;
  if (coordination) {
    const backend = createCoordinationBackend(coordination);
    coordinated = new CoordinatedTokenScheduler({
      local,
      backend,
      endpoints,
      clock,
      limit: config.concurrency.limit,
      leaseTtlMs: coordination.leaseTtlMs,
      timeScale: isScaledClock(clock) ? clock.scale : 1,
      // One line when the backend goes (fail closed), one when it is back.
      onBackendState: (s) =>
        s.ok
          ? logger.info({ coordination: backend.location }, 'coordination backend reachable again')
          : logger.error({ code: s.error.code }, s.error.message),
    });
    const link = new SharedHealthLink({
      backend,
      endpoints,
      clock,
      processId: coordination.processId,
      onMalformed: (what) => logger.warn({ coordination: backend.location }, what),
    });
    healthLink = link;
    scheduler = coordinated;
    void coordinated.connect().then(
      // Fail closed is the scheduler's part; a join that failed only means older health was not applied: one line.
      () =>
        link
          .join()
          .catch((e: unknown) =>
            logger.warn(
              { coordination: backend.location },
              `shared endpoint health could not be loaded (${e instanceof Error ? e.message : String(e)})`,
            ),
          ),
      () => {},
    );
  }
  const probeRunner = createProbeRunner({
    endpoints,
    scheduler,
    clock,
    logger,
    maxTokens: config.probeMaxTokens,
    onCall: reportCall,
  });

  const definitions = new Map<string, AgentDefinition>();
  const cache = new AnswerCache();
  const trees: Record<string, NonNullable<LlmAgentDefinition['decisionTree']>> = {};
  const agentActors = createAgentActors({
    // A streamed turn's channel is its agent's running ask's own (never a map by turn id: a caller-chosen id
    // may be shared by two turns, which must not see each other's text).
    streamOf: (agent, turnId) => {
      const h = handles.get(agent);
      return h instanceof LlmAgentHandle ? h.streamSink(turnId) : undefined;
    },
    endpoints,
    scheduler,
    timers,
    clock,
    logger,
    definitions,
    degraded: createDegradedResponder({ cache, trees }),
    sessionOf: (agent) => sessions.get(agent),
    endpointsOf: (agent, chain) => endpointsOf(chain, sessions.get(agent)),
    ...(options.memo ? { memo: options.memo } : {}),
    ...(tracer ? { traceIdsOf: (turnId: string) => tracer.idsOf(turnId) } : {}),
    onCall: (c) => {
      if (eventListeners.size > 0) emit(callEvent(c));
      tracer?.attempt(c, endpoints.get(c.endpointId)?.health.breakerState);
    },
    callsHeard: () => eventListeners.size > 0 || tracer !== undefined,
  });
  const agentLogic = agentMachine.provide({ actors: agentActors.actors, actions: agentActors.actions });

  const handles = new Map<string, ManagedHandle>();
  /**
   * Cooling agents ask again at once: something that may let them go sooner happened (a BYOK key came, a breaker
   * closed). A walk over the agents, on events that are rare by nature (a key injected, an endpoint recovering).
   */
  function recheckCooling(endpointId?: string): void {
    const at = clock.now();
    for (const h of handles.values()) {
      if (!(h instanceof LlmAgentHandle) || h.state() !== 'cooling') continue;
      // A closed breaker matters only to agents whose chain has that endpoint (others would ask again for nothing).
      const chain = endpointId && (h.actor.getSnapshot().context as AgentContext).settings.chain;
      if (chain && !endpointsOf(chain, sessions.get(h.name)).includes(endpointId)) continue;
      h.actor.send({ type: 'RECHECK', at });
    }
  }
  const listeners = new Set<(c: AgentStateChange) => void>();
  const notify = (c: AgentStateChange) => {
    if (eventListeners.size > 0)
      emit({ type: 'agent.state', at: c.at, agent: c.agent, data: { state: c.state, previous: c.previous } });
    for (const l of listeners) {
      try {
        l(c);
      } catch (err) {
        listenerFailed('subscribe', err);
      }
    }
  };
  const forget = (name: string) => {
    handles.delete(name);
    definitions.delete(name);
    sessions.delete(name);
    delete trees[name];
  };
  const handleHooks: AgentHandleHooks = {
    clock,
    keepAlive,
    onState: notify,
    onTurn: (turn, meta) => {
      if (turn.outcome === 'answered' || turn.outcome === 'fallback')
        cache.remember(turn.agent, turn.prompt, turn.answer.text);
      if (eventListeners.size > 0) emit(turnEvent(turn, meta));
    },
    onStopped: forget,
    stopActor: (actor) => lifecycle.send({ type: 'AGENT.STOP', agent: actor }),
    grantAtOnce: agentActors.grantAtOnce,
    leaveCall: agentActors.leaveCall,
    tracer,
  };

  // The lifecycle: the drain waits for every ask given (or cancels them all when a stop signal aborts).
  const cancelAll = () => {
    for (const h of handles.values()) h.cancelAll();
  };
  let stopped!: () => void;
  const whenStopped = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const lifecycle = createActor(
    supervisorMachine.provide({
      actors: {
        drain: fromPromise(async () => {
          await Promise.allSettled([...handles.values()].map((h) => h.drain()));
        }),
        // Aborted calls end within a few I/O turns; a call that ignores its abort is not waited for past the
        // grace (real time: this is teardown, not simulated work).
        unwind: fromPromise(async () => {
          const grace = AbortSignal.timeout(config.concurrency.reclaimGraceMs);
          await scheduler.whenIdle(grace);
        }),
      },
      actions: {
        applyLimit: (_, params: { limit: number }) => scheduler.setLimit(params.limit),
        reportAgentFailure: (_, params: { actorId: string; error: unknown }) =>
          logger.error(
            {
              agent: params.actorId,
              error: params.error instanceof Error ? params.error.name : typeof params.error,
            },
            'agent actor failed (a bug); its asks were settled failed',
          ),
        closeDoors: () => {
          for (const h of [...handles.values()]) h.stopAs('supervisor');
          probeRunner.close();
          scheduler.close();
        },
        shutdown: () => {
          // Every user key is wiped (its endpoint removed) before the endpoints' timers go.
          byok.close();
          endpoints.close();
          timers.close();
          keepAlive.close();
          healthLink?.close();
          if (coordinated) void coordinated.dispose().finally(stopped);
          else stopped();
        },
      },
    }),
    {
      systemId: 'supervisor',
      input: { limit: config.concurrency.limit },
      clock: clock as never,
      ...(options.inspect ? { inspect: options.inspect } : {}),
    },
  ).start();
  const running = () => lifecycle.getSnapshot().value === 'running';

  const spawnAgent: Supervisor['spawnAgent'] = (definition, spawnOptions = {}) => {
    const where = `agents.${definition.name}`;
    if (!definition.name)
      throw new ConfigError({ source: 'spawnAgent', path: 'name', message: 'an agent needs a name' });
    const unknown = unknownAgentField(definition);
    if (unknown)
      throw new ConfigError({
        source: 'spawnAgent',
        path: `${where}.${unknown.field}`,
        message: unknown.hint,
      });
    if (!running()) throw new AgentStoppedError(definition.name, 'supervisor');
    if (handles.has(definition.name))
      throw new ConfigError({
        source: 'spawnAgent',
        path: `${where}.name`,
        message:
          'an agent of this name is already running; names must be unique (stop it first to reuse the name)',
      });
    const tier = definition.tier ?? config.tiers[config.tiers.length - 1]!;
    if (!config.tiers.includes(tier))
      throw new ConfigError({
        source: 'spawnAgent',
        path: `${where}.tier`,
        message: `unknown tier "${tier}"; use one of ${config.tiers.join(', ')}`,
      });
    if (isNoAgentDefinition(definition)) {
      definitions.set(definition.name, definition);
      const h = new NoAgentHandle({
        definition,
        tier,
        clock,
        keepAlive,
        onTurn: (turn, meta) => emit(turnEvent(turn, meta)),
        onStopped: forget,
      });
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
    definitions.set(definition.name, definition);
    sessions.set(definition.name, definition.session ?? DEFAULT_BYOK_SESSION);
    if (definition.decisionTree) trees[definition.name] = definition.decisionTree;
    const agentInput: AgentInput = {
      settings: agentSettings(definition, tier, config),
      memory: spawnOptions.memory ?? emptyMemory(definition.memory),
    };
    // A stored snapshot holds neither settings (the definition gives them) nor utterances (the turns log does).
    const snapshot = spawnOptions.snapshot
      ? restoredAgentSnapshot(spawnOptions.snapshot, agentInput.settings, agentInput.memory)
      : undefined;
    // Not a child of the lifecycle (no `children` snapshot to copy: spawn and stop are O(1)), but on its system:
    // one system for all agents, the inspection feed and the clock included.
    const actor: Actor<typeof agentMachine> = createActor(agentLogic, {
      id: definition.name,
      parent: lifecycle,
      input: agentInput,
      ...(snapshot ? { snapshot: snapshot as unknown as Snapshot<unknown> } : {}),
    });
    const h = new LlmAgentHandle(definition.name, tier, actor, handleHooks);
    handles.set(definition.name, h);
    actor.start();
    return h;
  };

  const call = createOneOffCaller(spawnAgent);
  const stream = createOneOffStreamer(spawnAgent);

  return {
    config,
    actor: lifecycle,
    clock,
    spawnAgent,
    call,
    stream,
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
    health: () => endpoints.views(clock.now()),
    durable: {
      exportHealth: () => endpoints.exportHealth(clock.now()),
      restoreHealth: (data) => {
        endpoints.restoreHealth(data);
        scheduler.rescan();
      },
      restoreAnswers: (entries) => {
        for (const e of entries) cache.remember(e.agent, e.prompt, e.answer, e.at);
      },
    },
    tokens: () => scheduler.view(),
    setLimit: (limit) => {
      if (!(Number.isInteger(limit) && limit >= 1))
        throw new ConfigError({
          source: 'supervisor.setLimit',
          path: 'limit',
          message: `is ${String(limit)}; set a whole number of tokens ≥ 1`,
        });
      lifecycle.send({ type: 'LIMIT.SET', limit });
    },
    state: () => {
      const v = lifecycle.getSnapshot().value;
      return v === 'running' ? 'running' : v === 'draining' ? 'draining' : 'stopped';
    },
    byok: byok.api,
    stop(stopOptions = {}) {
      const signal = stopOptions.signal;
      if (signal) onAbort(signal, cancelAll);
      // Refuse new work at once, even before the drain starts.
      for (const h of handles.values()) h.refuseAsks();
      lifecycle.send({ type: 'STOP' });
      return whenStopped;
    },
  };
}
