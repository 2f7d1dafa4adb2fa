import type { Actor } from 'xstate';
import type { supervisorMachine } from '../../machines/supervisor.machine.ts';
import { onAbort } from '../clock/abort-fanout.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { AnswerCache } from '../degraded/answer-cache.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import type { AgentStateChange } from './agent-handle.ts';
import type { AgentRegistry } from './agent-registry.ts';
import { createOneOffCaller, createOneOffStreamer } from './one-off-call.ts';
import type { RuntimeConfig } from './runtime-config.ts';
import type { RuntimeEventBus } from './runtime-event-bus.ts';
import type { ByokWiring } from './supervisor-byok.ts';
import type { SupervisorConfig } from './supervisor-config.ts';
import type { Supervisor } from './supervisor-types.ts';

/** The built parts the public {@link Supervisor} object speaks for. */
export interface SupervisorApiParts {
  readonly config: RuntimeConfig;
  readonly supervisor: SupervisorConfig;
  readonly lifecycle: Actor<typeof supervisorMachine>;
  readonly whenStopped: Promise<void>;
  readonly spawnAgent: Supervisor['spawnAgent'];
  readonly registry: AgentRegistry;
  readonly stateListeners: Set<(change: AgentStateChange) => void>;
  readonly bus: RuntimeEventBus;
  readonly endpoints: EndpointRegistry;
  readonly scheduler: TokenScheduler;
  readonly cache: AnswerCache;
  readonly byok: ByokWiring;
}

/** The object `createSupervisor` returns: each method a thin door onto the part that owns it. */
export function supervisorApi(parts: SupervisorApiParts): Supervisor {
  const { config, lifecycle, spawnAgent, registry, bus, endpoints, scheduler, cache } = parts;
  const { clock } = parts.supervisor;
  return {
    config,
    actor: lifecycle,
    clock,
    spawnAgent,
    call: createOneOffCaller(spawnAgent),
    stream: createOneOffStreamer(spawnAgent),
    agent: (name) => registry.handles.get(name),
    agents: () => [...registry.handles.values()],
    subscribe(listener) {
      parts.stateListeners.add(listener);
      return () => parts.stateListeners.delete(listener);
    },
    subscribeEvents: (listener) => bus.listen(listener),
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
    byok: parts.byok.api,
    stop(stopOptions = {}) {
      const signal = stopOptions.signal;
      // A stop signal that aborts cancels every ask given instead of waiting for them.
      if (signal)
        onAbort(signal, () => {
          for (const h of registry.handles.values()) h.cancelAll();
        });
      // Refuse new work at once, even before the drain starts.
      for (const h of registry.handles.values()) h.refuseAsks();
      lifecycle.send({ type: 'STOP' });
      return parts.whenStopped;
    },
  };
}
