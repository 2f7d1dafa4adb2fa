import type { Clock } from '../clock/clock.ts';
import { type EndpointConfig, effectiveBaseURL } from '../engines/endpoint-config.ts';
import type { EndpointFaultRule } from './endpoint-fault-rule.ts';
import { type FaultProxy, startFaultProxy } from './fault-proxy.ts';

/**
 * Options of {@link proxyFaultedEndpoints}.
 *
 * @example
 * ```ts
 * const options: ProxyFaultedEndpointsOptions = { clock, seed: 7 };
 * ```
 */
export interface ProxyFaultedEndpointsOptions {
  /** The run's clock (rule windows, hangs). Required. */
  readonly clock: Clock;
  /** Seed of the rules' `probability` draws. Default 1. */
  readonly seed?: number;
  /**
   * Simulated ms per real ms of the waits each endpoint's rules write on the wire (see `FaultProxyOptions.wireScale`):
   * the run's time scale for an endpoint in wall time (a real server), 1 for one on the run's clock (the emulator).
   * Default: 1 for every endpoint.
   */
  readonly wireScale?: (endpointId: string) => number;
}

/**
 * Puts a fault proxy in front of every endpoint a rule names: the endpoint's `baseURL` becomes the
 * proxy's, which forwards to the original (or the provider's default). Endpoints no rule names are
 * returned as they were. Close the returned proxies when the run ends.
 *
 * @example
 * ```ts
 * const { endpoints, proxies } = await proxyFaultedEndpoints(config.endpoints, spec.faults ?? [], { clock });
 * try { … } finally { for (const p of proxies) await p.close(); }
 * ```
 */
export async function proxyFaultedEndpoints<E extends EndpointConfig>(
  endpoints: readonly E[],
  rules: readonly EndpointFaultRule[],
  options: ProxyFaultedEndpointsOptions,
): Promise<{ endpoints: E[]; proxies: FaultProxy[] }> {
  const proxies: FaultProxy[] = [];
  try {
    const out: E[] = [];
    for (const endpoint of endpoints) {
      const mine = rules.filter((r) => r.endpoint === endpoint.id);
      const upstream = effectiveBaseURL(endpoint);
      if (mine.length === 0 || !upstream) {
        out.push(endpoint);
        continue;
      }
      const proxy = await startFaultProxy({
        upstream,
        endpoint: {
          id: endpoint.id,
          provider: endpoint.provider,
          ...(endpoint.flavor ? { flavor: endpoint.flavor } : {}),
        },
        rules: mine,
        clock: options.clock,
        ...(options.seed !== undefined ? { seed: options.seed } : {}),
        ...(options.wireScale ? { wireScale: options.wireScale(endpoint.id) } : {}),
      });
      proxies.push(proxy);
      out.push({ ...endpoint, baseURL: proxy.baseURL });
    }
    return { endpoints: out, proxies };
  } catch (e) {
    for (const p of proxies) await p.close().catch(() => {});
    throw e;
  }
}
