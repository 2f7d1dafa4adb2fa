import { TimerHeap } from '../clock/timer-heap.ts';
import { AnswerCache } from '../degraded/answer-cache.ts';
import type { SharedHealthLink } from '../coordination/shared-health-link.ts';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import type { CallRecordEvent } from './agent-actors.ts';
import { AgentRegistry } from './agent-registry.ts';
import { createAgentSpawner } from './agent-spawner.ts';
import { KeepAlive } from './keep-alive.ts';
import { createProbeRunner, type ProbeRunner } from './probe-runner.ts';
import { type RuntimeConfig, type RuntimeConfigInput, defineConfig } from './runtime-config.ts';
import { createRuntimeEventBus } from './runtime-event-bus.ts';
import { callEvent } from './runtime-events.ts';
import { buildSupervisorAgents } from './supervisor-agents.ts';
import { DEFAULT_BYOK_SESSION } from './supervisor-byok.ts';
import { wireSupervisorByok } from './supervisor-byok-wiring.ts';
import { resolveSupervisorOptions } from './supervisor-config.ts';
import { buildEndpoints } from './supervisor-endpoints.ts';
import { supervisorApi } from './supervisor-api.ts';
import { startLifecycle } from './supervisor-lifecycle.ts';
import { buildScheduler } from './supervisor-scheduler.ts';
import type { Supervisor, SupervisorOptions } from './supervisor-types.ts';

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
  const supervisor = resolveSupervisorOptions(options);
  const { clock, logger, tracer } = supervisor;
  const bus = createRuntimeEventBus(logger, supervisor.onEvent);
  const timers = new TimerHeap(clock);
  const keepAlive = new KeepAlive(supervisor.keepAlive);
  const registry = new AgentRegistry();

  // The parts call each other both ways (a fault reaches BYOK and the shared health; BYOK adds endpoints and takes
  // tokens; the scheduler picks among the endpoints): each is built once, in the order below, and the earlier ones
  // reach the later through these names. The readiness hook checks for the scheduler: it may fire while the
  // endpoints are still being built.
  let scheduler!: TokenScheduler;
  let healthLink: SharedHealthLink | undefined;
  let probeRunner!: ProbeRunner;

  /** A probe's or a key check's upstream call, as the call log, metrics and traces see it. */
  const reportCall = (c: CallRecordEvent) => {
    bus.emit(callEvent(c));
    tracer?.attempt(c, endpoints.get(c.endpointId)?.health.breakerState);
  };
  const byok = wireSupervisorByok(config, supervisor, bus, {
    scheduler: () => scheduler,
    endpoints: () => endpoints,
    reportCall,
    recheckCooling: () => recheckCooling(),
  });
  /** An agent's endpoints: its chain, then its BYOK session's keys. */
  const endpointsOf = (chain: string, session: string | undefined) => {
    const extra = byok.endpointsFor(session ?? DEFAULT_BYOK_SESSION);
    const own = endpoints.chain(chain);
    return extra.length === 0 ? own : [...own, ...extra];
  };
  const recheckCooling = (endpointId?: string) => registry.recheckCooling(clock, endpointsOf, endpointId);

  const endpoints = buildEndpoints(config, supervisor, timers, bus, {
    // A probe closed it: agents cooling until their next look (the probe's outcome had no known time) go now.
    breakerClosed: (id) => recheckCooling(id),
    probeWanted: (id) => probeRunner.request(id),
    readinessChanged: (id) => scheduler?.wake(id),
    fault: (id, fault) => {
      byok.onFault(id, fault);
      // Other processes on the same quota hear of the cooldown / disable at once.
      healthLink?.publish(id);
    },
    rateLimit: supervisor.coordination ? (id, windows) => healthLink?.rateLimit(id, windows) : undefined,
  });
  const tokens = buildScheduler(config, supervisor, {
    timers,
    endpoints,
    bus,
    endpointsFor: (r) => endpointsOf(r.chain, r.session),
  });
  scheduler = tokens.scheduler;
  healthLink = tokens.healthLink;
  probeRunner = createProbeRunner({
    endpoints,
    scheduler,
    clock,
    logger,
    maxTokens: config.probeMaxTokens,
    onCall: reportCall,
  });

  const cache = new AnswerCache();
  const agents = buildSupervisorAgents({
    supervisor,
    registry,
    bus,
    endpoints,
    scheduler,
    timers,
    keepAlive,
    cache,
    endpointsOf,
    stopActor: (actor) => lifecycle.send({ type: 'AGENT.STOP', agent: actor }),
  });

  const { actor: lifecycle, whenStopped } = startLifecycle({
    clock,
    logger,
    limit: config.concurrency.limit,
    reclaimGraceMs: config.concurrency.reclaimGraceMs,
    registry,
    scheduler,
    closeDoors: () => {
      probeRunner.close();
      scheduler.close();
    },
    shutdown: async () => {
      // Every user key is wiped (its endpoint removed) before the endpoints' timers go.
      byok.close();
      endpoints.close();
      timers.close();
      keepAlive.close();
      healthLink?.close();
      await tokens.dispose();
    },
    inspect: supervisor.inspect,
  });
  const running = () => lifecycle.getSnapshot().value === 'running';

  const spawnAgent = createAgentSpawner({
    config,
    clock,
    keepAlive,
    registry,
    bus,
    agentLogic: agents.agentLogic,
    handleHooks: agents.handleHooks,
    lifecycle,
    running,
  });

  return supervisorApi({
    config,
    supervisor,
    lifecycle,
    whenStopped,
    spawnAgent,
    registry,
    stateListeners: agents.stateListeners,
    bus,
    endpoints,
    scheduler,
    cache,
    byok,
  });
}
