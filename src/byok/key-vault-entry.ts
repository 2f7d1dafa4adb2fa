import type { CallCredential } from '../engines/call-credential.ts';
import type { EndpointDescriptor, Engine } from '../core/engine-types.ts';
import { EngineFaultError, type Fault, isEngineFaultError } from '../core/fault.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { ResolvedByokTemplate } from './byok-template.ts';
import type { ByokExpiryReason, ByokReceipt } from './byok-types.ts';
import { formatDuration } from '../clock/format-time.ts';

/**
 * One injected key as the key vault keeps it, and what is said about it: its receipt, its log fields, the fault of
 * a call after it went. Everything here is built from fields that cannot hold the key (endpoint id, fingerprint,
 * masked form): the key itself lives only in the sealed credential.
 */
export interface VaultEntry {
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

/** When an entry's key expires unless it is used first (sliding idle TTL). */
export const expiresAt = (entry: VaultEntry) => entry.lastUsedAt + entry.ttlMs;

/** An entry's receipt, masked. */
export const receiptOf = (entry: VaultEntry): ByokReceipt =>
  Object.freeze({
    sessionId: entry.sessionId,
    provider: entry.template.name,
    masked: entry.masked,
    endpointId: entry.endpointId,
    expiresAt: expiresAt(entry),
  });

/** What a log line says about an entry: ids, fingerprint, masked form. */
export const logFields = (entry: VaultEntry) => ({
  sessionId: entry.sessionId,
  provider: entry.template.name,
  endpointId: entry.endpointId,
  keyFingerprint: entry.descriptor.keyFingerprint,
  masked: entry.masked,
});

/** The fault of a call on an entry whose key is gone: nothing was sent. */
export const expiredFault = (entry: VaultEntry): EngineFaultError =>
  new EngineFaultError({
    kind: 'auth',
    provider: entry.template.endpoint.provider,
    code: 'byok_expired',
    message: `BYOK ${entry.template.name} key ${entry.masked} expired ${expiryText(entry.goneReason, entry.ttlMs)}; nothing was sent. Inject it again with /byok ${entry.template.name} KEY`,
    endpointId: entry.endpointId,
  });

/** The classified fault of a failed check call, its message scrubbed when it is not one already. */
export const faultOf = (err: unknown, entry: VaultEntry): Fault => {
  if (isEngineFaultError(err)) return err.fault;
  return {
    kind: 'bad_request',
    provider: entry.template.endpoint.provider,
    message: scrubSecrets(err instanceof Error ? err.message : String(err)),
    endpointId: entry.endpointId,
  };
};
