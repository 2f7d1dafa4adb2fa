import { byokTemplateName } from '../byok/byok-template.ts';
import type { Clock } from '../clock/clock.ts';
import { DAY_MS } from '../config/bounds.ts';
import { DEFAULT_LEASE_MS } from '../runtime/runtime-config.ts';
import { createEngine, type EngineWireOptions } from '../engines/create-engine.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import type { Engine } from '../core/engine-types.ts';

/** Options of {@link wireTimeEngines}. */
export interface WireTimeEnginesOptions {
  /** The run's clock. */
  readonly clock: Clock;
  /** Simulated ms per real ms of the run's clock (the scenario's `timeScale`). */
  readonly timeScale: number;
  /** Whether the run is on a virtual clock (then nothing lives in wall time: real providers are refused). Default false. */
  readonly virtualTime?: boolean;
  /** The wall clock the engines read providers' instants against. Default: `Date.now`. */
  readonly wallNow?: () => number;
  /**
   * Whether the emulator runs on the run's clock (in-process, or started with the run): its endpoints' waits are
   * then run-clock ms already. False for an emulator given by URL (`--emulator-url`): it runs on its own wall
   * clock, so its endpoints are in wall time like real servers. Default true.
   */
  readonly emulatorOnRunClock?: boolean;
}

/** What {@link wireTimeEngines} decides for a run's endpoints. */
export interface WireTimeEngines {
  /** Ids of the endpoints in wall time (outside an emulator on the run's clock): their waits are scaled onto it. */
  readonly wallTimeEndpoints: ReadonlySet<string>;
  /** The engine factory to give every executor of the run; undefined when the default one reads the wire right. */
  readonly createEngine: ((config: ParsedEndpointConfig) => Engine) | undefined;
  /** Its twin for BYOK keys, by template name (`SupervisorOptions.byokWire`); undefined when not needed. */
  readonly byokWire: ((templateName: string) => EngineWireOptions) | undefined;
  /** Run-clock ms per wire ms of one endpoint: the time scale for a wall-time one, else 1 (fault proxies use it). */
  wireScaleOf(endpointId: string): number;
  /**
   * The run's runtime config with a token lease that lets a wall-time endpoint answer. The lease runs on the run's
   * clock, so its 120 s would cut a real server's call after 8 real s at timeScale 15 (the call's own deadlines are
   * in the endpoint's time already): with wall-time endpoints, `concurrency.leaseMs` × timeScale (at most a day).
   * Other endpoints' calls are still cut by their own deadlines first.
   */
  withLease<R extends { readonly concurrency?: object }>(runtime: R): R;
}

/** The endpoints and BYOK templates of a run: those with `emulator:` are on the run's clock. */
export interface WireTimeRuntime {
  readonly endpoints: readonly { readonly id: string; readonly emulator?: unknown }[];
  readonly byok?: { readonly templates?: Readonly<Record<string, object>> };
}

/**
 * How a run's engines read the waits on the wire. An endpoint in wall time (a real server, with or without a fault
 * proxy in front; every endpoint of an emulator given by URL, which runs on its own wall clock) sends real ms, each
 * `timeScale` ms of the run's scaled clock (a 7 s retry-after at timeScale 15 is 105 s there, not 0.47 s of real
 * time). The endpoints of an emulator on the run's clock (in-process, or started with a workers run) are on it
 * already. One owner, so the in-process run, the status-quo comparison, every worker and BYOK keys read them alike.
 *
 * @example
 * ```ts
 * const { createEngine } = wireTimeEngines(spec.runtime, { clock, timeScale: spec.timeScale ?? 1 });
 * createBreakwaterExecutor({ config, agents, clock, ...(createEngine ? { createEngine } : {}) });
 * ```
 */
export function wireTimeEngines(runtime: WireTimeRuntime, options: WireTimeEnginesOptions): WireTimeEngines {
  const { clock, timeScale, wallNow } = options;
  const scaled = !options.virtualTime && timeScale !== 1;
  const onRunClock = (e: { readonly emulator?: unknown }) =>
    (options.emulatorOnRunClock ?? true) && Boolean(e.emulator);
  const wallTimeEndpoints: ReadonlySet<string> = new Set(
    scaled ? runtime.endpoints.filter((e) => !onRunClock(e)).map((e) => e.id) : [],
  );
  const templates = Object.entries(runtime.byok?.templates ?? {});
  const wallTimeTemplates = new Set(
    scaled
      ? templates
          .filter(([, t]) => !onRunClock(t as { emulator?: unknown }))
          .map(([name]) => byokTemplateName(name))
      : [],
  );
  // An endpoint on the run's clock counts its per-day quotas on the run's day (the scenario's), not the wall's:
  // the same scenario then gives the same run at any hour.
  const runClockEndpoints = new Set(runtime.endpoints.filter(onRunClock).map((e) => e.id));
  const runClockTemplates = new Set(
    templates
      .filter(([, t]) => onRunClock(t as { emulator?: unknown }))
      .map(([name]) => byokTemplateName(name)),
  );
  const quotaDayNow = () => clock.now();
  const needed = wallNow !== undefined || wallTimeEndpoints.size > 0 || runClockEndpoints.size > 0;
  const byokNeeded = wallNow !== undefined || wallTimeTemplates.size > 0 || runClockTemplates.size > 0;
  const wireScaleOf = (endpointId: string) => (wallTimeEndpoints.has(endpointId) ? timeScale : 1);
  return Object.freeze({
    byokWire: byokNeeded
      ? (name: string): EngineWireOptions => ({
          ...(wallNow ? { wallNow } : {}),
          ...(wallTimeTemplates.has(byokTemplateName(name)) ? { wireScale: timeScale } : {}),
          ...(runClockTemplates.has(byokTemplateName(name)) ? { quotaDayNow } : {}),
        })
      : undefined,
    wallTimeEndpoints,
    createEngine: needed
      ? (c: ParsedEndpointConfig) =>
          createEngine(c, {
            clock,
            ...(wallNow ? { wallNow } : {}),
            wireScale: wireScaleOf(c.id),
            ...(runClockEndpoints.has(c.id) ? { quotaDayNow } : {}),
          })
      : undefined,
    wireScaleOf,
    withLease<R extends { readonly concurrency?: object }>(config: R): R {
      if (wallTimeEndpoints.size === 0) return config;
      const concurrency = (config.concurrency ?? {}) as { readonly leaseMs?: number };
      const leaseMs = Math.min(DAY_MS, Math.round((concurrency.leaseMs ?? DEFAULT_LEASE_MS) * timeScale));
      return { ...config, concurrency: { ...concurrency, leaseMs } };
    },
  });
}
