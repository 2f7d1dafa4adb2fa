import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import type { CallRecordEvent } from './agent-actors.ts';
import { reportedCall } from './key-check-record.ts';
import type { RuntimeConfig } from './runtime-config.ts';
import type { RuntimeEventBus } from './runtime-event-bus.ts';
import { type ByokWiring, wireByok } from './supervisor-byok.ts';
import type { SupervisorConfig } from './supervisor-config.ts';

/** The parts BYOK reaches that are built after it (the endpoints' fault hook points at BYOK): read at call time. */
export interface ByokLateParts {
  readonly scheduler: () => TokenScheduler;
  readonly endpoints: () => EndpointRegistry;
  /** A key check's upstream call, as the call log, metrics and traces see it. */
  readonly reportCall: (call: CallRecordEvent) => void;
  /** A key came: agents cooling on their own timers may use it now. */
  readonly recheckCooling: () => void;
}

/** BYOK on the supervisor: a user's key becomes an endpoint of the pool, and its check call holds a token. */
export function wireSupervisorByok(
  config: RuntimeConfig,
  supervisor: SupervisorConfig,
  bus: RuntimeEventBus,
  late: ByokLateParts,
): ByokWiring {
  const { clock, logger } = supervisor;
  return wireByok({
    config,
    clock,
    logger,
    pool: () => ({
      addEndpoint: (c, o) => {
        late.endpoints().add(c, o.createEngine);
        late.scheduler().rescan();
      },
      removeEndpoint: (id) => {
        late.endpoints().remove(id);
        late.scheduler().rescan();
      },
    }),
    emit: bus.emit,
    endpointOptions: {},
    ...(supervisor.byokWire ? { wireOf: supervisor.byokWire } : {}),
    // A key's check call is an upstream call: it takes a token (served first, like a HALF-OPEN probe).
    withToken: async (label, run, signal) => {
      const scheduler = late.scheduler();
      const grant = await scheduler.acquireProbe(label, signal);
      try {
        return await reportedCall(label, () => run(grant.signal), clock, late.reportCall);
      } finally {
        scheduler.release(grant.leaseId, { kind: 'unused' });
      }
    },
    onInjected: () => {
      late.scheduler().rescan();
      late.recheckCooling();
    },
  });
}
