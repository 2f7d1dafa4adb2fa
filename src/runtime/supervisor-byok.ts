import type { Logger } from 'pino';
import type { ByokExpiryReason, ByokReceipt, ProviderName } from '../byok/byok-types.ts';
import {
  createKeyVault,
  type InjectOptions,
  type KeyVault,
  type KeyVaultOptions,
} from '../byok/key-vault.ts';
import { type Clock, systemClock } from '../clock/clock.ts';
import { isScaledClock } from '../clock/scaled-clock.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { Fault, FaultKind } from '../core/fault.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import type { Engine } from '../core/engine-types.ts';

/** Where BYOK endpoints go: the runtime's endpoints (each with its own health). */
export interface ByokEndpointSink {
  addEndpoint(
    config: ParsedEndpointConfig,
    options: { createEngine: (config: ParsedEndpointConfig) => Engine },
  ): void;
  removeEndpoint(id: string): void;
}
import type { RuntimeConfig } from './runtime-config.ts';

/**
 * The session an agent works for when its definition names none, and the one `/byok` typed on the
 * stdin of `breakwater run` injects for.
 *
 * @example
 * ```ts
 * await supervisor.byok.inject(DEFAULT_BYOK_SESSION, 'openai', key);
 * ```
 */
export const DEFAULT_BYOK_SESSION = 'default';

/**
 * Receives the runtime's BYOK lifecycle: a key became usable, or it is gone (and why).
 *
 * @example
 * ```ts
 * supervisor.byok.subscribe({
 *   onExpired: (r, reason, faultKind) => console.log(`${r.provider} key ${r.masked} gone: ${reason}${faultKind ? ` (${faultKind})` : ''}`),
 * });
 * ```
 */
export interface SupervisorByokListener {
  /** A key passed its check and its endpoint is in the pool, after the session's agents' chains. */
  readonly onInjected?: (receipt: ByokReceipt) => void;
  /**
   * A key is gone (wiped) and its endpoint removed. `faultKind` is set when the runtime revoked it because
   * the provider refused it (`auth`, `credit_exhausted`).
   */
  readonly onExpired?: (receipt: ByokReceipt, reason: ByokExpiryReason, faultKind?: FaultKind) => void;
}

/**
 * Runtime BYOK on a running supervisor: a user's own key, injected mid-run, becomes an endpoint (its
 * own breaker, buckets and cooldown) that only that session's agents try, after their chain and before
 * the degraded layer. Keys are checked for their provider's format, kept AES-256-GCM-encrypted in memory
 * and expire after `byok.idleTtlMs` without use (2 h by default, wall time even when the runtime runs on
 * a time-scaled clock), at `endSession`, on `revoke`, when the provider refuses them (auth, credit), and
 * when the supervisor stops.
 *
 * Without `byok.templates` in the config, `inject` and `revoke` throw a ConfigError saying how to turn
 * it on; `list` and `endSession` return `[]`.
 *
 * @example
 * ```ts
 * try {
 *   const r = await supervisor.byok.inject('default', 'openai', key, { signal });
 *   console.log(`${r.provider} key ${r.masked} active for session ${r.sessionId}`);
 * } catch (e) {
 *   if (isByokRejectedError(e) || isConfigError(e)) console.log(e.message); else throw e;
 * }
 * ```
 */
export interface SupervisorByok {
  /** True when the config has `byok.templates`. */
  readonly enabled: boolean;
  /** Provider names `/byok` accepts, sorted (`[]` when BYOK is off). */
  providers(): string[];
  /**
   * Checks `key` with one tiny call (max 1 output token) and, when the provider answers, keeps it for
   * `sessionId`. A refused key rejects with `ByokRejectedError` (one line: masked key, fault kind) and is
   * discarded; an unknown provider name rejects with a ConfigError listing the known ones.
   */
  inject(
    sessionId: string,
    provider: ProviderName,
    key: string | Uint8Array,
    options?: InjectOptions,
  ): Promise<ByokReceipt>;
  /** Removes a session's key for one provider, or all its keys; returns the receipts removed. */
  revoke(sessionId: string, provider?: ProviderName): ByokReceipt[];
  /** Receipts of the live keys (of one session, or all), masked. */
  list(sessionId?: string): ByokReceipt[];
  /** The session ended: wipes all its keys; returns the receipts removed. */
  endSession(sessionId: string): ByokReceipt[];
  /** Calls `listener` on every injection and expiry. Returns the unsubscribe function. */
  subscribe(listener: SupervisorByokListener): () => void;
}

/** What the supervisor keeps of its BYOK wiring. */
export interface ByokWiring {
  readonly api: SupervisorByok;
  /** Endpoint ids of a session's live keys, oldest first. */
  endpointsFor(sessionId: string): readonly string[];
  /** The pool's fault hook: revokes a BYOK key its provider refused, so no HALF-OPEN probe keeps it alive. */
  onFault(endpointId: string, fault: Fault): void;
  /** Wipes every key (the supervisor stopped). */
  close(): void;
}

/** What {@link wireByok} needs from the supervisor. */
export interface ByokWiringDeps {
  readonly config: RuntimeConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Getter: the endpoints are built after the wiring (their fault hook points here). */
  readonly pool: () => ByokEndpointSink;
  readonly emit: (event: RuntimeEvent) => void;
  /** Extra options for each BYOK endpoint. Default none. */
  readonly endpointOptions?: Record<string, never>;
  /** A key became usable: the supervisor looks at its queue again. */
  readonly onInjected: () => void;
  /** Runs a key's check call holding a concurrency token (see `KeyVaultOptions.withToken`). Default: none. */
  readonly withToken?: KeyVaultOptions['withToken'];
  /** How each template's keys read the waits on the wire (see `KeyVaultOptions.wireOf`). Default: unscaled. */
  readonly wireOf?: KeyVaultOptions['wireOf'];
}

/**
 * The clock a BYOK idle TTL runs on: the system clock when the runtime's clock is a simulated (scaled)
 * one, else the runtime's clock itself (the system clock, or a test's manual clock).
 *
 * @example
 * ```ts
 * wallClockOf(createScaledClock({ scale: 15 })) === systemClock; // true
 * ```
 */
export function wallClockOf(clock: Clock): Clock {
  return isScaledClock(clock) ? systemClock : clock;
}

function byokOff(what: string): ConfigError {
  return new ConfigError({
    source: 'supervisor.byok',
    path: 'byok.templates',
    message: `cannot ${what}: BYOK is off because the runtime config has no byok.templates; add e.g. byok: { templates: { openai: { provider: "openai", model: "gpt-4o-mini" } } }`,
  });
}

/**
 * Builds the key vault from `config.byok` and wires it into the engine pool: an injected key's endpoint is
 * added with its engine's own descriptor (the key's fingerprint), an expired one removed (before a
 * replacement is added), and a key the provider refuses (auth, credit) is revoked and said so in the log
 * and the event feed.
 *
 * @example
 * ```ts
 * const byok = wireByok({ config, clock, logger, pool: () => pool, emit, endpointOptions, onInjected: rescan });
 * const extra = byok.endpointsFor(sessionOfAgent); // after the agent's chain
 * ```
 */
export function wireByok(deps: ByokWiringDeps): ByokWiring {
  const { logger } = deps;
  const listeners = new Set<SupervisorByokListener>();
  const vault = createByokVault(deps);
  /** Why the runtime revoked a key, read by the expiry that follows at once. */
  const refusedBy = new Map<string, FaultKind>();
  if (vault) connectVaultToPool(vault, deps, refusedBy, listeners);
  const api = byokApi(vault, listeners);
  return {
    api,
    endpointsFor: (sessionId) => vault?.endpointsFor(sessionId) ?? [],
    onFault(endpointId, fault) {
      if (!vault || !endpointId.startsWith('byok:')) return;
      if (fault.kind !== 'auth' && fault.kind !== 'credit_exhausted') return;
      revokeRefusedKey(vault, refusedBy, logger, endpointId, fault);
    },
    close() {
      vault?.close();
      listeners.clear();
    },
  };
}

/** The key vault `config.byok` asks for, or `undefined` when BYOK is off. */
function createByokVault(deps: ByokWiringDeps): KeyVault | undefined {
  const { config, clock, logger } = deps;
  return config.byok
    ? createKeyVault({
        clock,
        // A user's "2 hours without use" is wall time: a time-scaled scenario must not shorten it.
        ttlClock: wallClockOf(clock),
        logger,
        idleTtlMs: config.byok.idleTtlMs,
        templates: config.byok.templates,
        ...(deps.withToken ? { withToken: deps.withToken } : {}),
        ...(deps.wireOf ? { wireOf: deps.wireOf } : {}),
      })
    : undefined;
}

/** Calls `fn` on every listener; one that throws is logged and the others still hear. */
function notifyListeners(
  listeners: ReadonlySet<SupervisorByokListener>,
  logger: Logger,
  fn: (l: SupervisorByokListener) => void,
): void {
  for (const l of [...listeners]) {
    try {
      fn(l);
    } catch (err) {
      logger.error({ err }, 'byok listener failed');
    }
  }
}

/**
 * An injected key's endpoint joins the pool, an expired one leaves it; each said in the event feed and to the
 * listeners (an expiry with the fault kind when the runtime revoked the key because its provider refused it).
 */
function connectVaultToPool(
  vault: KeyVault,
  deps: ByokWiringDeps,
  refusedBy: Map<string, FaultKind>,
  listeners: ReadonlySet<SupervisorByokListener>,
): void {
  const { clock, logger, emit } = deps;
  const notify = (fn: (l: SupervisorByokListener) => void) => notifyListeners(listeners, logger, fn);
  vault.subscribe({
    onInjected: (r) => {
      const endpointConfig = vault.endpointConfig(r.endpointId);
      if (!endpointConfig) return;
      deps.pool().addEndpoint(endpointConfig, {
        ...deps.endpointOptions,
        // The vault's engine decrypts the key for each call only and refuses once the key is gone.
        createEngine: () => vault.engineFor(r.endpointId)!,
      });
      emit({
        type: 'byok.injected',
        at: clock.now(),
        endpoint: r.endpointId,
        data: { sessionId: r.sessionId, provider: r.provider, masked: r.masked, expiresAt: r.expiresAt },
      });
      notify((l) => l.onInjected?.(r));
      deps.onInjected();
    },
    // Fires before onInjected when a key is replaced, so a same-id endpoint is removed before it is re-added.
    onExpired: (r, reason) => {
      deps.pool().removeEndpoint(r.endpointId);
      const faultKind = refusedBy.get(r.endpointId);
      refusedBy.delete(r.endpointId);
      emit({
        type: 'byok.expired',
        at: clock.now(),
        endpoint: r.endpointId,
        data: {
          sessionId: r.sessionId,
          provider: r.provider,
          masked: r.masked,
          reason,
          ...(faultKind ? { faultKind } : {}),
        },
      });
      notify((l) => l.onExpired?.(r, reason, faultKind));
    },
  });
}

/** The supervisor's `byok` API over `vault` (without one, BYOK is off: `inject` and `revoke` say how to turn it on). */
function byokApi(vault: KeyVault | undefined, listeners: Set<SupervisorByokListener>): SupervisorByok {
  return Object.freeze({
    enabled: vault !== undefined,
    providers: () => vault?.providers() ?? [],
    async inject(sessionId, provider, key, options) {
      if (!vault) throw byokOff('inject a key');
      return vault.inject(sessionId, provider, key, options);
    },
    revoke(sessionId, provider) {
      if (!vault) throw byokOff('revoke a key');
      return vault.revoke(sessionId, provider);
    },
    list: (sessionId) => vault?.list(sessionId) ?? [],
    endSession: (sessionId) => vault?.endSession(sessionId) ?? [],
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  } satisfies SupervisorByok);
}

/** Revokes the live BYOK key of `endpointId` its provider refused (auth, credit), and says so in the log. */
function revokeRefusedKey(
  vault: KeyVault,
  refusedBy: Map<string, FaultKind>,
  logger: Logger,
  endpointId: string,
  fault: Fault,
): void {
  const receipt = vault.list().find((r) => r.endpointId === endpointId);
  if (!receipt) return;
  // Left in the pool, the disabled endpoint would come back HALF-OPEN and its probes would keep a dead
  // key alive (each use slides its TTL): the key goes now, and the user is told why.
  refusedBy.set(endpointId, fault.kind);
  vault.revoke(receipt.sessionId, receipt.provider);
  logger.warn(
    {
      endpoint: endpointId,
      sessionId: receipt.sessionId,
      provider: receipt.provider,
      masked: receipt.masked,
      fault: fault.kind,
      status: fault.status,
    },
    `byok ${receipt.provider} key ${receipt.masked} revoked for session ${receipt.sessionId}: the provider refused it (${fault.kind}${fault.status !== undefined ? ` ${fault.status}` : ''})`,
  );
}
