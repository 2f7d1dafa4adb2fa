import type { QuotaLimits } from './emulator-types.ts';

/** The four quota dimensions. */
export type QuotaDimension = 'rpm' | 'tpm' | 'itpm' | 'otpm';

/** One admitted call, as counted in its key+model window. */
interface WindowEntry {
  at: number;
  input: number;
  output: number;
}

/** Why a call was refused. All times are emulated ms. */
export interface QuotaRejection {
  ok: false;
  dimension: QuotaDimension;
  limit: number;
  used: number;
  requested: number;
  /**
   * The call asks for more than the whole limit: no wait makes it fit (OpenAI's "Request too large"). Its
   * `retryAfterMs` is then the window: a provider that names a wait names nothing shorter.
   */
  tooLarge: boolean;
  /** Until enough counted entries leave the window for this call to fit. */
  retryAfterMs: number;
}

/** A call admitted into the window; output tokens are added to it after generation. */
export interface QuotaAdmission {
  ok: true;
  entry: WindowEntry;
}

/** The live state of one dimension (what the rate-limit headers report). */
export interface DimensionState {
  limit: number | null;
  used: number;
  remaining: number | null;
  /** Emulated ms until the window is empty again (full replenishment). */
  resetInMs: number;
}

export type QuotaSnapshot = Record<QuotaDimension, DimensionState>;

const DIMENSIONS: readonly QuotaDimension[] = ['rpm', 'tpm', 'itpm', 'otpm'];

const weight = (d: QuotaDimension, e: WindowEntry): number =>
  d === 'rpm' ? 1 : d === 'tpm' ? e.input + e.output : d === 'itpm' ? e.input : e.output;

/**
 * Sliding 60 s (emulated) windows per key+model. RPM counts requests; TPM/ITPM count input tokens
 * at admission; OTPM/TPM also count output tokens once the answer is generated.
 */
export class QuotaWindows {
  readonly #windowMs: number;
  readonly #windows = new Map<string, WindowEntry[]>();

  constructor(windowMs = 60_000) {
    this.#windowMs = windowMs;
  }

  #live(bucket: string, now: number): WindowEntry[] {
    const all = this.#windows.get(bucket) ?? [];
    const live = all.filter((e) => e.at + this.#windowMs > now);
    this.#windows.set(bucket, live);
    return live;
  }

  /** Admits the call (and counts it) or tells why not and for how long. */
  admit(
    bucket: string,
    limits: QuotaLimits,
    inputTokens: number,
    now: number,
  ): QuotaAdmission | QuotaRejection {
    const live = this.#live(bucket, now);
    const probe: WindowEntry = { at: now, input: inputTokens, output: 0 };
    for (const d of DIMENSIONS) {
      const lim = limits[d];
      if (lim === null || lim === undefined) continue;
      const used = live.reduce((s, e) => s + weight(d, e), 0);
      const requested = d === 'otpm' ? 0 : weight(d, probe);
      // OTPM cannot know the output yet: refuse only once the window is already full.
      const fits = d === 'otpm' ? used < lim : used + requested <= lim;
      if (fits) continue;
      if (d !== 'otpm' && requested > lim)
        return {
          ok: false,
          dimension: d,
          limit: lim,
          used,
          requested,
          tooLarge: true,
          retryAfterMs: this.#windowMs,
        };
      let freed = 0;
      let wait = live[0] ? live[0].at + this.#windowMs - now : 0;
      for (const e of live) {
        freed += weight(d, e);
        const after = used - freed;
        if (d === 'otpm' ? after < lim : after + requested <= lim) {
          wait = e.at + this.#windowMs - now;
          break;
        }
      }
      return {
        ok: false,
        dimension: d,
        limit: lim,
        used,
        requested,
        tooLarge: false,
        retryAfterMs: Math.max(0, wait),
      };
    }
    live.push(probe);
    return { ok: true, entry: probe };
  }

  /** Adds generated output tokens to an admitted call. */
  recordOutput(admission: QuotaAdmission, outputTokens: number): void {
    admission.entry.output += outputTokens;
  }

  /** Current state of every dimension of a key+model. */
  snapshot(bucket: string, limits: QuotaLimits, now: number): QuotaSnapshot {
    const live = this.#live(bucket, now);
    const newest = live[live.length - 1];
    const resetInMs = newest ? Math.max(0, newest.at + this.#windowMs - now) : 0;
    const out = {} as QuotaSnapshot;
    for (const d of DIMENSIONS) {
      const lim = limits[d] ?? null;
      const used = live.reduce((s, e) => s + weight(d, e), 0);
      out[d] = { limit: lim, used, remaining: lim === null ? null : Math.max(0, lim - used), resetInMs };
    }
    return out;
  }

  clear(): void {
    this.#windows.clear();
  }
}
