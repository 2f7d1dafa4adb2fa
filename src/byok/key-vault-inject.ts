import type { EngineWireOptions } from '../engines/create-engine.ts';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../clock/clock.ts';
import { type CallCredential, createCallCredential, fingerprintOf } from '../engines/call-credential.ts';
import {
  describeEndpoint,
  type EndpointConfig,
  type ParsedEndpointConfig,
} from '../engines/endpoint-config.ts';
import type { EngineRequest } from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';
import { ByokRejectedError, ByokVaultClosedError } from './byok-errors.ts';
import { checkByokKey, checkSessionId, keyFormatOf, maskKeyBytes, positiveMs } from './byok-input.ts';
import { buildByokEngine, type ResolvedByokTemplate } from './byok-template.ts';
import type { ByokReceipt, ProviderName } from './byok-types.ts';
import type { KeySealer } from '../redact/sealed-key.ts';
import { faultOf, logFields, receiptOf, type VaultEntry } from './key-vault-entry.ts';
import type { VaultEntries } from './key-vault-entries.ts';

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

/** What an injection needs of its vault, every option resolved. */
export interface InjectParts {
  /** Time source of every call's deadlines. */
  readonly clock: Clock;
  /** Time source of the idle TTL (wall time). */
  readonly ttlClock: Clock;
  readonly idleTtlMs: number;
  readonly validate: boolean;
  readonly sealer: KeySealer;
  readonly entries: VaultEntries;
  readonly logger: Logger | undefined;
  readonly wireOf: (templateName: string) => EngineWireOptions;
  readonly withToken: <T>(
    label: string,
    run: (signal: AbortSignal | undefined) => Promise<T>,
    signal?: AbortSignal,
  ) => Promise<T>;
  readonly templateOf: (providerName: unknown) => ResolvedByokTemplate;
  readonly isClosed: () => boolean;
}

/**
 * The entry of a key checked for its template's format, sealed, with its engines built (state `checking`). The
 * key's bytes live in this call only: a string the vault copied is wiped before it returns.
 */
function sealEntry(
  parts: InjectParts,
  sessionId: string,
  template: ResolvedByokTemplate,
  ttlMs: number,
  keyIn: string | Uint8Array,
): VaultEntry {
  const format = keyFormatOf(template.endpoint.provider, template.endpoint.flavor);
  const { bytes, copied } = checkByokKey(keyIn, format);
  let credential: CallCredential | undefined;
  try {
    const fingerprint = fingerprintOf(bytes);
    const endpointId = `byok:${sessionId}:${template.name}:${fingerprint}`;
    credential = createCallCredential(bytes, { sealer: parts.sealer, aad: endpointId });
    const descriptor = Object.freeze({
      ...describeEndpoint({ id: endpointId, ...template.endpoint } as EndpointConfig),
      keyFingerprint: fingerprint,
    });
    const config = { id: endpointId, ...template.endpoint } as ParsedEndpointConfig;
    const entry: VaultEntry = {
      sessionId,
      template,
      endpointId,
      descriptor,
      masked: maskKeyBytes(bytes),
      ttlMs,
      credential,
      provider: buildByokEngine(config, descriptor, parts.clock, credential, parts.wireOf(template.name)),
      engine: Object.freeze({
        endpoint: descriptor,
        call: (r: EngineRequest) => parts.entries.callLive(entry, r),
      }),
      state: 'checking',
      lastUsedAt: parts.ttlClock.now(),
      timer: undefined,
    };
    return entry;
  } catch (e) {
    // Sealed but never kept (its engine was refused, e.g. a bad wireScale): wiped now, not left to the GC.
    credential?.dispose();
    throw e;
  } finally {
    // A string the vault copied is wiped here; bytes handed in stay the caller's to wipe.
    if (copied) bytes.fill(0);
  }
}

/** Ends a refused entry and throws its `ByokRejectedError` (masked key, classified fault). */
function refuse(parts: InjectParts, entry: VaultEntry, fault: Fault): never {
  const err = new ByokRejectedError({ provider: entry.template.name, masked: entry.masked, fault });
  parts.entries.end(entry, 'revoked');
  parts.logger?.warn(
    { ...logFields(entry), faultKind: fault.kind, status: fault.status },
    'byok key refused',
  );
  throw err;
}

/** The fault of a key removed (revoked, session ended, replaced) while its check call was out. */
const removedWhileChecked = (entry: VaultEntry): Fault => ({
  kind: 'cancelled',
  provider: entry.template.endpoint.provider,
  message: 'the key was removed while it was being checked',
  endpointId: entry.endpointId,
});

/** One tiny probe call (max 1 output token) with the key, holding a token; a refusal ends the entry and throws. */
async function checkKey(parts: InjectParts, entry: VaultEntry, injectSignal: AbortSignal | undefined) {
  const { endpointId } = entry;
  try {
    const check = (tokenSignal: AbortSignal | undefined) => {
      const signals = [injectSignal, tokenSignal].filter((x): x is AbortSignal => x !== undefined);
      const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
      return entry.provider.call({
        messages: [{ role: 'user', content: 'ping' }],
        maxTokens: 1,
        idempotencyKey: `byok-check:${endpointId}:${randomUUID()}`,
        ...(signal ? { signal } : {}),
      });
    };
    await parts.withToken(`byok-check:${endpointId}`, check, injectSignal);
  } catch (err) {
    if (entry.state === 'gone') refuse(parts, entry, removedWhileChecked(entry));
    refuse(parts, entry, faultOf(err, entry));
  }
}

/** {@link KeyVault.inject}: format check, seal, probe call, then the key replaces the session's other one. */
export async function injectKey(
  parts: InjectParts,
  sessionIdIn: string,
  providerName: ProviderName,
  keyIn: string | Uint8Array,
  injectOptions: InjectOptions = {},
): Promise<ByokReceipt> {
  if (parts.isClosed()) throw new ByokVaultClosedError();
  const sessionId = checkSessionId(sessionIdIn);
  const template = parts.templateOf(providerName);
  const ttlMs = positiveMs(injectOptions.ttlMs ?? parts.idleTtlMs, 'ttlMs');
  const entry = sealEntry(parts, sessionId, template, ttlMs, keyIn);
  const { endpointId } = entry;
  const { entries } = parts;
  entries.checking.add(entry);

  if (parts.validate) await checkKey(parts, entry, injectOptions.signal);
  if (parts.isClosed()) {
    entries.end(entry, 'closed');
    throw new ByokVaultClosedError();
  }
  if (entry.state === 'gone') refuse(parts, entry, removedWhileChecked(entry));
  for (const other of entries.ofSession(sessionId, template.name))
    if (other !== entry) entries.end(other, 'replaced');
  entries.checking.delete(entry);
  entry.state = 'live';
  entry.lastUsedAt = parts.ttlClock.now();
  entries.live.set(endpointId, entry);
  entries.arm(entry);
  const receipt = receiptOf(entry);
  parts.logger?.info({ ...logFields(entry), expiresAt: receipt.expiresAt }, 'byok key injected');
  entries.emit((l) => l.onInjected?.(receipt));
  return receipt;
}
