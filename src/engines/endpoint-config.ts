import { z } from 'zod';
import { boundedNumber, durationMs, LIMITS } from '../config/bounds.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { DEFAULT_MAX_RETRY_AFTER_MS } from './wire/retry-after-cap.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { type CallCredential, createCallCredential, fingerprintOf } from './call-credential.ts';
import type { CompatFlavor, EndpointDescriptor, ProviderKind } from '../core/engine-types.ts';

/** Default deadline for the response headers of one call, in ms. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 60_000;
/** Default idle deadline between two body chunks once headers arrived, in ms. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
export { DEFAULT_MAX_RETRY_AFTER_MS };

/**
 * Client-side limits an operator declares for an endpoint. The adapter itself does not enforce
 * them (the rate limiter and the supervisor do); they live here so one config describes the endpoint.
 */
export interface EndpointLimits {
  /** Requests per minute the key may send to this model. Default: unlimited. */
  readonly rpm?: number;
  /** Tokens per minute (input + output). Default: unlimited. */
  readonly tpm?: number;
  /** Calls in flight at once on this endpoint. Default: unlimited (the supervisor's global limit applies). */
  readonly maxConcurrency?: number;
}

/**
 * One engine endpoint: provider + key + model (+ where it lives). Give it to {@link createEngine}.
 *
 * @example
 * ```ts
 * const config: EndpointConfig = {
 *   id: 'primary-anthropic',
 *   provider: 'anthropic',
 *   model: 'claude-sonnet-4-5',
 *   apiKeyEnv: 'ANTHROPIC_API_KEY',
 *   headersTimeoutMs: 20_000,
 * };
 * ```
 */
export interface EndpointConfig {
  /** Unique name of the endpoint in a runtime (e.g. `primary-openai`). Required. */
  readonly id: string;
  /** Wire protocol: `anthropic`, `openai`, `gemini` or `openai-compatible`. Required. */
  readonly provider: ProviderKind;
  /**
   * Only for `openai-compatible`: the server behind the base URL (`generic`, `vllm`, `ollama`,
   * `gemini-compat`). Default: `generic`. It changes how faults are read and the default base URL.
   */
  readonly flavor?: CompatFlavor;
  /** Model name sent upstream. Required. */
  readonly model: string;
  /**
   * The API key in plaintext. Default: none. It is never logged, persisted or put in an error;
   * the endpoint is identified by its fingerprint. Prefer {@link EndpointConfig.apiKeyEnv}.
   */
  readonly apiKey?: string;
  /**
   * Name of the environment variable holding the key, read when the engine is created.
   * Default: none. One of `apiKey` / `apiKeyEnv` is required except for `openai-compatible`.
   */
  readonly apiKeyEnv?: string;
  /**
   * Base URL, exactly what the provider's SDK takes as `baseURL` (genai: `httpOptions.baseUrl`).
   * Default: the provider's public API (`https://api.anthropic.com`, `https://api.openai.com/v1`,
   * Gemini's `https://generativelanguage.googleapis.com`); for `openai-compatible`: Ollama
   * `http://127.0.0.1:11434/v1`, vLLM `http://127.0.0.1:8000/v1`, gemini-compat
   * `https://generativelanguage.googleapis.com/v1beta/openai`; required for `generic`.
   */
  readonly baseURL?: string;
  /** Deadline for the response headers of one call, in ms. Default: 60 000. */
  readonly headersTimeoutMs?: number;
  /** After headers, the call fails when no body bytes arrive for this long, in ms. Default: 30 000. */
  readonly idleTimeoutMs?: number;
  /**
   * Ceiling on any wait the provider asks for (`retry-after`, a rate-limit reset, Gemini's
   * `retryDelay`), in ms. A longer one is cut to this and the fault records the asked wait as
   * `retryAfterCappedFromMs`, so one absurd header cannot park the endpoint for days.
   * Default: 900 000 (15 min).
   */
  readonly maxRetryAfterMs?: number;
  /** Declared quotas of this endpoint. Default: none. */
  readonly limits?: EndpointLimits;
}

/** An {@link EndpointConfig} after validation: the defaults are filled in. */
export type ParsedEndpointConfig = EndpointConfig & {
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly maxRetryAfterMs: number;
};

/** A positive whole count, at most `max`. */
const count = (max: number, what: string) => boundedNumber({ int: true, gt: 0, max, what });

/**
 * A base URL: http(s), without a user or password (the platform fetch refuses those, and they would end up
 * in messages). The URL is never echoed in the error.
 *
 * @example
 * ```ts
 * baseUrlSchema.parse('http://127.0.0.1:8000/v1');
 * ```
 */
export const baseUrlSchema = z.url({ protocol: /^https?$/ }).refine(
  (u) => {
    try {
      const url = new URL(u);
      return url.username === '' && url.password === '';
    } catch {
      return false;
    }
  },
  {
    message:
      'must not carry a user or password (the URL is not shown); put the key in apiKey or apiKeyEnv and give the URL without user:password@',
  },
);

/** What an environment variable name may look like. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A name worth echoing in a message: conventional, and nothing like a pasted key. */
const PRINTABLE_ENV_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;

/**
 * How a message names the variable an `apiKeyEnv` points at: `environment variable OPENAI_API_KEY` for a
 * conventional name, else without echoing it (a key pasted into `apiKeyEnv` must not be printed back).
 *
 * @example
 * ```ts
 * describeEnvName('OPENAI_API_KEY'); // 'environment variable OPENAI_API_KEY'
 * describeEnvName('gsk_8Jd…');       // 'the environment variable named by apiKeyEnv (name not shown: …)'
 * ```
 */
export function describeEnvName(name: string): string {
  const digits = name.replace(/[^0-9]/g, '').length;
  const printable =
    PRINTABLE_ENV_NAME.test(name) && scrubSecrets(name) === name && !(name.length >= 24 && digits >= 6);
  return printable
    ? `environment variable ${name}`
    : 'the environment variable named by apiKeyEnv (name not shown: it does not look like a variable name; did you paste the key there?)';
}

/**
 * The zod schema of {@link EndpointConfig}. Unknown fields are refused so a typo never silently
 * falls back to a default.
 *
 * @example
 * ```ts
 * const parsed = endpointConfigSchema.parse(yaml.parse(text).endpoints[0]);
 * ```
 */
export const endpointConfigSchema = z
  .strictObject({
    id: z.string().min(1),
    provider: z.enum(['anthropic', 'openai', 'gemini', 'openai-compatible']),
    flavor: z.enum(['generic', 'vllm', 'ollama', 'gemini-compat']).optional(),
    model: z.string().min(1),
    apiKey: z.string().min(1).optional(),
    apiKeyEnv: z
      .string()
      .min(1)
      .max(
        256,
        "is too long for an environment variable name; give the variable's name (the value is not shown)",
      )
      .regex(
        ENV_NAME,
        'is not an environment variable name (letters, digits and _); if you pasted the key itself, give the name of the variable that holds it (the value is not shown)',
      )
      .optional(),
    baseURL: baseUrlSchema.optional(),
    headersTimeoutMs: durationMs().default(DEFAULT_HEADERS_TIMEOUT_MS),
    idleTimeoutMs: durationMs().default(DEFAULT_IDLE_TIMEOUT_MS),
    maxRetryAfterMs: durationMs().default(DEFAULT_MAX_RETRY_AFTER_MS),
    limits: z
      .strictObject({
        rpm: count(LIMITS.perMinute, 'requests per minute').optional(),
        tpm: count(LIMITS.perMinute, 'tokens per minute').optional(),
        maxConcurrency: count(LIMITS.concurrency, 'calls').optional(),
      })
      .optional(),
  })
  .superRefine((c, ctx) => {
    if (c.flavor !== undefined && c.provider !== 'openai-compatible') {
      ctx.addIssue({
        code: 'custom',
        path: ['flavor'],
        message: `only applies to provider "openai-compatible" (this endpoint is "${c.provider}"); remove it`,
      });
    }
    if (c.provider === 'openai-compatible' && (c.flavor ?? 'generic') === 'generic' && !c.baseURL) {
      ctx.addIssue({
        code: 'custom',
        path: ['baseURL'],
        message: 'is required for a generic openai-compatible endpoint; set the server URL ending in /v1',
      });
    }
    if (c.apiKey !== undefined && c.apiKeyEnv !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['apiKey'],
        message: 'give either apiKey or apiKeyEnv, not both',
      });
    }
    if (c.provider !== 'openai-compatible' && c.apiKey === undefined && c.apiKeyEnv === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['apiKeyEnv'],
        message: `a ${c.provider} endpoint needs a key; set apiKeyEnv (the variable's name) or apiKey`,
      });
    }
  });

/**
 * Validates an endpoint config and fills its defaults. Throws one {@link ConfigError} naming
 * `source` and the field path of the first problem.
 *
 * @example
 * ```ts
 * const cfg = parseEndpointConfig({ id: 'oa', provider: 'openai', model: 'gpt-4o', apiKeyEnv: 'OPENAI_API_KEY' });
 * cfg.headersTimeoutMs; // 60000
 * ```
 */
export function parseEndpointConfig(input: unknown, source = 'EndpointConfig'): ParsedEndpointConfig {
  const parsed = endpointConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data as ParsedEndpointConfig;
  const issue = parsed.error.issues[0];
  const path = issue ? issue.path.map(String) : [];
  let message = issue?.message ?? 'invalid endpoint config';
  if (issue?.code === 'unrecognized_keys') {
    // Name the unknown field itself: it is most often a typo of a real option.
    path.push(String(issue.keys[0]));
    message = 'is not an endpoint option; remove it or fix its spelling';
  }
  throw new ConfigError({ source, path: path.join('.'), message: scrubSecrets(message) });
}

const DEFAULT_BASE_URLS: Readonly<Record<string, string>> = Object.freeze({
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com/v1',
  gemini: 'https://generativelanguage.googleapis.com',
  vllm: 'http://127.0.0.1:8000/v1',
  ollama: 'http://127.0.0.1:11434/v1',
  'gemini-compat': 'https://generativelanguage.googleapis.com/v1beta/openai',
});

/**
 * The base URL a config resolves to: the configured one, else the provider's (or flavor's) default.
 * `undefined` only for a generic openai-compatible endpoint without one (which validation refuses).
 */
export function effectiveBaseURL(config: EndpointConfig): string | undefined {
  if (config.baseURL) return config.baseURL;
  const key = config.provider === 'openai-compatible' ? (config.flavor ?? 'generic') : config.provider;
  return DEFAULT_BASE_URLS[key];
}

/**
 * The key a config points at: `apiKey`, else the value of the `apiKeyEnv` variable, else undefined.
 * Internal to the engines: the returned value must never leave them.
 */
export function resolveApiKey(
  config: EndpointConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  if (config.apiKey) return config.apiKey;
  if (config.apiKeyEnv) {
    const value = env[config.apiKeyEnv];
    return value ? value : undefined;
  }
  return undefined;
}

/**
 * The key's keyed fingerprint (HMAC-SHA256 under a secret of this process, first 8 hex chars), or `none`
 * without a key. Safe to log and persist; the same key gives the same value within one process only.
 *
 * @example
 * ```ts
 * keyFingerprint('sk-test'); // e.g. '5f1a6c0e'
 * keyFingerprint(undefined); // 'none'
 * ```
 */
export function keyFingerprint(key: string | Uint8Array | undefined): string {
  return fingerprintOf(key);
}

/**
 * The endpoint's key (`apiKey`, else the `apiKeyEnv` variable) sealed into a {@link CallCredential}, or
 * undefined for a keyless endpoint. Engines build their SDK client from the credential's marker, so no
 * client holds the key.
 *
 * @example
 * ```ts
 * const credential = endpointCredential(parseEndpointConfig(config));
 * ```
 */
export function endpointCredential(config: EndpointConfig): CallCredential | undefined {
  const key = resolveApiKey(config);
  return key ? createCallCredential(key) : undefined;
}

/** Drops credentials and query strings a URL may carry, so a descriptor never leaks them. */
function safeURL(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return undefined;
  }
}

/**
 * The frozen, loggable identity of an endpoint: id, provider, flavor, model, key fingerprint and
 * base URL (without credentials). The key is read from `apiKey` or the `apiKeyEnv` variable.
 *
 * @example
 * ```ts
 * describeEndpoint({ id: 'local', provider: 'openai-compatible', flavor: 'ollama', model: 'llama3.1' });
 * // { id: 'local', provider: 'openai-compatible', flavor: 'ollama', model: 'llama3.1',
 * //   keyFingerprint: 'none', baseURL: 'http://127.0.0.1:11434/v1' }
 * ```
 */
export function describeEndpoint(config: EndpointConfig): EndpointDescriptor {
  const baseURL = safeURL(effectiveBaseURL(config));
  const flavor = config.provider === 'openai-compatible' ? (config.flavor ?? 'generic') : undefined;
  return Object.freeze({
    id: config.id,
    provider: config.provider,
    ...(flavor ? { flavor } : {}),
    model: config.model,
    keyFingerprint: keyFingerprint(resolveApiKey(config)),
    ...(baseURL ? { baseURL } : {}),
  });
}
