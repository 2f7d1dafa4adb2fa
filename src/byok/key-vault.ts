import type { EngineWireOptions } from '../engines/create-engine.ts';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock/clock.ts';
import { type CallCredential, createCallCredential, fingerprintOf } from '../engines/call-credential.ts';
import {
  describeEndpoint,
  type EndpointConfig,
  type ParsedEndpointConfig,
} from '../engines/endpoint-config.ts';
import type { EndpointDescriptor, Engine, EngineRequest, EngineResult } from '../core/engine-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { EngineFaultError, type Fault, isEngineFaultError } from '../core/fault.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { ByokRejectedError, ByokVaultClosedError } from './byok-errors.ts';
import { checkByokKey, checkSessionId, keyFormatOf, maskKeyBytes, positiveMs } from './byok-input.ts';
import {
  buildByokEngine,
  byokTemplateName,
  parseByokTemplates,
  type ResolvedByokTemplate,
} from './byok-template.ts';
import type {
  ByokExpiryReason,
  ByokListener,
  ByokReceipt,
  ByokTemplate,
  ProviderName,
} from './byok-types.ts';
import { KeySealer } from '../redact/sealed-key.ts';
import { formatDuration } from '../clock/format-time.ts';

/**
 * Default idle TTL of an injected key: 2 hours without use.
 *
 * @example
 * ```ts
 * createKeyVault({ templates, idleTtlMs: DEFAULT_BYOK_IDLE_TTL_MS / 4 }); // 30 min
 * ```
 */
export const DEFAULT_BYOK_IDLE_TTL_MS = 2 * 60 * 60 * 1000;

const SOURCE = 'byok';

/**
 * Options of {@link createKeyVault}.
 *
 * @example
 * ```ts
 * const options: KeyVaultOptions = {
 *   clock: createManualClock(0),
 *   idleTtlMs: 60_000,
 *   templates: { openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') } },
 *   logger: createLogger({ level: 'info' }),
 * };
 * ```
 */
export interface KeyVaultOptions {
  /** Time source of every call's deadlines (the runtime's clock). Default: `systemClock`. */
  readonly clock?: Clock;
  /**
   * Time source of the idle TTL and of `expiresAt`. A user's "2 hours" is wall time, so a runtime on a
   * simulated (scaled) clock passes the system clock here. Default: `clock`.
   */
  readonly ttlClock?: Clock;
  /** A key expires after this many ms without use (sliding). Default: 2 h ({@link DEFAULT_BYOK_IDLE_TTL_MS}). */
  readonly idleTtlMs?: number;
  /** How a key for each provider name becomes an endpoint. Names are case-insensitive. Required, at least one. */
  readonly templates: Readonly<Record<ProviderName, ByokTemplate>>;
  /**
   * How the engine of a key for each template reads the waits on the wire (`wireScale`, `wallNow`: see
   * `CreateEngineOptions`); called with the template's name. Default: wall time, unscaled.
   */
  readonly wireOf?: (templateName: string) => EngineWireOptions;
  /** Check every injected key with a tiny probe call (max 1 output token) before accepting it. Default: true. */
  readonly validate?: boolean;
  /** Where the vault logs injections, refusals and expiries (masked keys, fingerprints only). Default: none. */
  readonly logger?: Logger;
  /**
   * Runs a key's check call holding one of the runtime's concurrency tokens (it is an upstream call like any
   * other: it counts against the cap). `run` gets the token's signal. Default: runs it at once, without a token.
   */
  readonly withToken?: <T>(
    label: string,
    run: (signal: AbortSignal | undefined) => Promise<T>,
    signal?: AbortSignal,
  ) => Promise<T>;
}

/**
 * Options of {@link KeyVault.inject}.
 *
 * @example
 * ```ts
 * await vault.inject('tty-1', 'openai', key, { signal: AbortSignal.timeout(10_000), ttlMs: 30 * 60_000 });
 * ```
 */
export interface InjectOptions {
  /** Cancels the check call; the key is then discarded. Default: none. */
  readonly signal?: AbortSignal;
  /** Idle TTL of this key, in ms. Default: the vault's `idleTtlMs`. */
  readonly ttlMs?: number;
}

/**
 * Session-bound user keys (`/byok PROVIDER KEY`), kept AES-256-GCM-encrypted in memory and served as
 * engines. See {@link createKeyVault}. A call already in flight when its key expires finishes (its
 * client was built before); everything after is refused without touching the network.
 *
 * @example
 * ```ts
 * const ids = vault.endpointsFor(agentSession);       // only this session's keys
 * const engine = ids[0] ? vault.engineFor(ids[0]) : undefined;
 * vault.endSession(agentSession);                     // wipes them; listeners get onExpired
 * ```
 */
export interface KeyVault {
  /**
   * Checks `key` for its provider's format, then with one tiny probe call through a real engine and,
   * when it answers, keeps it (encrypted) for `sessionId`. A key of the wrong format rejects with a
   * `ConfigError` (nothing is sent); a refused key rejects with `ByokRejectedError` and is discarded; an
   * unknown provider name rejects with a `ConfigError` listing the known ones (never echoing the name).
   * A second key for the same session and provider replaces the first once it passed its check. Bytes
   * are read during the call only and stay the caller's to wipe; prefer them to a string, which the
   * vault cannot wipe.
   */
  inject(
    sessionId: string,
    providerName: ProviderName,
    key: string | Uint8Array,
    options?: InjectOptions,
  ): Promise<ByokReceipt>;
  /**
   * The engine of a live BYOK endpoint, or undefined. Each `call()` decrypts the key for that call
   * only and slides the idle TTL; once the key is gone it rejects with an `EngineFaultError` of kind
   * `auth` (code `byok_expired`) and sends nothing upstream.
   */
  engineFor(endpointId: string): Engine | undefined;
  /** Live endpoint ids of one session, oldest first. Only that session's agents may use them. */
  endpointsFor(sessionId: string): string[];
  /** The loggable identity (key fingerprint, never the key) of a live endpoint, or undefined. */
  describe(endpointId: string): EndpointDescriptor | undefined;
  /** The key-less endpoint config of a live endpoint (for the engine pool's breaker and buckets), or undefined. */
  endpointConfig(endpointId: string): ParsedEndpointConfig | undefined;
  /** Receipts of the live keys (of one session, or all), masked. */
  list(sessionId?: string): ByokReceipt[];
  /** Removes a session's key for one provider, or all its keys; returns the receipts removed. */
  revoke(sessionId: string, providerName?: ProviderName): ByokReceipt[];
  /** Removes every key of a session (it ended); returns the receipts removed. */
  endSession(sessionId: string): ByokReceipt[];
  /** Provider names the vault accepts, sorted. */
  providers(): string[];
  /** Subscribes to injections and expiries. Returns the unsubscribe function. */
  subscribe(listener: ByokListener): () => void;
  /** Wipes every key and the vault's own encryption key. Later injections throw `ByokVaultClosedError`. */
  close(): void;
}

interface Entry {
  readonly sessionId: string;
  readonly template: ResolvedByokTemplate;
  readonly endpointId: string;
  readonly descriptor: EndpointDescriptor;
  readonly masked: string;
  readonly ttlMs: number;
  /** The sealed key; its marker is all the provider engine's SDK client holds. */
  readonly credential: CallCredential;
  /** The provider engine, built once; it sends through the credential. */
  readonly provider: Engine;
  /** What the pool gets: refuses once the key is gone, slides the TTL on use. */
  readonly engine: Engine;
  state: 'checking' | 'live' | 'gone';
  goneReason?: ByokExpiryReason;
  lastUsedAt: number;
  timer: unknown;
}

function expiryText(reason: ByokExpiryReason | undefined, ttlMs: number): string {
  switch (reason) {
    case 'idle':
      return `after ${formatDuration(ttlMs, 'exact')} without use`;
    case 'revoked':
      return 'because it was revoked';
    case 'session-ended':
      return 'because its session ended';
    case 'replaced':
      return 'because the session injected another key for this provider';
    default:
      return 'because the key vault was closed';
  }
}

/**
 * Creates the runtime BYOK key vault: when the platform's credit is gone, a user types
 * `/byok PROVIDER KEY` and that session's agents carry on with their own key.
 *
 * - A key is checked for its provider's format (`sk-…`, `sk-ant-…`, `AIza…`), then with one tiny probe
 *   call (max 1 output token) through a real engine before it is accepted; a refused key is discarded
 *   and reported as a `ByokRejectedError`.
 * - It is kept only as AES-256-GCM ciphertext + IV + tag under an ephemeral key made here. The SDK
 *   client holds a marker, not the key; each request's head gets the key's bytes on its way to the
 *   socket, decrypted into a buffer that is zero-filled once written. No string of the key is made, and
 *   it is never written to disk, a database, a snapshot, an event or a log line: those carry the
 *   endpoint id, the key's fingerprint and its masked form.
 * - It is bound to one session: only `endpointsFor(thatSession)` lists it.
 * - It expires after `idleTtlMs` without use (sliding, on `ttlClock`: wall time), at session end, or
 *   on revoke; its buffers are then zero-filled and listeners get `onExpired`.
 *
 * @example
 * ```ts
 * const vault = createKeyVault({
 *   templates: {
 *     anthropic: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
 *     openai: { provider: 'openai', model: 'gpt-4o-mini' },
 *   },
 * });
 * vault.subscribe({ onExpired: (r) => pool.removeEndpoint(r.endpointId) });
 * const receipt = await vault.inject('tty-1', 'OpenAI', 'sk-proj-…');
 * const result = await vault.engineFor(receipt.endpointId)!.call({
 *   messages: [{ role: 'user', content: 'Status?' }], maxTokens: 256, idempotencyKey: 'run-1/r2/kai',
 * });
 * ```
 */
export function createKeyVault(options: KeyVaultOptions): KeyVault {
  const clock = options.clock ?? systemClock;
  const ttlClock = options.ttlClock ?? clock;
  const idleTtlMs = positiveMs(options.idleTtlMs ?? DEFAULT_BYOK_IDLE_TTL_MS, 'idleTtlMs');
  const templates = parseByokTemplates(options.templates);
  const validate = options.validate ?? true;
  const logger = options.logger?.child({ component: 'byok' });
  const sealer = new KeySealer();
  const live = new Map<string, Entry>();
  const checking = new Set<Entry>();
  const listeners = new Set<ByokListener>();
  let closed = false;

  const knownNames = () => [...templates.keys()].sort();

  // Never echo what was typed as the provider: it may be the key, typed first.
  const unknownProvider = (): ConfigError =>
    new ConfigError({
      source: SOURCE,
      path: 'provider',
      message: `the provider name is not a BYOK provider (what was typed is not shown); use one of ${knownNames().join(', ')}`,
    });

  const templateOf = (providerName: unknown): ResolvedByokTemplate => {
    const name = typeof providerName === 'string' ? byokTemplateName(providerName) : '';
    const template = templates.get(name);
    if (!template) throw unknownProvider();
    return template;
  };

  const expiresAt = (entry: Entry) => entry.lastUsedAt + entry.ttlMs;

  const receiptOf = (entry: Entry): ByokReceipt =>
    Object.freeze({
      sessionId: entry.sessionId,
      provider: entry.template.name,
      masked: entry.masked,
      endpointId: entry.endpointId,
      expiresAt: expiresAt(entry),
    });

  const logFields = (entry: Entry) => ({
    sessionId: entry.sessionId,
    provider: entry.template.name,
    endpointId: entry.endpointId,
    keyFingerprint: entry.descriptor.keyFingerprint,
    masked: entry.masked,
  });

  const emit = (fn: (l: ByokListener) => void): void => {
    for (const listener of [...listeners]) {
      try {
        fn(listener);
      } catch (err) {
        logger?.error({ err }, 'byok listener failed');
      }
    }
  };

  /** Wipes an entry. Idempotent; tells listeners only about keys that had been live. */
  const end = (entry: Entry, reason: ByokExpiryReason): void => {
    if (entry.state === 'gone') return;
    const wasLive = entry.state === 'live';
    entry.state = 'gone';
    entry.goneReason = reason;
    if (entry.timer !== undefined) ttlClock.clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.credential.dispose();
    checking.delete(entry);
    if (live.get(entry.endpointId) === entry) live.delete(entry.endpointId);
    if (!wasLive) return;
    const receipt = receiptOf(entry);
    logger?.info({ ...logFields(entry), reason }, 'byok key expired');
    emit((l) => l.onExpired?.(receipt, reason));
  };

  // One timer per key, re-armed for the remainder when the key was used meanwhile: a call then costs
  // one clock read instead of a clear + set.
  const arm = (entry: Entry): void => {
    const onTimer = () => {
      entry.timer = undefined;
      if (entry.state !== 'live') return;
      const left = expiresAt(entry) - ttlClock.now();
      if (left > 0) entry.timer = ttlClock.setTimeout(onTimer, left);
      else end(entry, 'idle');
    };
    entry.timer = ttlClock.setTimeout(onTimer, Math.max(0, expiresAt(entry) - ttlClock.now()));
  };

  /** Expires keys whose deadline passed even if their timer has not fired yet (a late host timer). */
  const sweep = (): void => {
    const now = ttlClock.now();
    for (const entry of [...live.values()]) if (now >= expiresAt(entry)) end(entry, 'idle');
  };

  const liveEntry = (endpointId: string): Entry | undefined => {
    const entry = live.get(endpointId);
    if (!entry) return undefined;
    if (ttlClock.now() >= expiresAt(entry)) {
      end(entry, 'idle');
      return undefined;
    }
    return entry;
  };

  const expiredFault = (entry: Entry): EngineFaultError =>
    new EngineFaultError({
      kind: 'auth',
      provider: entry.template.endpoint.provider,
      code: 'byok_expired',
      message: `BYOK ${entry.template.name} key ${entry.masked} expired ${expiryText(entry.goneReason, entry.ttlMs)}; nothing was sent. Inject it again with /byok ${entry.template.name} KEY`,
      endpointId: entry.endpointId,
    });

  const callLive = async (entry: Entry, request: EngineRequest): Promise<EngineResult> => {
    if (entry.state === 'live' && ttlClock.now() >= expiresAt(entry)) end(entry, 'idle');
    if (entry.state !== 'live') throw expiredFault(entry);
    entry.lastUsedAt = ttlClock.now();
    try {
      return await entry.provider.call(request);
    } finally {
      // A long call counts as activity until it ends; a key that went away meanwhile stays gone.
      if (entry.state === 'live') entry.lastUsedAt = Math.max(entry.lastUsedAt, ttlClock.now());
    }
  };

  const faultOf = (err: unknown, entry: Entry): Fault => {
    if (isEngineFaultError(err)) return err.fault;
    return {
      kind: 'bad_request',
      provider: entry.template.endpoint.provider,
      message: scrubSecrets(err instanceof Error ? err.message : String(err)),
      endpointId: entry.endpointId,
    };
  };

  const ofSession = (sessionId: string, name?: string): Entry[] => [
    ...[...live.values()].filter(
      (e) => e.sessionId === sessionId && (name === undefined || e.template.name === name),
    ),
    ...[...checking].filter(
      (e) => e.sessionId === sessionId && (name === undefined || e.template.name === name),
    ),
  ];

  const removeAll = (entries: Entry[], reason: ByokExpiryReason): ByokReceipt[] => {
    const out: ByokReceipt[] = [];
    for (const entry of entries) {
      if (entry.state === 'live') out.push(receiptOf(entry));
      end(entry, reason);
    }
    return out;
  };

  return Object.freeze({
    async inject(sessionIdIn, providerName, keyIn, injectOptions: InjectOptions = {}) {
      if (closed) throw new ByokVaultClosedError();
      const sessionId = checkSessionId(sessionIdIn);
      const template = templateOf(providerName);
      const ttlMs = positiveMs(injectOptions.ttlMs ?? idleTtlMs, 'ttlMs');
      const format = keyFormatOf(template.endpoint.provider, template.endpoint.flavor);
      const { bytes, copied } = checkByokKey(keyIn, format);
      let entry: Entry;
      let credential: CallCredential | undefined;
      try {
        const fingerprint = fingerprintOf(bytes);
        const endpointId = `byok:${sessionId}:${template.name}:${fingerprint}`;
        credential = createCallCredential(bytes, { sealer, aad: endpointId });
        const descriptor = Object.freeze({
          ...describeEndpoint({ id: endpointId, ...template.endpoint } as EndpointConfig),
          keyFingerprint: fingerprint,
        });
        const config = { id: endpointId, ...template.endpoint } as ParsedEndpointConfig;
        entry = {
          sessionId,
          template,
          endpointId,
          descriptor,
          masked: maskKeyBytes(bytes),
          ttlMs,
          credential,
          provider: buildByokEngine(
            config,
            descriptor,
            clock,
            credential,
            options.wireOf?.(template.name) ?? {},
          ),
          engine: Object.freeze({ endpoint: descriptor, call: (r: EngineRequest) => callLive(entry, r) }),
          state: 'checking',
          lastUsedAt: ttlClock.now(),
          timer: undefined,
        };
      } catch (e) {
        // Sealed but never kept (its engine was refused, e.g. a bad wireScale): wiped now, not left to the GC.
        credential?.dispose();
        throw e;
      } finally {
        // A string the vault copied is wiped here; bytes handed in stay the caller's to wipe.
        if (copied) bytes.fill(0);
      }
      const { endpointId } = entry;
      checking.add(entry);

      const refuse = (fault: Fault): never => {
        const err = new ByokRejectedError({ provider: template.name, masked: entry.masked, fault });
        end(entry, 'revoked');
        logger?.warn(
          { ...logFields(entry), faultKind: fault.kind, status: fault.status },
          'byok key refused',
        );
        throw err;
      };

      if (validate) {
        try {
          const check = (tokenSignal: AbortSignal | undefined) => {
            const signals = [injectOptions.signal, tokenSignal].filter(
              (x): x is AbortSignal => x !== undefined,
            );
            const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
            return entry.provider.call({
              messages: [{ role: 'user', content: 'ping' }],
              maxTokens: 1,
              idempotencyKey: `byok-check:${endpointId}:${randomUUID()}`,
              ...(signal ? { signal } : {}),
            });
          };
          await (options.withToken
            ? options.withToken(`byok-check:${endpointId}`, check, injectOptions.signal)
            : check(undefined));
        } catch (err) {
          if (entry.state === 'gone') {
            refuse({
              kind: 'cancelled',
              provider: template.endpoint.provider,
              message: 'the key was removed while it was being checked',
              endpointId,
            });
          }
          refuse(faultOf(err, entry));
        }
      }
      if (closed) {
        end(entry, 'closed');
        throw new ByokVaultClosedError();
      }
      if (entry.state === 'gone') {
        refuse({
          kind: 'cancelled',
          provider: template.endpoint.provider,
          message: 'the key was removed while it was being checked',
          endpointId,
        });
      }
      for (const other of ofSession(sessionId, template.name)) if (other !== entry) end(other, 'replaced');
      checking.delete(entry);
      entry.state = 'live';
      entry.lastUsedAt = ttlClock.now();
      live.set(endpointId, entry);
      arm(entry);
      const receipt = receiptOf(entry);
      logger?.info({ ...logFields(entry), expiresAt: receipt.expiresAt }, 'byok key injected');
      emit((l) => l.onInjected?.(receipt));
      return receipt;
    },

    engineFor(endpointId) {
      return liveEntry(endpointId)?.engine;
    },

    endpointsFor(sessionId) {
      sweep();
      return [...live.values()].filter((e) => e.sessionId === sessionId).map((e) => e.endpointId);
    },

    describe(endpointId) {
      return liveEntry(endpointId)?.descriptor;
    },

    endpointConfig(endpointId) {
      const entry = liveEntry(endpointId);
      return entry ? Object.freeze({ id: entry.endpointId, ...entry.template.endpoint }) : undefined;
    },

    list(sessionId) {
      sweep();
      return [...live.values()]
        .filter((e) => sessionId === undefined || e.sessionId === sessionId)
        .map((e) => receiptOf(e));
    },

    revoke(sessionId, providerName) {
      const name = providerName === undefined ? undefined : templateOf(providerName).name;
      return removeAll(ofSession(sessionId, name), 'revoked');
    },

    endSession(sessionId) {
      return removeAll(ofSession(sessionId), 'session-ended');
    },

    providers: knownNames,

    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },

    close() {
      if (closed) return;
      closed = true;
      removeAll([...live.values(), ...checking], 'closed');
      listeners.clear();
      sealer.destroy();
    },
  } satisfies KeyVault);
}
