import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { guardConnections } from '../http/connection-guard.ts';
import { checkLocalHost } from '../http/local-host-check.ts';
import type { AddressInfo, Socket } from 'node:net';
import { type Clock, systemClock } from '../clock/clock.ts';
import type { EmulatorFlavor, FaultRule } from '../emulator/emulator-types.ts';
import { FaultRules } from '../emulator/fault-rules.ts';
import { createSeededRandom } from '../core/seeded-random.ts';
import type { CompatFlavor, ProviderKind } from '../core/engine-types.ts';
import type { EndpointFaultRule } from './endpoint-fault-rule.ts';
import type { ProxyCounts } from './fault-proxy-forward.ts';
import { handleProxyCall, type ProxyParts } from './fault-proxy-handler.ts';
import { wireOf } from './fault-proxy-wire.ts';

/**
 * A local HTTP proxy in front of one endpoint's real `baseURL` that acts out fault rules on its calls
 * (429s, overloads, resets, hangs, stalls, a stream cut by an error event) in that provider's exact
 * wire format, and forwards every other call to the real server untouched, streaming included. It is
 * how a scenario rehearses a real endpoint that fails and recovers.
 */

/**
 * Options of {@link startFaultProxy}.
 *
 * @example
 * ```ts
 * const options: FaultProxyOptions = { upstream: 'http://127.0.0.1:8000/v1', endpoint: { id: 'local', provider: 'openai-compatible', flavor: 'vllm' } };
 * ```
 */
export interface FaultProxyOptions {
  /** The endpoint's real base URL, exactly what its SDK would be given (`https://api.openai.com/v1`). Required. */
  readonly upstream: string;
  /** The endpoint: its id and wire (to render errors as its provider does). Required. */
  readonly endpoint: { readonly id: string; readonly provider: ProviderKind; readonly flavor?: CompatFlavor };
  /** The rules; those naming another endpoint are ignored. Default: none (a transparent proxy). */
  readonly rules?: readonly EndpointFaultRule[];
  /** The run's clock: rule windows count from the proxy's start on it; hangs wait on it. Default `systemClock`. */
  readonly clock?: Clock;
  /** Seed of the `probability` draws. Default 1. */
  readonly seed?: number;
  /**
   * Simulated ms per real ms. A rule's `retryAfterMs` is simulated time, like everything in a scenario; the proxy
   * stands in front of a real endpoint whose waits the engine reads as real time (and scales by this), so the
   * proxy writes the rule's wait divided by it. Default 1.
   */
  readonly wireScale?: number;
}

/**
 * What a proxy did so far.
 *
 * @example
 * ```ts
 * proxy.stats(); // { forwarded: 12, faulted: { overloaded: 3 } }
 * ```
 */
export interface FaultProxyStats {
  /** Calls passed to the real server (a stall or a stream error also forwards, then cuts). */
  readonly forwarded: number;
  /** Faults acted out, by kind. */
  readonly faulted: Readonly<Record<string, number>>;
}

/**
 * A running fault proxy.
 *
 * @example
 * ```ts
 * const proxy: FaultProxy = await startFaultProxy(options);
 * await proxy.close();
 * ```
 */
export interface FaultProxy {
  /** What to give the endpoint's SDK instead of the real base URL (same path, on 127.0.0.1). */
  readonly baseURL: string;
  stats(): FaultProxyStats;
  /** Stops listening and drops held connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * The emulator flavor whose wire format an endpoint speaks.
 *
 * @example
 * ```ts
 * flavorOf('openai-compatible', 'vllm'); // 'vllm'
 * flavorOf('openai-compatible'); // 'openai'
 * ```
 */
export function flavorOf(provider: ProviderKind, flavor?: CompatFlavor): EmulatorFlavor {
  if (provider !== 'openai-compatible') return provider;
  return flavor === undefined || flavor === 'generic' ? 'openai' : flavor;
}

/**
 * Starts a fault proxy on 127.0.0.1 (ephemeral port) in front of `options.upstream`.
 *
 * @example
 * ```ts
 * const proxy = await startFaultProxy({
 *   upstream: 'https://api.anthropic.com',
 *   endpoint: { id: 'claude', provider: 'anthropic' },
 *   rules: [{ endpoint: 'claude', kind: 'overloaded', count: 3 }],
 * });
 * createEngine({ id: 'claude', provider: 'anthropic', model: 'claude-sonnet-4-6', apiKeyEnv: 'ANTHROPIC_API_KEY', baseURL: proxy.baseURL });
 * ```
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.upstream);
  const basePath = upstream.pathname.replace(/\/+$/, '');
  const flavor = flavorOf(options.endpoint.provider, options.endpoint.flavor);
  const wire = wireOf(flavor);
  const clock = options.clock ?? systemClock;
  const wireScale = options.wireScale ?? 1;
  const start = clock.now();
  const rng = createSeededRandom(options.seed ?? 1);
  const rules = new FaultRules(rng);
  for (const r of options.rules ?? []) {
    if (r.endpoint !== options.endpoint.id) continue;
    const { endpoint: _endpoint, ...rule } = r;
    rules.add(rule as FaultRule);
  }
  const counts: ProxyCounts = { forwarded: 0, faulted: {} };
  const sockets = new Set<Socket>();
  const closing = new AbortController();
  const parts: ProxyParts = {
    upstream,
    flavor,
    wire,
    clock,
    closing: closing.signal,
    counts,
    rules,
    start,
    wireScale,
  };

  let port = 0;
  const server: Server = createServer((req, res) => {
    // A local server as the visualizer and /metrics are: a page of another site reaching 127.0.0.1 under a name of
    // its own (DNS rebinding) must not use it to spend the real endpoint's key, and two Host headers are refused.
    const refused = checkLocalHost(req, port);
    if (refused) {
      req.resume();
      res.writeHead(refused.status, { 'content-type': 'text/plain' }).end(`${refused.message}\n`);
      return;
    }
    void handleProxyCall(parts, req, res).catch(() => res.destroy());
  });
  // One client opening connections and never finishing their heads cannot fill the proxy: slow heads are cut,
  // and room is kept for new clients. Many: a run's calls in flight (held ones included) each hold one.
  guardConnections(server, { maxConnections: 512, headersTimeoutMs: 3_000 });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;

  return Object.freeze({
    baseURL: `http://127.0.0.1:${port}${basePath}`,
    stats: () => ({ forwarded: counts.forwarded, faulted: { ...counts.faulted } }),
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing.abort();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      });
      return closed;
    },
  });
}
