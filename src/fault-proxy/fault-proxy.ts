import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { guardConnections } from '../http/connection-guard.ts';
import { checkLocalHost } from '../http/local-host-check.ts';
import type { AddressInfo, Socket } from 'node:net';
import { type Clock, systemClock } from '../clock/clock.ts';
import { parkOnClock } from '../clock/virtual-clock.ts';
import { anthropicWire } from '../emulator/anthropic-wire.ts';
import type { EmulatorFlavor, FaultRule } from '../emulator/emulator-types.ts';
import { FaultRules } from '../emulator/fault-rules.ts';
import { geminiWire } from '../emulator/gemini-wire.ts';
import { openaiWire } from '../emulator/openai-wire.ts';
import { retryAfterHeaders } from '../emulator/rate-limit-headers-out.ts';
import { createSeededRandom } from '../core/seeded-random.ts';
import type { ErrorSpec, WireContext, WireModule } from '../emulator/wire-module.ts';
import type { CompatFlavor, ProviderKind } from '../core/engine-types.ts';
import type { EndpointFaultRule } from './endpoint-fault-rule.ts';

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

function wireOf(flavor: EmulatorFlavor): WireModule {
  if (flavor === 'anthropic') return anthropicWire;
  if (flavor === 'gemini') return geminiWire;
  return openaiWire(flavor);
}

/** SSE events a `stream_error` rule lets through before its error event (as the emulator does). */
const STREAM_EVENTS_BEFORE_ERROR = 3;

/** Hop-by-hop and framing headers: the proxy's own connection decides them. */
const HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'content-encoding',
  'accept-encoding',
  'proxy-connection',
  'upgrade',
  'te',
  'trailer',
]);

function callShape(flavor: EmulatorFlavor, path: string, body: string): { model: string; stream: boolean } {
  const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent)/.exec(path);
  if (flavor === 'gemini' && gemini)
    return { model: decodeURIComponent(gemini[1] as string), stream: gemini[2] === 'streamGenerateContent' };
  try {
    const json = JSON.parse(body) as { model?: unknown; stream?: unknown };
    return { model: typeof json.model === 'string' ? json.model : 'unknown', stream: json.stream === true };
  } catch {
    return { model: 'unknown', stream: false };
  }
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
  let forwarded = 0;
  const faulted: Record<string, number> = {};
  const sockets = new Set<Socket>();
  const closing = new AbortController();

  const context = (): WireContext => ({
    flavor,
    requestId: flavor === 'anthropic' ? `req_011C${randomId(20)}` : `req_${randomId(32).toLowerCase()}`,
    now: clock.now(),
    id: (prefix, length) => `${prefix}${randomId(length)}`,
  });

  /** Holds a request until the client (or close()) gives up; a wait for the clock's deadline. */
  const holdUntilGone = (res: ServerResponse) =>
    new Promise<void>((resolve) => {
      const unpark = parkOnClock(clock);
      // Each listener is taken off when either fires: the proxy's one close signal outlives every held request.
      const done = () => {
        res.off('close', done);
        closing.signal.removeEventListener('abort', done);
        unpark();
        resolve();
      };
      if (res.destroyed || closing.signal.aborted) return done();
      res.once('close', done);
      closing.signal.addEventListener('abort', done, { once: true });
    });

  const sendError = (res: ServerResponse, rule: FaultRule, model: string) => {
    const ctx = context();
    // On the wire in the real endpoint's time (the engine scales it back onto the run's clock).
    const retryMs = (rule.retryAfterMs ?? 1_000) / wireScale;
    const spec: ErrorSpec =
      rule.kind === 'rate_limit' || rule.kind === 'rate_limit_no_retry_after'
        ? {
            kind: 'rate_limit',
            model,
            retryAfterMs: retryMs,
            ...(rule.message ? { message: rule.message } : {}),
          }
        : ({ kind: rule.kind, model, ...(rule.message ? { message: rule.message } : {}) } as ErrorSpec);
    const out = wire.error(spec, ctx);
    const asksToWait =
      rule.kind === 'rate_limit' || (rule.kind === 'overloaded' && rule.retryAfterMs !== undefined);
    // Gemini says when to come back in the body (RetryInfo); the others in headers.
    const retry =
      asksToWait && flavor !== 'gemini' && flavor !== 'gemini-compat' ? retryAfterHeaders(retryMs) : {};
    const id = flavor === 'anthropic' ? { 'request-id': ctx.requestId } : { 'x-request-id': ctx.requestId };
    res.writeHead(out.status, {
      ...id,
      ...retry,
      ...(rule.kind === 'spend_limit' ? { 'x-should-retry': 'false' } : {}),
      'content-type': out.contentType,
    });
    res.end(out.body);
  };

  async function forward(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    cut?: FaultRule,
  ): Promise<void> {
    forwarded++;
    const upstreamAbort = new AbortController();
    res.on('close', () => upstreamAbort.abort());
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP.has(name)) continue;
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    headers.set('accept-encoding', 'identity');
    let response: Response;
    try {
      response = await fetch(new URL(req.url ?? '/', upstream.origin), {
        method: req.method ?? 'POST',
        headers,
        ...(body.length > 0 && req.method !== 'GET' && req.method !== 'HEAD'
          ? { body: new Uint8Array(body) }
          : {}),
        signal: AbortSignal.any([upstreamAbort.signal, closing.signal]),
      });
    } catch {
      // The real server is unreachable: so is the endpoint, as the client would have seen directly.
      req.socket.destroy();
      return;
    }
    const out: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (!HOP.has(name)) out[name] = value;
    });
    res.writeHead(response.status, out);
    const ctx = context();
    try {
      const reader = response.body?.getReader();
      if (cut?.kind === 'stream_error') {
        // Pass the first events whole (however the bytes were chunked), then the provider's error event.
        const decoder = new TextDecoder();
        let pending = '';
        let passed = 0;
        for (
          let r = await reader?.read();
          r && !r.done && passed < STREAM_EVENTS_BEFORE_ERROR;
          r = await reader?.read()
        ) {
          pending += decoder.decode(r.value, { stream: true });
          for (
            let at = pending.indexOf('\n\n');
            at >= 0 && passed < STREAM_EVENTS_BEFORE_ERROR;
            at = pending.indexOf('\n\n')
          ) {
            res.write(pending.slice(0, at + 2));
            pending = pending.slice(at + 2);
            passed++;
          }
        }
        upstreamAbort.abort();
        res.end(wire.streamError(ctx, cut.message));
        return;
      }
      for (let r = await reader?.read(); r && !r.done; r = await reader?.read()) {
        if (cut?.kind === 'stall_after_headers') {
          // A first slice of the body, as the emulator's stall sends, then nothing.
          res.write(r.value.subarray(0, Math.max(1, Math.floor(r.value.length / 3))));
          upstreamAbort.abort();
          await holdUntilGone(res);
          res.destroy();
          return;
        }
        res.write(r.value);
      }
      res.end();
    } catch {
      res.destroy();
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return;
    }
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://proxy.invalid');
    const shape = callShape(flavor, url.pathname, body.toString('utf8'));
    const rule = rules.pick({
      flavor,
      keyIdentity: 'proxy',
      keyPlain: undefined,
      keyFingerprint: 'none',
      model: shape.model,
      stream: shape.stream,
      at: clock.now() - start,
    });
    if (rule) faulted[rule.kind] = (faulted[rule.kind] ?? 0) + 1;
    if (!rule) return forward(req, res, body);
    switch (rule.kind) {
      case 'stall_after_headers':
      case 'stream_error':
        return forward(req, res, body, rule);
      case 'connection_reset':
        req.socket.destroy();
        return;
      case 'hang_before_headers':
        await holdUntilGone(res);
        res.destroy();
        return;
      default:
        sendError(res, rule, shape.model);
    }
  }

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
    void handle(req, res).catch(() => res.destroy());
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
    stats: () => ({ forwarded, faulted: { ...faulted } }),
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

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function randomId(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}
