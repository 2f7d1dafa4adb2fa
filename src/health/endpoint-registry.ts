import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import { describeEndpoint } from '../engines/endpoint-config.ts';
import type { Engine } from '../core/engine-types.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import {
  type EndpointHealth,
  type EndpointHealthExport,
  EndpointHealthTracker,
  type WaitCause,
} from './endpoint-health.ts';
import type { EndpointHealthHooks, HealthSettings } from './endpoint-health-types.ts';

/** The answer to "which of these endpoints may I call now?". */
export type Selection =
  | { readonly kind: 'ready'; readonly endpointId: string; readonly index: number }
  | {
      readonly kind: 'wait';
      readonly endpointId: string;
      readonly index: number;
      readonly until: number;
      readonly cause: WaitCause;
      /**
       * An endpoint of those looked at has a breaker waiting for its probe, whose outcome has no known time (see
       * `Readiness.probing`): a caller may wait for it while its max wait lasts, even past `until`'s endpoint.
       */
      readonly probing?: true;
      /**
       * Waiting was chosen over a later endpoint that is ready now: the wait plus this endpoint's usual latency is
       * shorter than that one's usual latency (`SelectOptions.waitUpToMs`). Both figures as estimated, ms.
       */
      readonly instead?: {
        readonly endpointId: string;
        readonly index: number;
        readonly expectedMs: number;
        readonly waitingExpectedMs: number;
      };
    }
  | { readonly kind: 'none'; readonly reason: string };

/** How {@link EndpointRegistry.select} may weigh waiting against a later endpoint. */
export interface SelectOptions {
  /**
   * Wait or switch: the longest wait, ms, for which an earlier endpoint that is paced or cooling may be chosen over
   * a later one that is ready, when the wait plus its usual latency is shorter than the later one's usual latency
   * (both learned from the endpoints' calls). Default 0: the first ready endpoint always goes.
   */
  readonly waitUpToMs?: number;
}

/** Causes whose end is known and comes by itself: worth waiting for instead of switching. */
const WAITABLE = new Set<WaitCause>(['pacing', 'cooldown']);

/** One endpoint: its config, its engine, its health. */
export interface RegisteredEndpoint {
  readonly config: ParsedEndpointConfig;
  readonly engine: Engine;
  readonly health: EndpointHealthTracker;
}

/** Options of an {@link EndpointRegistry}. */
export interface EndpointRegistryOptions {
  readonly timers: TimerHeap;
  readonly settings: HealthSettings;
  /** Builds the engine of an endpoint (the unified adapter by default). */
  readonly createEngine: (config: ParsedEndpointConfig) => Engine;
  readonly hooks?: EndpointHealthHooks;
  /** Random source for backoff jitter. Default Math.random. */
  readonly random?: () => number;
}

/**
 * Every endpoint the runtime may call (configured ones, and BYOK keys added at run time), each with its engine
 * and its {@link EndpointHealthTracker}, plus the named chains. Chain selection reads health only.
 *
 * @example
 * ```ts
 * const endpoints = new EndpointRegistry(config.endpoints, config.chains, { timers, settings, createEngine });
 * const sel = endpoints.select(endpoints.chain('premium'), clock.now(), 900);
 * ```
 */
export class EndpointRegistry {
  readonly #byId = new Map<string, RegisteredEndpoint>();
  readonly #chains: Readonly<Record<string, readonly string[]>>;
  readonly #options: EndpointRegistryOptions;

  constructor(
    endpoints: readonly ParsedEndpointConfig[],
    chains: Readonly<Record<string, readonly string[]>>,
    options: EndpointRegistryOptions,
  ) {
    this.#chains = chains;
    this.#options = options;
    for (const ep of endpoints) this.add(ep);
  }

  /**
   * Adds an endpoint (e.g. a BYOK key) with its own health. It is described by its engine's own descriptor: a
   * BYOK config carries no key, its engine knows the fingerprint.
   */
  add(config: ParsedEndpointConfig, createEngine = this.#options.createEngine): RegisteredEndpoint {
    const engine = createEngine(config);
    const { settings, timers, hooks, random } = this.#options;
    const limits = {
      ...(config.limits?.rpm ? { rpm: config.limits.rpm } : {}),
      ...(config.limits?.tpm ? { tpm: config.limits.tpm } : {}),
      ...(config.limits?.maxConcurrency ? { maxConcurrency: config.limits.maxConcurrency } : {}),
    };
    const health = new EndpointHealthTracker(
      config.id,
      engine.endpoint ?? describeEndpoint(config),
      limits,
      settings,
      timers,
      hooks,
      random,
    );
    const entry: RegisteredEndpoint = { config, engine, health };
    this.#byId.set(config.id, entry);
    return entry;
  }

  /** Removes a run-time endpoint (an expired BYOK key). Calls in flight finish; nothing new is granted. */
  remove(id: string): void {
    const entry = this.#byId.get(id);
    if (!entry) return;
    entry.health.close();
    this.#byId.delete(id);
  }

  get(id: string): RegisteredEndpoint | undefined {
    return this.#byId.get(id);
  }

  /** Endpoint ids of a chain, in order. */
  chain(name: string): readonly string[] {
    return this.#chains[name] ?? [];
  }

  /**
   * The first endpoint of `ids` (in order) that may take a call of about `tokens` now; else the one ready
   * earliest and why; else `none`. Endpoints in `skip` are passed over (a call that must not go there); the others
   * keep their place in the chain (`index`). With `options.waitUpToMs`, an earlier endpoint that is paced or
   * cooling is waited for instead, when that ends the call sooner (see {@link SelectOptions}).
   */
  select(
    ids: readonly string[],
    now: number,
    tokens: number,
    skip?: readonly string[],
    options?: SelectOptions,
  ): Selection {
    let best: Extract<Selection, { kind: 'wait' }> | undefined;
    /** The earlier endpoint whose wait plus latency is shortest, for wait-or-switch. */
    let soonest: { wait: Extract<Selection, { kind: 'wait' }>; expectedMs: number } | undefined;
    const waitUpTo = options?.waitUpToMs ?? 0;
    let probing = false;
    let skipped = 0;
    for (let index = 0; index < ids.length; index++) {
      const id = ids[index]!;
      if (skip !== undefined && skip.length > 0 && skip.includes(id)) {
        skipped++;
        continue;
      }
      const entry = this.#byId.get(id);
      if (!entry) continue;
      const wait = entry.health.readiness(now, tokens);
      if (!wait) {
        const ready: Selection = { kind: 'ready', endpointId: id, index };
        const latency = entry.health.latency.value;
        if (!soonest || latency === undefined || soonest.expectedMs >= latency) return ready;
        return {
          ...soonest.wait,
          instead: { endpointId: id, index, expectedMs: latency, waitingExpectedMs: soonest.expectedMs },
        };
      }
      if (wait.probing) probing = true;
      const here = { kind: 'wait', endpointId: id, index, until: wait.until, cause: wait.cause } as const;
      if (!best || wait.until < best.until) best = here;
      const latency = entry.health.latency.value;
      if (
        WAITABLE.has(wait.cause) &&
        !wait.probing &&
        latency !== undefined &&
        wait.until - now <= waitUpTo
      ) {
        const expectedMs = wait.until - now + latency;
        if (!soonest || expectedMs < soonest.expectedMs) soonest = { wait: here, expectedMs };
      }
    }
    if (best) return probing ? { ...best, probing: true } : best;
    if (skipped > 0)
      return {
        kind: 'none',
        reason: `no endpoint of [${ids.join(', ')}] is left for this call ([${skip!.filter((id) => ids.includes(id)).join(', ')}] cannot take it or were tried)`,
      };
    return { kind: 'none', reason: `no endpoint of [${ids.join(', ')}] exists any more` };
  }

  /** True when some endpoint of `ids` could take a call now or after pacing / a free slot only. */
  usable(ids: readonly string[], now: number): boolean {
    for (const id of ids) if (this.#byId.get(id)?.health.usable(now)) return true;
    return false;
  }

  /** Every configured endpoint's health as plain data, by id (BYOK keys are session-bound: never persisted). */
  exportHealth(now: number): Record<string, EndpointHealthExport> {
    const out: Record<string, EndpointHealthExport> = {};
    for (const [id, e] of this.#byId) if (!id.startsWith('byok:')) out[id] = e.health.export(now);
    return out;
  }

  /** Puts back {@link EndpointRegistry.exportHealth}'s data; endpoints no longer configured are skipped. */
  restoreHealth(data: Readonly<Record<string, EndpointHealthExport>>): void {
    for (const [id, h] of Object.entries(data)) {
      if (Object.hasOwn(data, id)) this.#byId.get(id)?.health.restore(h);
    }
  }

  /** Plain-data health of every endpoint. */
  views(now: number): EndpointHealth[] {
    return [...this.#byId.values()].map((e) => e.health.view(now));
  }

  ids(): IterableIterator<string> {
    return this.#byId.keys();
  }

  /** Drops every endpoint's timers. */
  close(): void {
    for (const e of this.#byId.values()) e.health.close();
  }
}
