import { z } from 'zod';
import { DEFAULT_BYOK_IDLE_TTL_MS } from '../byok/key-vault.ts';
import {
  baseUrlSchema,
  endpointConfigSchema,
  type ParsedEndpointConfig,
} from '../engines/endpoint-config.ts';
import { DEFAULT_BREAKER_CONFIG } from '../core/breaker-config.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { configErrorFromZod } from '../core/errors/zod-issue.ts';
import { boundedArray, boundedNumber, DAY_MS, durationMs, LIMITS, nonNegativeMs } from '../config/bounds.ts';

/** A positive whole count, at most `max`. */
const count = (max: number, what: string) => boundedNumber({ int: true, gt: 0, max, what });
const nonNegativeCount = (max: number, what: string) => boundedNumber({ int: true, min: 0, max, what });

/**
 * Default `concurrency.leaseMs`: how long a token may be held before it is taken back, ms.
 *
 * @example
 * ```ts
 * defineConfig(config).concurrency.leaseMs === DEFAULT_LEASE_MS; // without a leaseMs of its own
 * ```
 */
export const DEFAULT_LEASE_MS = 120_000;

/**
 * Default `tierPolicy`: slack, with a higher tier passed over for at most 1.5 s (about one call of a loaded
 * provider; bench:goodput's agent8-storm calls take 1.2 s on average).
 *
 * @example
 * ```ts
 * defineConfig(config).tierPolicy; // { kind: 'slack', maxDelayMs: 1500 } unless it says otherwise
 * ```
 */
export const DEFAULT_TIER_POLICY = { kind: 'slack', maxDelayMs: 1_500 } as const;

/** How tokens are shared between tiers (see `tierPolicy` in the config). */
const tierPolicySchema = z
  .discriminatedUnion('kind', [
    z.strictObject({
      kind: z.literal('slack'),
      /** The longest a waiting request is passed over by a lower tier's critical work, ms. Default 1500. */
      maxDelayMs: nonNegativeMs(60_000).default(DEFAULT_TIER_POLICY.maxDelayMs),
    }),
    z.strictObject({ kind: z.literal('strict') }),
  ])
  .default(DEFAULT_TIER_POLICY);

const B = DEFAULT_BREAKER_CONFIG;
/** The breaker's fields as users write them; defaults from the breaker's one owner (src/core/breaker-config.ts). */
const breakerSchema = z
  .strictObject({
    /** OPEN when failures ÷ calls in the window exceed this (0–1; 1 turns the rate rule off). Default 0.3 (seed 003). */
    failureRateThreshold: z.number().min(0).max(1).default(B.failureRateThreshold),
    /** Sliding window of the failure rate, ms. Default 60 000. */
    windowMs: durationMs().default(B.windowMs),
    /** The rate rule needs at least this many calls in the window. Default 5. */
    minCallsInWindow: count(1_000_000, 'calls').default(B.minCallsInWindow),
    /** OPEN after this many consecutive 429 / network / timeout faults. Default 3 (seed 003). */
    consecutiveToOpen: count(1_000, 'faults').default(B.consecutiveToOpen),
    /**
     * OPEN at the first stall (no headers before the deadline, a body or stream that stopped, a lease overrun), until
     * a probe finds the endpoint answering: each call to a stalling endpoint costs a whole deadline. False: a stall
     * counts like any other timeout. Default true.
     */
    openOnStall: z.boolean().default(B.openOnStall),
    /**
     * How long OPEN lasts after a stall before HALF-OPEN probes, ms (`openMs` if shorter). Keep it below the agents'
     * `maxWaitMs`: a chain with nowhere else to go waits for the probes instead of answering degraded without a call.
     * Default 5 000.
     */
    stallOpenMs: durationMs().default(B.stallOpenMs),
    /** How long OPEN lasts before HALF-OPEN probes, ms (longer when Retry-After says so). Default 30 000. */
    openMs: durationMs().default(B.openMs),
    /** Consecutive good probes that close it again. Default 2. */
    probesToClose: count(100, 'probes').default(B.probesToClose),
    /** Each failed probe after the first doubles OPEN's minimum length, up to this, ms. Default 300 000. */
    maxOpenMs: durationMs().default(B.maxOpenMs),
  })
  .default({
    failureRateThreshold: B.failureRateThreshold,
    windowMs: B.windowMs,
    minCallsInWindow: B.minCallsInWindow,
    consecutiveToOpen: B.consecutiveToOpen,
    openOnStall: B.openOnStall,
    stallOpenMs: B.stallOpenMs,
    openMs: B.openMs,
    probesToClose: B.probesToClose,
    maxOpenMs: B.maxOpenMs,
  });

const retrySchema = z
  .strictObject({
    /** Retries allowed as a fraction of first attempts over the window. Default 0.2. */
    budgetRatio: z.number().min(0).max(10).default(0.2),
    /** Window of the retry budget, ms. Default 60 000. */
    budgetWindowMs: durationMs().default(60_000),
    /** Retries always allowed per window, however few calls there were. Default 3. */
    minRetriesPerWindow: nonNegativeCount(1_000_000, 'retries').default(3),
    /** First backoff step when the provider gave no Retry-After, ms. Default 500. */
    baseBackoffMs: durationMs().default(500),
    /** Largest backoff step, ms. Default 30 000. */
    maxBackoffMs: durationMs().default(30_000),
  })
  .default({
    budgetRatio: 0.2,
    budgetWindowMs: 60_000,
    minRetriesPerWindow: 3,
    baseBackoffMs: 500,
    maxBackoffMs: 30_000,
  });

const concurrencySchema = z
  .strictObject({
    /** Global concurrency tokens: LLM calls in flight at once across all agents. Default 3 (seed 000). */
    limit: count(LIMITS.concurrency, 'tokens').default(3),
    /** AIMD per endpoint: halve an endpoint's concurrency on 429/overload, grow it back on success. Default false. */
    adaptive: z.boolean().default(false),
    /**
     * A token whose holder has not released it after this long is taken back: its call is cancelled and the
     * endpoint records a `timeout`, ms. Default 120 000.
     */
    leaseMs: durationMs().default(DEFAULT_LEASE_MS),
    /**
     * After cancelling an overrun call, how long its holder has to give the token back before it is taken
     * anyway (only a call that ignores cancellation ever waits this long), ms. Default 5 000.
     */
    reclaimGraceMs: durationMs().default(5_000),
  })
  .default({ limit: 3, adaptive: false, leaseMs: DEFAULT_LEASE_MS, reclaimGraceMs: 5_000 });

const agentDefaultsSchema = z
  .strictObject({
    /**
     * Longest an agent waits for its endpoints to come back between two calls (every cooling since its last call
     * counted together, a HALF-OPEN probe's outcome included) before it answers degraded, ms. A wait for a free
     * concurrency token is not counted. Default 10 000.
     */
    maxWaitMs: nonNegativeMs().default(10_000),
    /** Upstream attempts per engine call before the turn answers degraded. Default 6. */
    maxAttempts: count(LIMITS.attempts, 'attempts').default(6),
    /** Output token cap per call. Default 512. */
    maxTokens: count(LIMITS.maxTokens, 'tokens').default(512),
    /** Earlier turns kept verbatim in the prompt. Default 6. */
    historyTurns: nonNegativeCount(1_000, 'turns').default(6),
    /** How often a degraded agent checks whether its chain is healthy again, ms. Default 5 000. */
    probeIntervalMs: durationMs().default(5_000),
  })
  .default({ maxWaitMs: 10_000, maxAttempts: 6, maxTokens: 512, historyTurns: 6, probeIntervalMs: 5_000 });

/**
 * How a user's key for one provider name becomes a session-bound endpoint (see `ByokTemplate`): wire
 * protocol, model and where it lives. It carries no key: the user brings that with `/byok`.
 *
 * @example
 * ```ts
 * byokTemplateSchema.parse({ provider: 'anthropic', model: 'claude-sonnet-4-6' });
 * ```
 */
export const byokTemplateSchema = z
  .strictObject({
    /** Wire protocol of the endpoint. Required. */
    provider: z.enum(['anthropic', 'openai', 'gemini', 'openai-compatible']),
    /** Only for `openai-compatible`: the server behind the base URL. Default `generic`. */
    flavor: z.enum(['generic', 'vllm', 'ollama', 'gemini-compat']).optional(),
    /** Model name sent upstream. Required. */
    model: z.string().min(1),
    /** Base URL as the SDK takes it. Default: the provider's public API. */
    baseURL: baseUrlSchema.optional(),
    /** Deadline for the response headers of one call, ms. Default 60 000. */
    headersTimeoutMs: durationMs().optional(),
    /** Body idle deadline once headers arrived, ms. Default 30 000. */
    idleTimeoutMs: durationMs().optional(),
    /** Where the key's endpoint goes in an agent's chain: after the chain, before the degraded layer (the only value). */
    chainPosition: z.literal('before-degraded').optional(),
  })
  .superRefine((t, ctx) => {
    if (t.flavor !== undefined && t.provider !== 'openai-compatible')
      ctx.addIssue({
        code: 'custom',
        path: ['flavor'],
        message: `only applies to provider "openai-compatible" (this template is "${t.provider}"); remove it`,
      });
    if (t.provider === 'openai-compatible' && (t.flavor ?? 'generic') === 'generic' && !t.baseURL)
      ctx.addIssue({
        code: 'custom',
        path: ['baseURL'],
        message: 'is required for a generic openai-compatible template; set the server URL ending in /v1',
      });
  });

/** Provider names as the user types them after `/byok` (matched case-insensitively). */
const BYOK_PROVIDER_NAME = /^[a-z][a-z0-9._-]{0,31}$/i;

/**
 * `byok:` of the runtime config: runtime BYOK (seed 003, layer 3). Absent: `/byok` is off.
 *
 * @example
 * ```ts
 * const byok = { templates: { openai: { provider: 'openai', model: 'gpt-4o-mini' } }, idleTtlMs: 30 * 60_000 };
 * ```
 */
export const byokConfigSchema = z
  .strictObject({
    /** One template per provider name the user may type (`openai`, `anthropic`, `gemini`, …). At least one. */
    templates: z.record(z.string(), byokTemplateSchema),
    /** An injected key expires after this many ms without use (sliding). Default 7 200 000 (2 h). */
    idleTtlMs: durationMs(7 * DAY_MS).default(DEFAULT_BYOK_IDLE_TTL_MS),
  })
  .superRefine((b, ctx) => {
    const names = Object.keys(b.templates);
    if (names.length === 0)
      ctx.addIssue({
        code: 'custom',
        path: ['templates'],
        message:
          'names no provider; add at least one, e.g. openai: { provider: openai, model: gpt-4o-mini }, or remove byok',
      });
    const seen = new Set<string>();
    for (const name of names) {
      if (!BYOK_PROVIDER_NAME.test(name.trim()))
        ctx.addIssue({
          code: 'custom',
          path: ['templates', name],
          message:
            'is not a usable provider name; use a letter, then letters, digits, ".", "_" or "-" (max 32)',
        });
      const lower = name.trim().toLowerCase();
      if (seen.has(lower))
        ctx.addIssue({
          code: 'custom',
          path: ['templates', name],
          message: `names provider "${lower}" twice (names are case-insensitive)`,
        });
      seen.add(lower);
    }
  });

/** zod schema of {@link RuntimeConfig}. */
export const runtimeConfigSchema = z
  .strictObject({
    /** Every engine endpoint (provider + key + model). At least one. */
    endpoints: boundedArray(endpointConfigSchema, LIMITS.endpoints, 'endpoints').min(1),
    /** Named chains of endpoint ids, in order of preference (e.g. `premium`, `light`). */
    chains: z.record(
      z.string().min(1),
      boundedArray(z.string().min(1), LIMITS.endpoints, 'endpoints').min(1),
    ),
    /** Tiers in priority order, highest first. Tokens go to earlier tiers first, FIFO inside a tier. Default ['analysis', 'ops']. */
    tiers: boundedArray(z.string().min(1), 100, 'tiers').min(1).default(['analysis', 'ops']),
    /**
     * Tier aging, ms: a waiting request moves up one tier for every `tierAgingMs` it has waited, so a lower tier
     * is never starved by a steady stream of higher-tier requests (a request of tier k goes before a tier-0
     * request that arrived more than k × `tierAgingMs` after it). Default: none (strict tier priority).
     */
    tierAgingMs: durationMs().optional(),
    /**
     * How tokens are shared between tiers. `slack` (default): an agent whose queue of asks is the critical path of
     * the work left (run one after another they would outlast everything else shared over the tokens) gets a token
     * before higher tiers, so the tokens stay busy to the end of a round instead of idling while the lowest tier's
     * chains finish one call at a time; a request of a higher tier is passed over this way only in its first
     * `maxDelayMs` of waiting. `strict`: a waiting higher tier always goes first (aged by `tierAgingMs`). Default
     * `{ kind: 'slack', maxDelayMs: 1500 }`.
     */
    tierPolicy: tierPolicySchema,
    concurrency: concurrencySchema,
    breaker: breakerSchema,
    retry: retrySchema,
    /** How long a key whose credit ran out (or that was refused as bad) stays disabled, ms. Default 3 600 000. */
    creditCooldownMs: durationMs(7 * DAY_MS).default(3_600_000),
    agentDefaults: agentDefaultsSchema,
    /** Output tokens of a HALF-OPEN health probe. Default 1. */
    probeMaxTokens: boundedNumber({ gt: 0, max: 1_000, what: 'tokens' }).default(1),
    /**
     * Runtime BYOK: the provider templates a user's `/byok PROVIDER KEY` turns into session-bound
     * endpoints (after each agent's chain, before the degraded layer), and their idle TTL. Default: none
     * (BYOK off; `supervisor.byok.inject` throws a ConfigError).
     */
    byok: byokConfigSchema.optional(),
  })
  .superRefine((c, ctx) => {
    const ids = new Set<string>();
    c.endpoints.forEach((e, i) => {
      if (ids.has(e.id))
        ctx.addIssue({
          code: 'custom',
          path: ['endpoints', i, 'id'],
          message: `duplicate endpoint id "${e.id}"; ids must be unique`,
        });
      ids.add(e.id);
    });
    for (const [name, chain] of Object.entries(c.chains)) {
      chain.forEach((id, i) => {
        if (!ids.has(id))
          ctx.addIssue({
            code: 'custom',
            path: ['chains', name, i],
            message: `names endpoint "${id}", which is not defined; add it under endpoints or fix the name (defined: ${[...ids].join(', ')})`,
          });
      });
    }
    if (new Set(c.tiers).size !== c.tiers.length)
      ctx.addIssue({
        code: 'custom',
        path: ['tiers'],
        message: 'lists a tier twice; each tier once, highest priority first',
      });
  });

/**
 * What a user writes (defaults optional).
 *
 * @example
 * ```ts
 * const input: RuntimeConfigInput = {
 *   endpoints: [{ id: 'mini', provider: 'openai', model: 'gpt-4o-mini', apiKeyEnv: 'OPENAI_API_KEY' }],
 *   chains: { main: ['mini'] },
 * };
 * ```
 */
export type RuntimeConfigInput = z.input<typeof runtimeConfigSchema>;
/**
 * A validated config with every default filled in.
 *
 * @example
 * ```ts
 * const config: RuntimeConfig = defineConfig(input);
 * config.concurrency.limit; // defaults filled in
 * ```
 */
export type RuntimeConfig = Omit<z.output<typeof runtimeConfigSchema>, 'endpoints'> & {
  readonly endpoints: readonly ParsedEndpointConfig[];
};

/**
 * Validates a runtime config at start and fills its defaults. A bad config is refused with one
 * {@link ConfigError} naming the field (`chains.premium[1]`, `endpoints[0].provider`, …).
 *
 * @example
 * ```ts
 * const config = defineConfig({
 *   endpoints: [
 *     { id: 'sonnet', provider: 'anthropic', model: 'claude-sonnet-4-6', apiKeyEnv: 'ANTHROPIC_API_KEY' },
 *     { id: 'mini', provider: 'openai', model: 'gpt-4o-mini', apiKeyEnv: 'OPENAI_API_KEY' },
 *   ],
 *   chains: { premium: ['sonnet', 'mini'], light: ['mini', 'sonnet'] },
 *   concurrency: { limit: 3 },
 * });
 * ```
 */
export function defineConfig(input: RuntimeConfigInput, source = 'defineConfig'): RuntimeConfig {
  if (input === null || typeof input !== 'object') {
    throw new ConfigError({
      source,
      path: '',
      message: 'expected a config object with endpoints and chains',
    });
  }
  const parsed = runtimeConfigSchema.safeParse(input);
  if (!parsed.success) throw configErrorFromZod(parsed.error, source);
  return parsed.data as RuntimeConfig;
}
