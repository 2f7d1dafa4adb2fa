/**
 * Plain-data types of the provider emulator: flavors, profile, fault rules and stats.
 */

/**
 * Which provider wire format a listener speaks. Each flavor has its own port.
 *
 * @example
 * ```ts
 * const flavor: EmulatorFlavor = 'ollama';
 * new OpenAI({ apiKey: 'x', baseURL: emu.baseURL(flavor) });
 * ```
 */
export type EmulatorFlavor = 'anthropic' | 'openai' | 'gemini' | 'gemini-compat' | 'vllm' | 'ollama';

/**
 * All flavors, in listener order (`port+1` … `port+6` when a fixed port is given).
 *
 * @example
 * ```ts
 * for (const f of EMULATOR_FLAVORS) console.log(f, emu.baseURL(f));
 * ```
 */
export const EMULATOR_FLAVORS: readonly EmulatorFlavor[] = Object.freeze([
  'anthropic',
  'openai',
  'gemini',
  'gemini-compat',
  'vllm',
  'ollama',
]);

/**
 * What the emulator can be told to do wrong (wire behaviour per provider: `src/emulator/README.md`).
 *
 * @example
 * ```ts
 * const kind: EmulatorFaultKind = 'stall_after_headers';
 * emu.addFault({ kind, match: { flavor: 'openai' }, count: 1 });
 * ```
 */
export type EmulatorFaultKind =
  | 'rate_limit'
  | 'rate_limit_no_retry_after'
  | 'spend_limit'
  | 'overloaded'
  | 'server_busy'
  | 'server_error_empty'
  | 'gateway_timeout'
  | 'html_502'
  | 'connection_reset'
  | 'connection_refused'
  | 'hang_before_headers'
  | 'stall_after_headers'
  | 'bad_key'
  | 'credit_exhausted'
  | 'stream_error'
  | 'stream_cut'
  | 'stream_stall'
  | 'stream_truncated'
  | 'stream_no_usage';

/**
 * All fault kinds the emulator knows.
 *
 * @example
 * ```ts
 * EMULATOR_FAULT_KINDS.includes('overloaded'); // true
 * ```
 */
export const EMULATOR_FAULT_KINDS: readonly EmulatorFaultKind[] = Object.freeze([
  'rate_limit',
  'rate_limit_no_retry_after',
  'spend_limit',
  'overloaded',
  'server_busy',
  'server_error_empty',
  'gateway_timeout',
  'html_502',
  'connection_reset',
  'connection_refused',
  'hang_before_headers',
  'stall_after_headers',
  'bad_key',
  'credit_exhausted',
  'stream_error',
  'stream_cut',
  'stream_stall',
  'stream_truncated',
  'stream_no_usage',
]);

/**
 * One injected fault.
 *
 * @example
 * ```ts
 * const rule: FaultRule = { kind: 'rate_limit', match: { flavor: 'anthropic' }, count: 2, retryAfterMs: 5_000 };
 * ```
 */
export interface FaultRule {
  /** Stable id; generated (`fault-1`, …) when absent. */
  id?: string;
  kind: EmulatorFaultKind;
  /** Which calls it applies to; every field optional (absent = any). `key` is an alias or a plaintext key. */
  match?: { flavor?: EmulatorFlavor; key?: string; model?: string };
  /** Chance to fire on a matching call, 0..1 (default 1), drawn from the seeded RNG. */
  probability?: number;
  /** Active only inside this emulated-time window (ms since the emulator started). */
  window?: { fromMs?: number; toMs?: number };
  /** Fire at most this many times (default: unlimited). */
  count?: number;
  /** Emulated ms the provider tells the client to wait (rate_limit, overloaded). Default 1000. */
  retryAfterMs?: number;
  /** Overrides the provider's error message where the format has one. */
  message?: string;
  /**
   * Mid-stream faults (`stream_error`, `stream_cut`, `stream_stall`): how many content events (text or tool-call
   * deltas) are sent before the fault; 0 = after the stream's preamble, before any content. Default 1
   * (`stream_error`: 3 events, as before this option existed).
   */
  afterChunks?: number;
}

/**
 * Request/token limits of one key+model, per 60 s of emulated time. `null`/absent = unlimited.
 *
 * @example
 * ```ts
 * const limits: QuotaLimits = { rpm: 5, itpm: 30_000, otpm: 8_000 };
 * ```
 */
export interface QuotaLimits {
  /** Requests per minute. */
  rpm?: number | null;
  /** Input + output tokens per minute. */
  tpm?: number | null;
  /** Input tokens per minute (Anthropic ITPM). */
  itpm?: number | null;
  /** Output tokens per minute (Anthropic OTPM). */
  otpm?: number | null;
}

/**
 * One API key the emulator knows.
 *
 * @example
 * ```ts
 * const key: EmulatorKey = { alias: 'primary', key: 'sk-primary-0001', credit: 200_000, quotas: { default: { rpm: 50 } } };
 * ```
 */
export interface EmulatorKey {
  /** Name used in stats instead of the key. */
  alias: string;
  key: string;
  /** Tokens of credit (input+output deducted per call); absent = unlimited. */
  credit?: number | null;
  quotas?: { default?: QuotaLimits; models?: Record<string, QuotaLimits> };
}

/**
 * Knobs of local-server behaviour under load (vLLM queues instead of rejecting; Ollama rejects
 * with 503 "server busy" once its queue is full).
 *
 * @example
 * ```ts
 * const servers: LocalServerOptions = { vllm: { maxNumSeqs: 4 }, ollama: { numParallel: 1, maxQueue: 8 } };
 * ```
 */
export interface LocalServerOptions {
  /** vLLM `max_num_seqs`: requests beyond it wait in an unbounded queue (default: unlimited). */
  vllm?: { maxNumSeqs?: number | null };
  /** Ollama `OLLAMA_NUM_PARALLEL` (default unlimited) and `OLLAMA_MAX_QUEUE` (default 512). */
  ollama?: { numParallel?: number | null; maxQueue?: number };
}

/**
 * An emulator profile, as written in YAML/JSON. Every field is optional.
 *
 * @example
 * ```ts
 * const profile: EmulatorProfile = { seed: 7, keys: [{ alias: 'primary', key: 'sk-primary-0001', credit: 10_000 }] };
 * ```
 */
export interface EmulatorProfile {
  /** Seed of the RNG (answers, latency, fault probability). Default 1. */
  seed?: number;
  /** Emulated ms per real ms. Default 1. */
  timeScale?: number;
  /** Emulated latency per call, uniform in [minMs, maxMs]. Default 0/0. */
  latency?: { minMs?: number; maxMs?: number };
  /** Approximate length of generated answers, in tokens. Default 60. */
  answerTokens?: number;
  /** Characters per streamed text delta (a long answer streams as many chunks). Default: every answer in 3 deltas. */
  streamChunkChars?: number;
  /** Accept keys not listed in `keys`. Default: true when `keys` is empty, else false. */
  acceptAnyKey?: boolean;
  keys?: EmulatorKey[];
  /** Limits for keys without their own `quotas`. Default unlimited. */
  defaultQuotas?: QuotaLimits;
  faults?: FaultRule[];
  /** Local-server (vLLM/Ollama) queueing behaviour. */
  servers?: LocalServerOptions;
}

/**
 * How one call ended: an HTTP status (499 = the client went away while waiting for latency or a
 * local-server queue), or what happened to the connection.
 *
 * @example
 * ```ts
 * const dropped = emu.stats().calls.filter((c) => c.status === 'reset').length;
 * ```
 */
export type CallStatus = number | 'reset' | 'refused' | 'hang' | 'stall';

/**
 * One call the emulator saw. Keys appear only as alias or keyed fingerprint.
 *
 * @example
 * ```ts
 * const attempts = emu.stats().calls.filter((c: CallRecord) => c.idempotencyKey === 'turn-7-call-1').length;
 * ```
 */
export interface CallRecord {
  seq: number;
  flavor: EmulatorFlavor;
  /** Alias, or the keyed fingerprint of the key (`keyFingerprint`), or `none`. */
  key: string;
  model: string;
  status: CallStatus;
  fault?: EmulatorFaultKind;
  /** Clock ms. */
  startedAt: number;
  endedAt: number;
  /** Requests in flight (all flavors) when this one arrived, itself included. */
  inFlightAtStart: number;
  idempotencyKey?: string;
  /** The SDK's `X-Stainless-Retry-Count` (0 on a first attempt), when it sent one. */
  sdkRetryCount?: number;
  inputTokens: number;
  outputTokens: number;
  stream: boolean;
}

/**
 * Counters since start or the last `reset()`.
 *
 * @example
 * ```ts
 * const s: EmulatorStats = emu.stats();
 * expect(s.maxInFlight).toBeLessThanOrEqual(3);
 * expect(s.byStatus['429']).toBe(1);
 * ```
 */
export interface EmulatorStats {
  totalCalls: number;
  /** The last 100 000 calls, oldest first. */
  calls: CallRecord[];
  byKey: Record<string, number>;
  byModel: Record<string, number>;
  /** By status as a string: `"200"`, `"429"`, `"reset"`, … */
  byStatus: Record<string, number>;
  byFlavor: Record<string, number>;
  /** The most requests in flight at once, across all flavors. */
  maxInFlight: number;
  /** Requests in flight now (arrived, not yet answered, failed or dropped). */
  inFlight: number;
  /** Of those, requests held by a `hang_before_headers` or `stall_after_headers` fault right now (a stall's headers are already written). */
  held: number;
}
