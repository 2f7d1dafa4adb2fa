import type { TimerHeap } from '../clock/timer-heap.ts';
import { isScaledClock } from '../clock/scaled-clock.ts';
import { CoordinatedTokenScheduler } from '../coordination/coordinated-token-scheduler.ts';
import { createCoordinationBackend } from '../coordination/create-coordination.ts';
import { SharedHealthLink } from '../coordination/shared-health-link.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import { RetryBudget } from '../resilience/retry-budget.ts';
import { MemoryTokenScheduler } from '../scheduler/memory-token-scheduler.ts';
import type { TokenRequest, TokenScheduler } from '../scheduler/token-scheduler.ts';
import { reportToEvent } from './runtime-events.ts';
import type { RuntimeConfig } from './runtime-config.ts';
import type { RuntimeEventBus } from './runtime-event-bus.ts';
import type { SupervisorConfig } from './supervisor-config.ts';

/** The supervisor's token scheduler: this process's own, or with a shared backend the coordinated one over it. */
export interface SupervisorScheduler {
  readonly scheduler: TokenScheduler;
  /** The endpoints' health shared with the other processes; undefined for a process alone. */
  readonly healthLink: SharedHealthLink | undefined;
  /** Gives the shared backend's leases back and closes it (resolves at once for a process alone). */
  dispose(): Promise<void>;
}

export function buildScheduler(
  config: RuntimeConfig,
  supervisor: SupervisorConfig,
  parts: {
    readonly timers: TimerHeap;
    readonly endpoints: EndpointRegistry;
    readonly bus: RuntimeEventBus;
    /** The endpoints a request may use: its chain, then its session's BYOK keys. */
    readonly endpointsFor: (request: TokenRequest) => readonly string[];
  },
): SupervisorScheduler {
  const { clock, logger, tracer, coordination } = supervisor;
  const { timers, endpoints, bus } = parts;
  const local = new MemoryTokenScheduler({
    clock,
    timers,
    endpoints,
    limit: config.concurrency.limit,
    tiers: config.tiers,
    ...(config.tierAgingMs !== undefined ? { tierAgingMs: config.tierAgingMs } : {}),
    ...(config.tierPolicy.kind === 'slack' ? { tierSlackMs: config.tierPolicy.maxDelayMs } : {}),
    leaseMs: config.concurrency.leaseMs,
    reclaimGraceMs: config.concurrency.reclaimGraceMs,
    budget: new RetryBudget({
      ratio: config.retry.budgetRatio,
      windowMs: config.retry.budgetWindowMs,
      minRetriesPerWindow: config.retry.minRetriesPerWindow,
    }),
    endpointsFor: parts.endpointsFor,
    onReport: (r) => {
      const onReport = supervisor.onReport;
      if (onReport) bus.guard('onReport', () => onReport(r));
      tracer?.report(r);
      if (bus.heard()) bus.emit(reportToEvent(r));
    },
    onForcedReclaim: (g) =>
      logger.warn(
        { endpoint: g.endpointId, holder: g.holder, leaseId: g.leaseId },
        'a call ignored the cancellation of its overrun lease; its token was taken back',
      ),
  });
  if (!coordination) return { scheduler: local, healthLink: undefined, dispose: async () => {} };

  const backend = createCoordinationBackend(coordination);
  const coordinated = new CoordinatedTokenScheduler({
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
  const healthLink = new SharedHealthLink({
    backend,
    endpoints,
    clock,
    processId: coordination.processId,
    onMalformed: (what) => logger.warn({ coordination: backend.location }, what),
  });
  void coordinated.connect().then(
    // Fail closed is the scheduler's part; a join that failed only means older health was not applied: one line.
    () =>
      healthLink
        .join()
        .catch((e: unknown) =>
          logger.warn(
            { coordination: backend.location },
            `shared endpoint health could not be loaded (${e instanceof Error ? e.message : String(e)})`,
          ),
        ),
    () => {},
  );
  return { scheduler: coordinated, healthLink, dispose: () => coordinated.dispose() };
}
