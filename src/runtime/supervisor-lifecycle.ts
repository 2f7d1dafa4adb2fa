import { type Actor, createActor, fromPromise } from 'xstate';
import { supervisorMachine } from '../../machines/supervisor.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { Logger } from 'pino';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { ActorInspectionEvent } from './runtime-actor.ts';

/** What the supervisor's lifecycle acts on; `shutdown` closes the rest, in the order the root gives. */
export interface LifecycleParts {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly limit: number;
  /** How long the unwind waits for aborted calls to end (real time: this is teardown, not simulated work). */
  readonly reclaimGraceMs: number;
  readonly registry: AgentRegistry;
  readonly scheduler: TokenScheduler;
  /** Closes the doors behind the agents: the probes, then the scheduler. */
  readonly closeDoors: () => void;
  /** The last step: everything else closed; resolves once the process-wide parts (a shared backend) are given back. */
  readonly shutdown: () => Promise<void>;
  readonly inspect: ((event: ActorInspectionEvent) => void) | undefined;
}

/** The supervisor's lifecycle actor, started: running → draining (every ask given settles) → stopped. */
export function startLifecycle(parts: LifecycleParts): {
  readonly actor: Actor<typeof supervisorMachine>;
  readonly whenStopped: Promise<void>;
} {
  const { registry, scheduler, logger } = parts;
  let stopped!: () => void;
  const whenStopped = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const actor = createActor(
    supervisorMachine.provide({
      actors: {
        drain: fromPromise(async () => {
          await Promise.allSettled([...registry.handles.values()].map((h) => h.drain()));
        }),
        // Aborted calls end within a few I/O turns; a call that ignores its abort is not waited for past the grace.
        unwind: fromPromise(async () => {
          await scheduler.whenIdle(AbortSignal.timeout(parts.reclaimGraceMs));
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
          for (const h of [...registry.handles.values()]) h.stopAs('supervisor');
          parts.closeDoors();
        },
        shutdown: () => {
          void parts.shutdown().finally(stopped);
        },
      },
    }),
    {
      systemId: 'supervisor',
      input: { limit: parts.limit },
      clock: parts.clock as never,
      ...(parts.inspect ? { inspect: parts.inspect } : {}),
    },
  ).start();
  return { actor, whenStopped };
}
