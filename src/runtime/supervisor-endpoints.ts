import type { TimerHeap } from '../clock/timer-heap.ts';
import { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { EndpointHealthHooks } from '../health/endpoint-health-types.ts';
import type { RuntimeConfig } from './runtime-config.ts';
import type { RuntimeEventBus } from './runtime-event-bus.ts';
import type { SupervisorConfig } from './supervisor-config.ts';

/** What the endpoints' health tells the rest of the supervisor, beyond the breaker events it emits itself. */
export interface EndpointSignals {
  /** A breaker closed (a probe answered): agents cooling on this endpoint may go now. */
  readonly breakerClosed: (endpointId: string) => void;
  readonly probeWanted: NonNullable<EndpointHealthHooks['onProbeWanted']>;
  readonly readinessChanged: NonNullable<EndpointHealthHooks['onReadinessChange']>;
  readonly fault: NonNullable<EndpointHealthHooks['onFault']>;
  /** Only with a shared backend: one process alone has nobody to tell (no cost on its hot path). */
  readonly rateLimit: EndpointHealthHooks['onRateLimit'];
}

/** The configured endpoints, each with its health (breaker, buckets, cooldowns) on the runtime's settings. */
export function buildEndpoints(
  config: RuntimeConfig,
  supervisor: SupervisorConfig,
  timers: TimerHeap,
  bus: RuntimeEventBus,
  signals: EndpointSignals,
): EndpointRegistry {
  const { clock } = supervisor;
  return new EndpointRegistry(config.endpoints, config.chains, {
    timers,
    createEngine: supervisor.createEngine,
    ...(supervisor.random ? { random: supervisor.random } : {}),
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
        bus.emit({
          type: 'breaker.state',
          at: clock.now(),
          endpoint: c.endpointId,
          data: { state: c.state, previous: c.previous, openUntil: c.openUntil },
        });
        if (c.state === 'closed') signals.breakerClosed(c.endpointId);
      },
      onProbeWanted: signals.probeWanted,
      onReadinessChange: signals.readinessChanged,
      onFault: signals.fault,
      ...(signals.rateLimit ? { onRateLimit: signals.rateLimit } : {}),
    },
  });
}
