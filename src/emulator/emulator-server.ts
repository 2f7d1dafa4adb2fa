import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pino from 'pino';
import { type Clock, systemClock } from '../clock/clock.ts';
import { guardConnections } from '../http/connection-guard.ts';
import { type EmulatorHostPolicy, emulatorHostPolicy } from './emulator-host-policy.ts';
import { handleCall } from './call-handler.ts';
import { routeCall } from './call-routes.ts';
import { sendNotFound } from './response-writer.ts';
import { ControlInputError, type EmulatorControl, handleControl } from './control-routes.ts';
import { EmulatorCore } from './emulator-core.ts';
import { loadEmulatorProfile, resolveProfile, validateFaultRule } from './emulator-profile.ts';
import {
  EMULATOR_FLAVORS,
  type EmulatorFlavor,
  type EmulatorProfile,
  type EmulatorStats,
  type FaultRule,
} from './emulator-types.ts';

/**
 * Options of {@link startEmulator}.
 *
 * @example
 * ```ts
 * const options: EmulatorOptions = { profile: 'scenarios/storm.yaml', clock: createManualClock(0), seed: 7 };
 * ```
 */
export interface EmulatorOptions {
  /** A profile object, or the path of a `.json`/`.yaml`/`.yml` file. Default: the empty profile. */
  profile?: EmulatorProfile | string;
  /** Control port; 0 (default) = ephemeral. When non-zero, flavors listen on port+1 … port+6 in {@link EMULATOR_FLAVORS} order. */
  port?: number;
  /** Where ALL emulator time comes from (windows, latency, retry-after durations). Default {@link systemClock}. */
  clock?: Clock;
  /**
   * Wall-clock epoch ms, for the instants the emulator writes on the wire (Anthropic's
   * `anthropic-ratelimit-*-reset`): a real provider stamps them in wall time, whatever a client's
   * simulated clock says, so the emulator does too. Default `Date.now`.
   */
  wallNow?: () => number;
  /** Overrides `profile.seed`. */
  seed?: number;
  /**
   * Address every listener binds. `0.0.0.0` (or a non-loopback address) lets other machines or containers
   * reach it; its URLs then still say 127.0.0.1 for a wildcard bind.
   * @default '127.0.0.1'
   */
  host?: string;
  /**
   * Host names (no port) the listeners answer besides the loopback names and the bound address, when
   * {@link host} is not a loopback address: the names other containers use, such as a docker compose
   * service name (`llm-emulator`). Any other `Host` gets 403 (DNS rebinding); a loopback bind answers only
   * `127.0.0.1:<port>` and `localhost:<port>`, and refuses this option.
   * @default []
   */
  allowedHosts?: readonly string[];
  /** Debug log of every call (keys appear only as alias/fingerprint). Default: none. */
  logger?: pino.Logger;
}

/**
 * A running emulator.
 *
 * @example
 * ```ts
 * const emu: Emulator = await startEmulator();
 * const id = emu.addFault({ kind: 'overloaded', match: { flavor: 'anthropic' }, count: 2 });
 * emu.removeFault(id);
 * await emu.close();
 * ```
 */
export interface Emulator {
  /** `http://127.0.0.1:PORT` of the control listener. */
  readonly controlURL: string;
  /** Exactly what to pass as that SDK's `baseURL` (Gemini: `httpOptions.baseUrl`). */
  baseURL(flavor: EmulatorFlavor): string;
  /** Every flavor's base URL (also served at `GET /_emulator/urls`). */
  baseURLs(): Record<string, string>;
  stats(): EmulatorStats;
  /** Validated like the profile (throws ConfigError); returns the rule id. */
  addFault(rule: FaultRule): string;
  removeFault(id: string): void;
  clearFaults(): void;
  /** Sets a key's credit in tokens (alias, plaintext key or fingerprint); `null` = unlimited. */
  setCredit(keyOrAlias: string, tokens: number | null): void;
  /** Emulated ms per real ms from now on. */
  setTimeScale(scale: number): void;
  /** Clears stats, quota windows and fault counters. */
  reset(): void;
  /** Closes every listener and destroys held sockets (hangs, stalls). */
  close(): Promise<void>;
}

/**
 * Room for calls in flight on one listener (held ones included: hangs, stalls, slow streams): the emulator is a
 * load-test target (bench:scale asks 1,000 calls at once of one flavor), so far above a run's concurrency limit;
 * one more first evicts an idle connection. A request head must be complete within a few seconds of the
 * connection opening, which is what keeps a client that opens connections and never finishes a head from
 * filling it.
 */
const GUARD = { maxConnections: 4_096, headersTimeoutMs: 5_000 } as const;

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

class RunningEmulator implements Emulator, EmulatorControl {
  readonly #core: EmulatorCore;
  readonly #hosts: EmulatorHostPolicy;
  readonly #control: Server;
  readonly #ports = new Map<EmulatorFlavor, number>();
  readonly #servers = new Map<EmulatorFlavor, Server>();
  /** Flavor listeners closed by a connection_refused rule. */
  readonly #refused = new Set<EmulatorFlavor>();
  readonly #retired = new Set<Server>();
  #timer: unknown;
  #closed = false;
  controlURL = '';

  constructor(core: EmulatorCore, hosts: EmulatorHostPolicy) {
    this.#core = core;
    this.#hosts = hosts;
    this.#control = createServer((req, res) => {
      if (this.#hostRefused(req, res)) return;
      this.#onControl(req, res);
    });
    guardConnections(this.#control, GUARD);
  }

  async start(port: number): Promise<void> {
    const controlPort = await listen(this.#control, port, this.#hosts.bind);
    this.controlURL = `http://${this.#hosts.urlHost}:${controlPort}`;
    for (const [i, flavor] of EMULATOR_FLAVORS.entries()) {
      const server = this.#makeServer(flavor);
      this.#ports.set(flavor, await listen(server, port === 0 ? 0 : port + 1 + i, this.#hosts.bind));
      this.#servers.set(flavor, server);
    }
    this.#syncRefusals();
  }

  #makeServer(flavor: EmulatorFlavor): Server {
    const server = createServer((req, res) => {
      if (this.#hostRefused(req, res)) return;
      this.#onFlavor(flavor, req, res);
    });
    server.keepAliveTimeout = 5_000;
    // One client holding connections it never finishes a head on cannot lock the SDKs of a run out.
    guardConnections(server, GUARD);
    return server;
  }

  /**
   * Every listener, control and provider alike: a page of another site reaching it under its own name (DNS
   * rebinding) must neither drive the control routes nor spend a key on the provider routes, and two Host
   * headers are malformed. Answered before anything is counted: a refused request is no call.
   */
  #hostRefused(req: IncomingMessage, res: ServerResponse): boolean {
    const refused = this.#hosts.check(req, req.socket.localPort ?? 0);
    if (!refused) return false;
    req.resume();
    res.setHeader('connection', 'close');
    res.writeHead(refused.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: refused.message, field: 'host' }));
    return true;
  }

  #onControl(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.startsWith('/_emulator'))
      void handleControl(this, req.method ?? 'GET', url.pathname, req, res);
    else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'the control port serves /_emulator/* only' }));
    }
  }

  #onFlavor(flavor: EmulatorFlavor, req: IncomingMessage, res: ServerResponse): void {
    // One request per connection: a keep-alive socket would outlive a connection_refused close
    // and turn the refusal into a racy "other side closed".
    res.setHeader('connection', 'close');
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.startsWith('/_emulator')) {
      void handleControl(this, req.method ?? 'GET', url.pathname, req, res);
      return;
    }
    if (this.#refused.has(flavor)) {
      // A keep-alive connection opened before the listener closed: refuse it the only way left.
      const { seq, inFlight } = this.#core.stats.begin();
      req.socket.destroy();
      const now = this.#core.clock.now();
      this.#core.stats.end({
        seq,
        flavor,
        key: 'none',
        model: 'unknown',
        status: 'refused',
        fault: 'connection_refused',
        startedAt: now,
        endedAt: now,
        inFlightAtStart: inFlight,
        inputTokens: 0,
        outputTokens: 0,
        stream: false,
      });
      return;
    }
    const route = routeCall(flavor, req.method ?? 'GET', url.pathname);
    if (!route) {
      req.resume();
      sendNotFound(this.#core, flavor, res, req.method ?? 'GET', url.pathname);
      return;
    }
    handleCall(this.#core, flavor, route, req, res, url).catch((e) => {
      this.#core.logger?.error({ err: e }, 'emulator call failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end();
    });
  }

  /** Opens/closes flavor listeners to match the connection_refused rules now, and arms the next boundary. */
  #syncRefusals(): void {
    if (this.#closed) return;
    const core = this.#core;
    const now = core.time.now();
    const want = core.faults.refusedFlavors(now);
    for (const flavor of EMULATOR_FLAVORS) {
      const refuse = want.has(flavor) || want.has('all');
      if (refuse && !this.#refused.has(flavor)) {
        this.#refused.add(flavor);
        const server = this.#servers.get(flavor)!;
        this.#retired.add(server);
        server.close(() => this.#retired.delete(server));
        server.closeIdleConnections();
      } else if (!refuse && this.#refused.has(flavor)) {
        this.#refused.delete(flavor);
        const server = this.#makeServer(flavor);
        this.#servers.set(flavor, server);
        listen(server, this.#ports.get(flavor)!, this.#hosts.bind).catch((e) =>
          core.logger?.error({ err: e, flavor }, 'emulator could not reopen a listener'),
        );
      }
    }
    if (this.#timer !== undefined) core.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    const next = core.faults.nextRefusalBoundary(now);
    if (next !== undefined) {
      this.#timer = core.clock.setTimeout(
        () => {
          this.#timer = undefined;
          this.#syncRefusals();
        },
        Math.max(0, core.time.toReal(next - now)),
      );
    }
  }

  baseURL(flavor: EmulatorFlavor): string {
    const port = this.#ports.get(flavor);
    if (port === undefined)
      throw new ControlInputError('flavor', `must be one of ${EMULATOR_FLAVORS.join(', ')}`);
    const root = `http://${this.#hosts.urlHost}:${port}`;
    if (flavor === 'openai' || flavor === 'vllm' || flavor === 'ollama') return `${root}/v1`;
    if (flavor === 'gemini-compat') return `${root}/v1beta/openai`;
    return root;
  }

  baseURLs(): Record<string, string> {
    return Object.fromEntries(EMULATOR_FLAVORS.map((f) => [f, this.baseURL(f)]));
  }

  stats(): EmulatorStats {
    return this.#core.stats.snapshot();
  }

  addFault(rule: FaultRule): string {
    const id = this.#core.faults.add(validateFaultRule(rule));
    this.#syncRefusals();
    return id;
  }

  removeFault(id: string): void {
    this.#core.faults.remove(id);
    this.#syncRefusals();
  }

  clearFaults(): void {
    this.#core.faults.clear();
    this.#syncRefusals();
  }

  listFaults(): FaultRule[] {
    return this.#core.faults.list();
  }

  setCredit(keyOrAlias: string, tokens: number | null): void {
    if (typeof keyOrAlias !== 'string' || !keyOrAlias)
      throw new ControlInputError('key', 'must be a non-empty string');
    if (tokens !== null && (typeof tokens !== 'number' || !Number.isFinite(tokens))) {
      throw new ControlInputError('tokens', 'must be a number, or null for unlimited');
    }
    this.#core.credit.set(this.#core.resolveIdentity(keyOrAlias), tokens);
  }

  setTimeScale(scale: number): void {
    if (typeof scale !== 'number' || !(scale > 0) || !Number.isFinite(scale)) {
      throw new ControlInputError('scale', 'must be a positive number');
    }
    this.#core.time.setScale(scale);
    this.#syncRefusals();
  }

  reset(): void {
    this.#core.stats.reset();
    this.#core.quotas.clear();
    this.#core.faults.resetCounters();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) this.#core.clock.clearTimeout(this.#timer);
    this.#core.dispose();
    const open = [...this.#servers.entries()].filter(([f]) => !this.#refused.has(f)).map(([, s]) => s);
    for (const s of this.#retired) s.closeAllConnections();
    await Promise.all([this.#control, ...open].map((s) => closeServer(s)));
  }
}

/**
 * Starts the provider emulator: one control listener and one listener per flavor, all on 127.0.0.1
 * (or {@link EmulatorOptions.host}), each answering only its own names (see {@link EmulatorOptions.allowedHosts}).
 *
 * @example
 * ```ts
 * const emu = await startEmulator({ profile: { keys: [{ alias: 'primary', key: 'sk-primary-0001' }] } });
 * const client = new Anthropic({ apiKey: 'sk-primary-0001', baseURL: emu.baseURL('anthropic'), maxRetries: 0 });
 * await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
 * await emu.close();
 * ```
 */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const hosts = emulatorHostPolicy(options.host, options.allowedHosts);
  const profile = loadEmulatorProfile(options.profile ?? {});
  const core = new EmulatorCore(
    resolveProfile(profile, options.seed),
    options.clock ?? systemClock,
    options.logger,
    options.wallNow,
  );
  const emulator = new RunningEmulator(core, hosts);
  try {
    await emulator.start(options.port ?? 0);
  } catch (e) {
    await emulator.close();
    throw e;
  }
  return emulator;
}
