import { createHash } from 'node:crypto';
import { ConfigError } from '../core/errors/config-error.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';

/** Options of an {@link AnswerCache}. */
export interface AnswerCacheOptions {
  /** Answers kept per agent; the least recently used goes first. Default 500. */
  readonly maxPerAgent?: number;
  /** A similar (non-exact) prompt must reach this similarity (0–1) to count. Default 0.3. */
  readonly minSimilarity?: number;
}

/** One remembered answer. Plain data. */
export interface CachedAnswer {
  readonly prompt: string;
  readonly answer: string;
  /** When it was remembered (epoch ms), when the caller said. */
  readonly at?: number;
}

/** A lookup result. */
export interface CacheHit extends CachedAnswer {
  /** 1 for an exact hit; else the token-set cosine similarity of the two prompts. */
  readonly similarity: number;
  readonly exact: boolean;
}

/** The persisted form of a cache: per agent, entries from least to most recently used. */
export interface AnswerCacheData {
  readonly version: 1;
  readonly agents: Readonly<Record<string, readonly CachedAnswer[]>>;
}

interface Entry extends CachedAnswer {
  /** The prompt's token set, computed on the first similarity lookup (most entries are never looked up). */
  tokens?: ReadonlySet<string>;
}

const SOURCE = 'AnswerCache.import';

/**
 * Lower-cased, NFKC-normalized words (letters and digits of any script), as a set.
 *
 * @example
 * ```ts
 * promptTokens('Rates, FX and rates!'); // Set { 'rates', 'fx', 'and' }
 * ```
 */
export function promptTokens(text: string): Set<string> {
  return new Set(
    nfkc(text)
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [],
  );
}

/** NFKC, skipped for printable ASCII (which it never changes): most prompts, and normalize() is slow. */
function nfkc(text: string): string {
  return /^[ -~\t\n\r]*$/.test(text) ? text : text.normalize('NFKC');
}

/**
 * Cosine similarity of two token sets: |A ∩ B| / √(|A|·|B|), 0 when either is empty.
 *
 * @example
 * ```ts
 * tokenSetCosine(promptTokens('rates outlook today'), promptTokens('rates outlook')); // ≈ 0.82
 * ```
 */
export function tokenSetCosine(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let shared = 0;
  for (const t of small) if (large.has(t)) shared++;
  return shared / Math.sqrt(a.size * b.size);
}

/** Whether an answer is worth keeping: an empty prompt or answer is never filed. */
function storable(prompt: string, answer: string): boolean {
  return answer.trim() !== '' && prompt.trim() !== '';
}

/**
 * The exact-hit key: case, width and whitespace differences do not make a prompt different. A digest of the
 * normalized prompt, not the prompt itself: a key per remembered answer held a lower-cased copy of every prompt
 * (an agent's 500 prompts of 10 KB each held 5 MB more than the prompts).
 */
function exactKey(prompt: string): string {
  return createHash('sha256').update(nfkc(prompt).toLowerCase().replace(/\s+/g, ' ').trim()).digest('base64');
}

/**
 * Per agent, the earlier GOOD answers keyed by prompt, for the degraded layer: an exact hit, else the
 * most similar earlier prompt of the same agent (never another agent's). Bounded per agent (LRU).
 * Prompts and answers are scrubbed of secrets when remembered, since the cache is persisted.
 *
 * @example
 * ```ts
 * const cache = new AnswerCache();
 * cache.remember('Kai', 'Summarize the FX desk risks', 'USD/KRW above 1400: hedge ratio to 60 %.');
 * cache.lookup('Kai', 'summarize FX desk risks for today'); // { similarity: 0.77…, exact: false, answer: 'USD/KRW…' }
 * const saved = cache.export(); // plain JSON for the store
 * ```
 */
export class AnswerCache {
  readonly maxPerAgent: number;
  readonly minSimilarity: number;
  /** Per agent, insertion order = recency (oldest first). */
  readonly #agents = new Map<string, Map<string, Entry>>();
  /** Answers remembered but not filed yet, per agent, oldest first. */
  readonly #pending = new Map<string, CachedAnswer[]>();

  constructor(options: AnswerCacheOptions = {}) {
    const { maxPerAgent = 500, minSimilarity = 0.3 } = options;
    if (!(Number.isInteger(maxPerAgent) && maxPerAgent >= 1)) {
      throw new ConfigError({
        source: 'AnswerCache',
        path: 'maxPerAgent',
        message: `is ${maxPerAgent}; set an integer ≥ 1`,
      });
    }
    if (!(minSimilarity > 0 && minSimilarity <= 1)) {
      throw new ConfigError({
        source: 'AnswerCache',
        path: 'minSimilarity',
        message: `is ${minSimilarity}; set a number in (0, 1]`,
      });
    }
    this.maxPerAgent = maxPerAgent;
    this.minSimilarity = minSimilarity;
  }

  /**
   * Remembers a good answer of `agent` to `prompt` (replacing an earlier answer to the same prompt). Cheap on the
   * call path: the answer is filed (scrubbed, keyed) when the cache is next read, or once `maxPerAgent` wait.
   */
  remember(agent: string, prompt: string, answer: string, at?: number): void {
    let pending = this.#pending.get(agent);
    if (!pending) {
      pending = [];
      this.#pending.set(agent, pending);
    }
    pending.push({ prompt, answer, ...(at !== undefined ? { at } : {}) });
    if (pending.length >= this.maxPerAgent) this.#file(agent);
  }

  /** Files the answers remembered since the last read (of one agent, or all). */
  #file(agent?: string): void {
    const agents = agent !== undefined ? [agent] : [...this.#pending.keys()];
    for (const a of agents) {
      const pending = this.#pending.get(a);
      if (!pending) continue;
      this.#pending.delete(a);
      // An answer to a prompt that is remembered again later in the batch would be replaced by that one (same
      // prompt, same key): only the last one that stores is filed, so a repeated prompt is scrubbed once per
      // batch, not once per turn. The cache ends the same (an LRU holds the most recent distinct keys).
      const last = new Map<string, number>();
      for (let i = 0; i < pending.length; i++) {
        const p = pending[i]!;
        if (storable(p.prompt, p.answer)) last.set(p.prompt, i);
      }
      for (let i = 0; i < pending.length; i++) {
        const p = pending[i]!;
        if (last.get(p.prompt) === i) this.#store(a, p.prompt, p.answer, p.at);
      }
    }
  }

  #store(agent: string, prompt: string, answer: string, at?: number): void {
    if (!storable(prompt, answer)) return;
    const cleanPrompt = scrubSecrets(prompt);
    const key = exactKey(cleanPrompt);
    let entries = this.#agents.get(agent);
    if (!entries) {
      entries = new Map();
      this.#agents.set(agent, entries);
    }
    entries.delete(key);
    entries.set(key, {
      prompt: cleanPrompt,
      answer: scrubSecrets(answer),
      ...(at !== undefined ? { at } : {}),
    });
    while (entries.size > this.maxPerAgent) {
      const oldest = entries.keys().next().value as string;
      entries.delete(oldest);
    }
  }

  /**
   * The answer `agent` gave to `prompt` (exact, similarity 1), else to its most similar earlier prompt
   * when at least `minSimilarity` (ties go to the most recent). A hit counts as a use for the LRU.
   */
  lookup(agent: string, prompt: string, minSimilarity = this.minSimilarity): CacheHit | undefined {
    this.#file(agent);
    const entries = this.#agents.get(agent);
    if (!entries) return undefined;
    const clean = scrubSecrets(prompt);
    const key = exactKey(clean);
    const exact = entries.get(key);
    if (exact) return this.#hit(entries, key, exact, 1, true);
    const tokens = promptTokens(clean);
    let best: { key: string; entry: Entry; similarity: number } | undefined;
    for (const [k, entry] of entries) {
      entry.tokens ??= promptTokens(entry.prompt);
      const similarity = tokenSetCosine(tokens, entry.tokens);
      if (!best || similarity >= best.similarity) best = { key: k, entry, similarity };
    }
    if (!best || best.similarity < minSimilarity) return undefined;
    return this.#hit(entries, best.key, best.entry, best.similarity, false);
  }

  /** Entries held for `agent`, or for all agents. */
  size(agent?: string): number {
    this.#file(agent);
    if (agent !== undefined) return this.#agents.get(agent)?.size ?? 0;
    let n = 0;
    for (const entries of this.#agents.values()) n += entries.size;
    return n;
  }

  /** Forgets one agent's answers, or everything. */
  clear(agent?: string): void {
    if (agent === undefined) {
      this.#agents.clear();
      this.#pending.clear();
    } else {
      this.#agents.delete(agent);
      this.#pending.delete(agent);
    }
  }

  /** Plain data for persistence: per agent, entries from least to most recently used. */
  export(): AnswerCacheData {
    this.#file();
    const agents: Record<string, CachedAnswer[]> = {};
    for (const [agent, entries] of this.#agents) {
      agents[agent] = [...entries.values()].map(({ prompt, answer, at }) => ({
        prompt,
        answer,
        ...(at !== undefined ? { at } : {}),
      }));
    }
    return { version: 1, agents };
  }

  /**
   * Loads persisted entries, as if remembered in their order (so they become the most recent, and
   * the per-agent bound holds). Throws {@link ConfigError} naming the first malformed entry.
   */
  import(data: AnswerCacheData): void {
    // Answers remembered before the import are older than what it brings.
    this.#file();
    if (typeof data !== 'object' || data === null || data.version !== 1) {
      throw new ConfigError({
        source: SOURCE,
        path: 'version',
        message: 'is not 1; pass what export() returned',
      });
    }
    if (typeof data.agents !== 'object' || data.agents === null) {
      throw new ConfigError({
        source: SOURCE,
        path: 'agents',
        message: 'is missing; pass what export() returned',
      });
    }
    // Validate everything first so a bad file changes nothing.
    for (const [agent, entries] of Object.entries(data.agents)) {
      if (!Array.isArray(entries)) {
        throw new ConfigError({
          source: SOURCE,
          path: `agents.${agent}`,
          message: 'is not a list of entries',
        });
      }
      for (const [i, e] of entries.entries()) {
        const bad =
          typeof e?.prompt !== 'string'
            ? 'prompt'
            : typeof e.answer !== 'string'
              ? 'answer'
              : e.at !== undefined && typeof e.at !== 'number'
                ? 'at'
                : undefined;
        if (bad) {
          throw new ConfigError({
            source: SOURCE,
            path: `agents.${agent}[${i}].${bad}`,
            message: `has the wrong type; expected ${bad === 'at' ? 'epoch ms' : 'a string'}`,
          });
        }
      }
    }
    for (const [agent, entries] of Object.entries(data.agents)) {
      for (const e of entries) this.#store(agent, e.prompt, e.answer, e.at);
    }
  }

  #hit(entries: Map<string, Entry>, key: string, entry: Entry, similarity: number, exact: boolean): CacheHit {
    entries.delete(key);
    entries.set(key, entry);
    return Object.freeze({
      prompt: entry.prompt,
      answer: entry.answer,
      ...(entry.at !== undefined ? { at: entry.at } : {}),
      similarity,
      exact,
    });
  }
}
