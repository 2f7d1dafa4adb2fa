import type pino from 'pino';
import type { Clock } from '../clock/clock.ts';
import { keyedFingerprint } from '../redact/key-fingerprint.ts';
import { anthropicWire } from './anthropic-wire.ts';
import { CreditLedger } from './credit-ledger.ts';
import { createEmulatedTime, type EmulatedTime } from './emulated-time.ts';
import type { ResolvedProfile } from './emulator-profile.ts';
import { EmulatorStatsCollector } from './emulator-stats.ts';
import type { EmulatorFlavor, EmulatorKey, QuotaLimits } from './emulator-types.ts';
import { FaultRules } from './fault-rules.ts';
import { geminiWire } from './gemini-wire.ts';
import { LocalServerQueue } from './local-server-queue.ts';
import { openaiWire } from './openai-wire.ts';
import { QuotaWindows } from './quota-windows.ts';
import { createSeededRandom, type SeededRandom } from '../core/seeded-random.ts';
import type { WireModule } from './wire-module.ts';

/**
 * The keyed fingerprint of a key (HMAC under a secret of this process; see `keyedFingerprint`): how
 * unlisted keys appear in stats. Another process cannot compute it: name a key by alias or plaintext there.
 *
 * @example
 * ```ts
 * emu.stats().byKey[keyFingerprint('sk-some-unlisted-key')]; // calls made with that key
 * ```
 */
export function keyFingerprint(key: string): string {
  return keyedFingerprint(key);
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Everything the request handlers share: profile, time, RNGs, windows, ledger, rules, stats. */
export class EmulatorCore {
  readonly profile: ResolvedProfile;
  readonly clock: Clock;
  readonly time: EmulatedTime;
  readonly rng: SeededRandom;
  readonly #idRng: SeededRandom;
  readonly quotas = new QuotaWindows();
  readonly credit = new CreditLedger();
  readonly faults: FaultRules;
  readonly stats = new EmulatorStatsCollector();
  readonly logger: pino.Logger | undefined;
  readonly wires: Record<EmulatorFlavor, WireModule>;
  readonly queues: Partial<Record<EmulatorFlavor, LocalServerQueue>>;
  readonly #keysByPlain = new Map<string, EmulatorKey>();
  readonly #keysByAlias = new Map<string, EmulatorKey>();
  /** Aborts every pending wait when the emulator closes. */
  readonly closing = new AbortController();

  /** Wall-clock epoch ms: what the reset instants on the wire are stamped with. */
  readonly wallNow: () => number;

  constructor(
    profile: ResolvedProfile,
    clock: Clock,
    logger?: pino.Logger,
    wallNow: () => number = Date.now,
  ) {
    this.profile = profile;
    this.clock = clock;
    this.wallNow = wallNow;
    this.logger = logger;
    this.time = createEmulatedTime(clock, profile.timeScale);
    this.rng = createSeededRandom(profile.seed);
    this.#idRng = createSeededRandom(profile.seed ^ 0x5bd1e995);
    this.faults = new FaultRules(this.rng);
    for (const k of profile.keys) {
      this.#keysByPlain.set(k.key, k);
      this.#keysByAlias.set(k.alias, k);
      if (k.credit !== undefined) this.credit.set(k.alias, k.credit);
    }
    for (const f of profile.faults) this.faults.add(f);
    this.wires = {
      anthropic: anthropicWire,
      openai: openaiWire('openai'),
      gemini: geminiWire,
      'gemini-compat': openaiWire('gemini-compat'),
      vllm: openaiWire('vllm'),
      ollama: openaiWire('ollama'),
    };
    this.queues = {
      vllm: new LocalServerQueue(profile.servers.vllmMaxNumSeqs, null),
      ollama: new LocalServerQueue(profile.servers.ollamaNumParallel, profile.servers.ollamaMaxQueue),
    };
  }

  /** A seeded id: `prefix` + `length` base62 chars. */
  id(prefix: string, length: number): string {
    let out = prefix;
    for (let i = 0; i < length; i++) out += BASE62[this.#idRng.int(0, 61)];
    return out;
  }

  /** The listed key for a plaintext key, if any. */
  knownKey(plain: string | undefined): EmulatorKey | undefined {
    return plain === undefined ? undefined : this.#keysByPlain.get(plain);
  }

  /** Alias for listed keys, fingerprint for others, `none` without a key. Never the plaintext. */
  identity(plain: string | undefined): string {
    if (plain === undefined || plain === '') return 'none';
    return this.#keysByPlain.get(plain)?.alias ?? keyFingerprint(plain);
  }

  /** Resolves what `setCredit`/fault matching receive (alias, plaintext key or fingerprint) to an identity. */
  resolveIdentity(keyOrAlias: string): string {
    if (this.#keysByAlias.has(keyOrAlias)) return keyOrAlias;
    if (/^[0-9a-f]{8}$/.test(keyOrAlias)) return keyOrAlias;
    return this.identity(keyOrAlias);
  }

  /** The quota limits of a key (by plaintext) and model. */
  limitsFor(plain: string | undefined, model: string): QuotaLimits {
    const quotas = this.knownKey(plain)?.quotas;
    return quotas?.models?.[model] ?? quotas?.default ?? this.profile.defaultQuotas;
  }

  /** Uniform seeded latency of one call, in emulated ms. */
  drawLatency(): number {
    const { minMs, maxMs } = this.profile.latency;
    if (maxMs <= 0) return 0;
    return minMs + this.rng.next() * (maxMs - minMs);
  }

  dispose(): void {
    this.closing.abort(new Error('emulator closed'));
  }
}
