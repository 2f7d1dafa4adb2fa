import type { Logger } from 'pino';
import type { Clock } from '../clock/clock.ts';
import type { EngineRequest, EngineResult } from '../core/engine-types.ts';
import type { ByokExpiryReason, ByokListener, ByokReceipt } from './byok-types.ts';
import { expiredFault, expiresAt, logFields, receiptOf, type VaultEntry } from './key-vault-entry.ts';

/**
 * The key vault's entries: the live ones by endpoint id, the ones still being checked, the listeners told of
 * injections and expiries, and the one way an entry goes (`end`, which wipes its credential).
 */
export interface VaultEntries {
  readonly live: Map<string, VaultEntry>;
  readonly checking: Set<VaultEntry>;
  readonly listeners: Set<ByokListener>;
  /** Calls `fn` on every listener; one that throws is logged and the others still hear. */
  emit(fn: (l: ByokListener) => void): void;
  /** Wipes an entry. Idempotent; tells listeners only about keys that had been live. */
  end(entry: VaultEntry, reason: ByokExpiryReason): void;
  /** Starts a live entry's idle timer. */
  arm(entry: VaultEntry): void;
  /** Expires keys whose deadline passed even if their timer has not fired yet (a late host timer). */
  sweep(): void;
  /** The live entry of an endpoint, expired first if its deadline passed; else undefined. */
  liveEntry(endpointId: string): VaultEntry | undefined;
  /** A call through an entry's provider engine: refused once the key is gone, sliding the TTL on use. */
  callLive(entry: VaultEntry, request: EngineRequest): Promise<EngineResult>;
  /** A session's entries (for one template name, or all), live ones first, then those being checked. */
  ofSession(sessionId: string, name?: string): VaultEntry[];
  /** Ends every entry; returns the receipts of those that were live. */
  removeAll(entries: VaultEntry[], reason: ByokExpiryReason): ByokReceipt[];
}

/** The key vault's entries, their idle TTL on `ttlClock` (wall time). */
export function createVaultEntries(ttlClock: Clock, logger: Logger | undefined): VaultEntries {
  const live = new Map<string, VaultEntry>();
  const checking = new Set<VaultEntry>();
  const listeners = new Set<ByokListener>();

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
  const end = (entry: VaultEntry, reason: ByokExpiryReason): void => {
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
  const arm = (entry: VaultEntry): void => {
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

  const liveEntry = (endpointId: string): VaultEntry | undefined => {
    const entry = live.get(endpointId);
    if (!entry) return undefined;
    if (ttlClock.now() >= expiresAt(entry)) {
      end(entry, 'idle');
      return undefined;
    }
    return entry;
  };

  const callLive = async (entry: VaultEntry, request: EngineRequest): Promise<EngineResult> => {
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

  const ofSession = (sessionId: string, name?: string): VaultEntry[] => [
    ...[...live.values()].filter(
      (e) => e.sessionId === sessionId && (name === undefined || e.template.name === name),
    ),
    ...[...checking].filter(
      (e) => e.sessionId === sessionId && (name === undefined || e.template.name === name),
    ),
  ];

  const removeAll = (entries: VaultEntry[], reason: ByokExpiryReason): ByokReceipt[] => {
    const out: ByokReceipt[] = [];
    for (const entry of entries) {
      if (entry.state === 'live') out.push(receiptOf(entry));
      end(entry, reason);
    }
    return out;
  };

  return { live, checking, listeners, emit, end, arm, sweep, liveEntry, callLive, ofSession, removeAll };
}
