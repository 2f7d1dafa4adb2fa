import type { CompatFlavor, ProviderKind } from '../core/engine-types.ts';

/**
 * A provider name as the user types it after `/byok` (`anthropic`, `openai`, `gemini`, or any name
 * the runtime's templates define). Matched case-insensitively; stored lowercased.
 *
 * @example
 * ```ts
 * const name: ProviderName = 'openai';
 * ```
 */
export type ProviderName = string;

/**
 * How a user's key for one provider becomes an engine endpoint. The key is the only thing the user
 * brings; everything else comes from here.
 *
 * @example
 * ```ts
 * const templates: Record<ProviderName, ByokTemplate> = {
 *   anthropic: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
 *   openai: { provider: 'openai', model: 'gpt-4o-mini' },
 *   gemini: { provider: 'gemini', model: 'gemini-2.5-flash' },
 * };
 * ```
 */
export interface ByokTemplate {
  /** Wire protocol of the endpoint. Required. */
  readonly provider: ProviderKind;
  /** Only for `openai-compatible`: the server behind the base URL. Default: `generic`. */
  readonly flavor?: CompatFlavor;
  /** Model name sent upstream. Required. */
  readonly model: string;
  /** Base URL as the SDK takes it. Default: the provider's public API (see `EndpointConfig.baseURL`). */
  readonly baseURL?: string;
  /** Deadline for the response headers of one call, in ms. Default: 60 000. */
  readonly headersTimeoutMs?: number;
  /** Body idle deadline once headers arrived, in ms. Default: 30 000. */
  readonly idleTimeoutMs?: number;
  /**
   * Where the supervisor puts the endpoint in an agent's chain. `before-degraded` (the default and
   * only value): after every configured endpoint, before the degraded layer.
   */
  readonly chainPosition?: 'before-degraded';
}

/**
 * What `inject` returns and `list` reports: plain data, masked, safe to log, print and persist.
 *
 * @example
 * ```ts
 * // { sessionId: 'tty-1', provider: 'openai', masked: 'sk-…a1b2',
 * //   endpointId: 'byok:tty-1:openai:5f1a6c0e', expiresAt: 1760000000000 }
 * console.log(`${receipt.provider} key ${receipt.masked} active until ${new Date(receipt.expiresAt).toISOString()}`);
 * ```
 */
export interface ByokReceipt {
  readonly sessionId: string;
  /** The provider name, lowercased, as the templates spell it. */
  readonly provider: ProviderName;
  /** Provider prefix, an ellipsis and the last 4 characters (`sk-…a1b2`). */
  readonly masked: string;
  /** Id of the session-bound endpoint (`byok:<session>:<provider>:<key fingerprint>`). */
  readonly endpointId: string;
  /** When the key expires if it is not used before (clock ms); it slides on every use. */
  readonly expiresAt: number;
}

/**
 * Why a key left the vault.
 * - `idle`: not used for its idle TTL.
 * - `revoked`: `revoke()` removed it.
 * - `session-ended`: `endSession()` for its session.
 * - `replaced`: the same session injected another key for the same provider.
 * - `closed`: the vault was closed.
 *
 * @example
 * ```ts
 * vault.subscribe({ onExpired: (r, why) => why === 'idle' && notify(r.sessionId, `${r.provider} key expired`) });
 * ```
 */
export type ByokExpiryReason = 'idle' | 'revoked' | 'session-ended' | 'replaced' | 'closed';

/**
 * Receives the vault's lifecycle events. Listeners run synchronously; one that throws does not stop
 * the others, and never keeps a key alive (the key is wiped before listeners are told).
 *
 * @example
 * ```ts
 * const unsubscribe = vault.subscribe({
 *   onInjected: (r) => pool.addEndpoint(vault.endpointConfig(r.endpointId)!, { createEngine: () => vault.engineFor(r.endpointId)! }),
 *   onExpired: (r) => pool.removeEndpoint(r.endpointId),
 * });
 * ```
 */
export interface ByokListener {
  /** A key was validated and is now usable by its session. */
  readonly onInjected?: (receipt: ByokReceipt) => void;
  /** A key is gone (wiped) and its endpoint must be removed; `receipt.expiresAt` is its last deadline. */
  readonly onExpired?: (receipt: ByokReceipt, reason: ByokExpiryReason) => void;
}
