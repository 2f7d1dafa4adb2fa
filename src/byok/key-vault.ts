import type { EngineWireOptions } from '../engines/create-engine.ts';
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../clock/clock.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import type { EndpointDescriptor, Engine } from '../core/engine-types.ts';
import { positiveMs } from './byok-input.ts';
import { parseByokTemplates } from './byok-template.ts';
import type { ByokListener, ByokReceipt, ByokTemplate, ProviderName } from './byok-types.ts';
import { KeySealer } from '../redact/sealed-key.ts';
import { type InjectOptions, type InjectParts, injectKey } from './key-vault-inject.ts';
import { createVaultEntries } from './key-vault-entries.ts';
import { receiptOf } from './key-vault-entry.ts';
import { vaultProviders } from './key-vault-providers.ts';

export type { InjectOptions } from './key-vault-inject.ts';

/**
 * Default idle TTL of an injected key: 2 hours without use.
 *
 * @example
 * ```ts
 * createKeyVault({ templates, idleTtlMs: DEFAULT_BYOK_IDLE_TTL_MS / 4 }); // 30 min
 * ```
 */
export const DEFAULT_BYOK_IDLE_TTL_MS = 2 * 60 * 60 * 1000;

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
  const wireOf = (templateName: string): EngineWireOptions => options.wireOf?.(templateName) ?? {};
  const withToken: InjectParts['withToken'] = options.withToken ?? ((_label, run) => run(undefined));
  const sealer = new KeySealer();
  const entries = createVaultEntries(ttlClock, logger);
  const { live, checking, listeners, liveEntry, sweep, ofSession, removeAll } = entries;
  let closed = false;

  const { knownNames, templateOf } = vaultProviders(templates);

  const injectParts: InjectParts = {
    clock,
    ttlClock,
    idleTtlMs,
    validate,
    sealer,
    entries,
    logger,
    wireOf,
    withToken,
    templateOf,
    isClosed: () => closed,
  };

  return Object.freeze({
    inject: (sessionIdIn, providerName, keyIn, injectOptions) =>
      injectKey(injectParts, sessionIdIn, providerName, keyIn, injectOptions),

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
