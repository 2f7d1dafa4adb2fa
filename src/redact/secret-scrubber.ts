/**
 * Sanitizes text that comes from outside breakwater — a provider's or a driver's error message, an SDK's
 * exception, a URL a user typed — where it enters, before it can reach a log line, an error, a row or a
 * page. It looks at the *shape* of what it removes (credentials in URLs, password parameters, auth headers,
 * the key formats of every provider breakwater speaks to), never at registered values: keys are kept out
 * of outputs by construction (outputs are built from fingerprints, ids and classified faults), so a key
 * that happens to be an ordinary word can neither rewrite data nor stop a run.
 */

/** Replaces a masked value. Short and without quotes, so a sanitized JSON text stays JSON. */
const MASK = '***';

/**
 * Key formats, one per provider family. Each match is replaced by {@link maskSecret}'s form (prefix,
 * ellipsis, last 4). The lookbehind keeps words such as `risk-assessment-analyst` or `task-review` intact.
 */
const KEY_SHAPES: readonly RegExp[] = [
  // Anthropic (sk-ant-api03-…, sk-ant-admin01-…, sk-ant-oat01-…)
  /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{8,}/g,
  // OpenAI (sk-…, sk-proj-…, sk-svcacct-…, sk-admin-…), OpenRouter (sk-or-v1-…), DeepSeek and others (sk-…)
  /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{16,}/g,
  // Google API keys (Gemini, Gemini's OpenAI-compatible path) and OAuth access tokens
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{20,}/g,
  /(?<![A-Za-z0-9_.-])ya29\.[0-9A-Za-z_-]{20,}/g,
  // OpenAI-compatible hosts: Groq, xAI, Hugging Face, Perplexity, NVIDIA, Replicate, Fireworks, Cerebras
  /(?<![A-Za-z0-9_-])(?:gsk_|xai-|hf_|pplx-|nvapi-|r8_|fw_|csk-)[A-Za-z0-9_-]{16,}/g,
  // GitHub tokens (models.github.ai), AWS access key ids (Bedrock proxies)
  /(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}/g,
  /(?<![A-Z0-9])AKIA[0-9A-Z]{16}(?![A-Z0-9])/g,
  // JSON Web Tokens (bearer tokens of gateways)
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
];

/** `scheme://user:password@host` — the password (up to the last `@` of the authority) is masked. */
const URL_PASSWORD = /(\b[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/?#@:]*:)([^\s/?#]*)(@)/g;

/** `scheme://token@host` with no password: a lone user part long enough to be a token is masked. */
const URL_TOKEN_USER = /(\b[A-Za-z][A-Za-z0-9+.-]*:\/\/)([^\s/?#@:]{20,})(@)/g;

/**
 * `password=…`, `"password": "…"`, `?sslpassword=…`, `api_key=…`, `access_token=…`, `secret=…`: the value is
 * masked. Covers connection strings (URL queries and libpq `key=value` strings) and JSON echoes.
 */
const SECRET_PARAM =
  /(\b(?:password|passwd|pwd|sslpassword|secret|client_secret|api[_-]?key|access[_-]?token|refresh[_-]?token)\b["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&;,'"}\]]+)/gi;

/** `?key=…` / `&key=…` in a URL query (Gemini's key parameter). */
const KEY_QUERY = /([?&](?:key|token|auth)=)([^&\s#'"]+)/gi;

/** Auth headers as a driver or an SDK may print them (`Authorization: Bearer …`, `"x-api-key":"…"`). */
const AUTH_HEADER =
  /(\b(?:proxy-)?authorization\b|\bx-api-key\b|\bx-goog-api-key\b|\bapi-key\b|\bx-auth-token\b)(["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?([^\s"',}]+)/gi;

/** A bare `Bearer <token>` anywhere. */
const BEARER = /(\b[Bb]earer\s+)([A-Za-z0-9._~+/-]{8,}=*)/g;

/**
 * Masks a key for display: provider prefix, an ellipsis, the last 4 characters (`sk-…a1b2`). A short
 * value shows no tail at all.
 *
 * @example
 * ```ts
 * maskSecret('sk-ant-api03-abcdefgh1234'); // 'sk-ant-…1234'
 * maskSecret('ollama');                    // '…'
 * ```
 */
export function maskSecret(secret: string): string {
  const prefix =
    /^(sk-ant-|sk-proj-|sk-svcacct-|sk-admin-|sk-|AIza|ya29\.|gsk_|xai-|hf_|pplx-|nvapi-|r8_|fw_|csk-)/.exec(
      secret,
    )?.[1] ?? '';
  const tail = secret.length > 12 ? secret.slice(-4) : '';
  return `${prefix}…${tail}`;
}

/**
 * Returns `text` with credentials in URLs, password and key parameters, auth header values and every known
 * key shape masked. Meant for text breakwater did not write itself: provider and driver error messages,
 * SDK exceptions, stack traces, URLs typed by a user. Ordinary words are never touched.
 *
 * @example
 * ```ts
 * scrubSecrets('Incorrect API key provided: sk-proj-abcdefghijklmnop1234'); // '… sk-proj-…1234'
 * scrubSecrets('connect to postgres://app:hunter2@db:5432/x failed');       // '… postgres://app:***@db:5432/x …'
 * scrubSecrets('ollama');                                                    // 'ollama'
 * ```
 */
export function scrubSecrets(text: string): string {
  if (typeof text !== 'string' || text.length === 0) return text;
  let out = text
    .replace(URL_PASSWORD, (_m, head: string, _pw: string, at: string) => `${head}${MASK}${at}`)
    .replace(URL_TOKEN_USER, (_m, head: string, _user: string, at: string) => `${head}${MASK}${at}`)
    .replace(KEY_QUERY, (_m, head: string) => `${head}${MASK}`)
    .replace(SECRET_PARAM, (_m, head: string, value: string) =>
      value.startsWith('"')
        ? `${head}"${MASK}"`
        : value.startsWith("'")
          ? `${head}'${MASK}'`
          : `${head}${MASK}`,
    )
    .replace(
      AUTH_HEADER,
      (_m, name: string, sep: string, scheme: string | undefined) => `${name}${sep}${scheme ?? ''}${MASK}`,
    )
    .replace(BEARER, (_m, head: string) => `${head}${MASK}`);
  for (const shape of KEY_SHAPES) out = out.replace(shape, (m) => maskSecret(m));
  return out;
}

/**
 * Deep-sanitizes a JSON-like value (strings inside objects and arrays, object keys too) with
 * {@link scrubSecrets}. Returns a new value.
 *
 * @example
 * ```ts
 * scrubValue({ error: { message: 'bad key sk-proj-abcdefghijklmnop1234' } });
 * ```
 */
export function scrubValue<T>(value: T): T {
  if (typeof value === 'string') return scrubSecrets(value) as T;
  if (Array.isArray(value)) return value.map((v) => scrubValue(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[scrubSecrets(k)] = scrubValue(v);
    return out as T;
  }
  return value;
}

const SENSITIVE_QUERY =
  /^(?:password|passwd|pwd|sslpassword|sslkey|secret|client_secret|key|token|auth|api[_-]?key|access[_-]?token)$/i;

/**
 * A URL fit for a message: no password, no token-like user, no password/key query parameter, no fragment.
 * Something that does not parse as a URL is not echoed at all.
 *
 * @example
 * ```ts
 * redactUrl('postgres://app:hunter2@db:5432/x?sslmode=require&password=hunter2');
 * // 'postgres://app@db:5432/x?sslmode=require&password=***'
 * redactUrl('not a url'); // '(a URL that does not parse)'
 * ```
 */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '(a URL that does not parse)';
  }
  u.password = '';
  if (u.username.length >= 20) u.username = MASK;
  u.hash = '';
  const params = [...u.searchParams.keys()];
  for (const name of new Set(params)) {
    if (SENSITIVE_QUERY.test(name)) u.searchParams.set(name, MASK);
  }
  return scrubSecrets(
    u
      .toString()
      .replace(/=\*\*\*/g, `=${MASK}`)
      .replace(/%2A%2A%2A/g, MASK),
  );
}
