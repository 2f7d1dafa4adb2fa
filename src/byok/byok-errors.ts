import type { Fault, FaultKind } from '../core/fault.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { ProviderName } from './byok-types.ts';

/** What the user should do next, by why the check call failed. */
function advice(kind: FaultKind): string {
  switch (kind) {
    case 'auth':
      return 'Check the key and try again.';
    case 'credit_exhausted':
      return 'The key has no credit or quota left; top it up or use another key.';
    case 'bad_request':
      return 'The provider refused the check call; make sure the key may use the configured model.';
    case 'cancelled':
      return 'The check was cancelled; send the key again.';
    default:
      return 'The key could not be checked right now; try again in a moment.';
  }
}

/**
 * A key the vault refused: its check call (one tiny probe through a real engine) failed. The key was
 * discarded. The message is ONE line naming the provider, the masked key and the classified fault
 * kind, e.g. `openai key sk-…a1b2 refused: auth (401). Check the key and try again.`
 *
 * @example
 * ```ts
 * try { await vault.inject(session, provider, key); }
 * catch (e) { if (isByokRejectedError(e)) console.error(e.message); else throw e; }
 * ```
 */
export class ByokRejectedError extends Error {
  readonly code = 'BYOK_REJECTED' as const;
  /** The provider name as the templates spell it (lowercased). */
  readonly provider: ProviderName;
  /** The masked key (`sk-…a1b2`). */
  readonly masked: string;
  /** The classified kind of the check call's failure. */
  readonly kind: FaultKind;
  /** HTTP status of the check call, when there was a response. */
  readonly status?: number;
  /** The classified fault, plain data, its message scrubbed. */
  readonly fault: Fault;
  constructor(opts: { provider: ProviderName; masked: string; fault: Fault }) {
    const { provider, masked, fault } = opts;
    const status = fault.status !== undefined ? ` (${fault.status})` : '';
    super(`${provider} key ${masked} refused: ${fault.kind}${status}. ${advice(fault.kind)}`);
    this.name = 'ByokRejectedError';
    this.provider = provider;
    this.masked = masked;
    this.kind = fault.kind;
    if (fault.status !== undefined) this.status = fault.status;
    this.fault = Object.freeze({ ...fault, message: scrubSecrets(fault.message).replace(/\s+/g, ' ') });
  }
}

/**
 * Type guard for {@link ByokRejectedError}.
 *
 * @example
 * ```ts
 * if (isByokRejectedError(e) && e.kind === 'auth') prompt('That key was refused; paste it again.');
 * ```
 */
export function isByokRejectedError(e: unknown): e is ByokRejectedError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'BYOK_REJECTED';
}

/**
 * The vault was closed (`close()`): it takes no keys and serves no calls any more.
 *
 * @example
 * ```ts
 * vault.close();
 * await vault.inject('s1', 'openai', key); // throws ByokVaultClosedError
 * ```
 */
export class ByokVaultClosedError extends Error {
  readonly code = 'BYOK_VAULT_CLOSED' as const;
  constructor() {
    super('the BYOK key vault is closed; keys can no longer be injected');
    this.name = 'ByokVaultClosedError';
  }
}

/**
 * Type guard for {@link ByokVaultClosedError}.
 *
 * @example
 * ```ts
 * if (isByokVaultClosedError(e)) return; // shutting down
 * ```
 */
export function isByokVaultClosedError(e: unknown): e is ByokVaultClosedError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'BYOK_VAULT_CLOSED';
}
