import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock/clock.ts';
import { type ResolvedCoordination, resolveCoordination } from '../coordination/coordination-options.ts';
import type { CallMemo } from '../core/call-memo.ts';
import type { Engine } from '../core/engine-types.ts';
import type { RuntimeEventListener } from '../core/runtime-event.ts';
import { createEngine as createAdapterEngine, type EngineWireOptions } from '../engines/create-engine.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import { createLogger } from '../logging/logger.ts';
import type { SchedulerReport } from '../scheduler/token-scheduler.ts';
import type { ActorInspectionEvent } from './runtime-actor.ts';
import type { SupervisorOptions } from './supervisor-types.ts';
import { globalTracingRegistered } from './tracing/global-tracing.ts';
import { TurnTracer } from './tracing/turn-tracer.ts';

/**
 * {@link SupervisorOptions} resolved once, at the root: every default applied here and nowhere else, so the parts
 * the supervisor is built from take what they need and never default. Optional fields here mean "off", not "unset".
 */
export interface SupervisorConfig {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly createEngine: (config: ParsedEndpointConfig) => Engine;
  /** Undefined: this process alone (the memory backend). */
  readonly coordination: ResolvedCoordination | undefined;
  /** Undefined: tracing off (not asked for, and no tracer provider registered before the supervisor). */
  readonly tracer: TurnTracer | undefined;
  readonly keepAlive: boolean;
  readonly onEvent: RuntimeEventListener | undefined;
  readonly onReport: ((report: SchedulerReport) => void) | undefined;
  readonly inspect: ((event: ActorInspectionEvent) => void) | undefined;
  readonly memo: CallMemo | undefined;
  readonly random: (() => number) | undefined;
  readonly byokWire: ((templateName: string) => EngineWireOptions) | undefined;
}

/** Resolves the user's supervisor options (a bad coordination option throws a ConfigError naming it). */
export function resolveSupervisorOptions(options: SupervisorOptions): SupervisorConfig {
  const clock = options.clock ?? systemClock;
  return Object.freeze({
    clock,
    logger: options.logger ?? createLogger(),
    createEngine: options.createEngine ?? ((c: ParsedEndpointConfig) => createAdapterEngine(c, { clock })),
    coordination: resolveCoordination(options.coordination, `${hostname()}:${process.pid}`),
    // Tracing is on when a tracer is given, or when the app registered a tracer provider before this point.
    tracer:
      options.tracing === false || (!options.tracing?.tracer && !globalTracingRegistered())
        ? undefined
        : new TurnTracer(options.tracing || {}),
    keepAlive: options.keepAlive ?? true,
    onEvent: options.onEvent,
    onReport: options.onReport,
    inspect: options.inspect,
    memo: options.memo,
    random: options.random,
    byokWire: options.byokWire,
  });
}
