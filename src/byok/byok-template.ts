/**
 * BYOK templates: how a user's key for a provider name becomes an engine endpoint.
 */
import type { Clock } from '../clock/clock.ts';
import type { CallCredential } from '../engines/call-credential.ts';
import type { EngineWireOptions } from '../engines/create-engine.ts';
import { deferredSdkEngine } from '../engines/deferred-engine.ts';
import { type ParsedEndpointConfig, parseEndpointConfig } from '../engines/endpoint-config.ts';
import type { EndpointDescriptor, Engine } from '../core/engine-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { ByokTemplate, ProviderName } from './byok-types.ts';

/**
 * A template's name as the vault keys it: trimmed, lower case (`" OpenAI"` is `openai`). One normalizer for every
 * place that looks a template up by name.
 *
 * @example
 * ```ts
 * byokTemplateName(' OpenAI '); // 'openai'
 * ```
 */
export function byokTemplateName(raw: string): string {
  return raw.trim().toLowerCase();
}

/**
 * What a provider name may look like: a letter, then letters, digits, `.`, `_` or `-` (max 32).
 *
 * @example
 * ```ts
 * PROVIDER_NAME_PATTERN.test('azure-openai'); // true
 * ```
 */
export const PROVIDER_NAME_PATTERN = /^[a-z][a-z0-9._-]{0,31}$/;

/**
 * A validated template: its lowercased name and the endpoint config it yields, without id or key.
 *
 * @example
 * ```ts
 * parseByokTemplates({ OpenAI: { provider: 'openai', model: 'gpt-4o-mini' } }).get('openai')!.endpoint.headersTimeoutMs; // 60000
 * ```
 */
export interface ResolvedByokTemplate {
  readonly name: string;
  readonly endpoint: Omit<ParsedEndpointConfig, 'id' | 'apiKey' | 'apiKeyEnv'>;
}

/**
 * Validates the vault's templates: names (case-insensitive, unique), no key in a template, and each
 * one as a real endpoint config (with a stand-in key), so a bad template fails when the vault is
 * made, not at the user's `/byok`. Throws one `ConfigError` naming the field.
 *
 * @example
 * ```ts
 * const templates = parseByokTemplates({ anthropic: { provider: 'anthropic', model: 'claude-sonnet-4-5' } });
 * ```
 */
export function parseByokTemplates(
  input: Readonly<Record<ProviderName, ByokTemplate>> | undefined,
): Map<string, ResolvedByokTemplate> {
  const source = 'createKeyVault';
  if (!input || typeof input !== 'object' || Object.keys(input).length === 0) {
    throw new ConfigError({
      source,
      path: 'templates',
      message:
        'give at least one provider template, e.g. { openai: { provider: "openai", model: "gpt-4o-mini" } }',
    });
  }
  const out = new Map<string, ResolvedByokTemplate>();
  for (const [rawName, template] of Object.entries(input)) {
    const name = byokTemplateName(rawName);
    const path = `templates.${rawName}`;
    if (!PROVIDER_NAME_PATTERN.test(name)) {
      throw new ConfigError({
        source,
        path,
        message:
          'is not a usable provider name; use a letter, then letters, digits, ".", "_" or "-" (max 32)',
      });
    }
    if (out.has(name)) {
      throw new ConfigError({
        source,
        path,
        message: `names provider "${name}" twice (names are case-insensitive)`,
      });
    }
    if (!template || typeof template !== 'object') {
      throw new ConfigError({ source, path, message: 'must be an object with at least provider and model' });
    }
    const { chainPosition, ...fields } = template as ByokTemplate & Record<string, unknown>;
    if ('apiKey' in fields || 'apiKeyEnv' in fields) {
      throw new ConfigError({
        source,
        path: `${path}.${'apiKey' in fields ? 'apiKey' : 'apiKeyEnv'}`,
        message: 'a BYOK template carries no key (the user brings it with /byok); remove it',
      });
    }
    if (chainPosition !== undefined && chainPosition !== 'before-degraded') {
      throw new ConfigError({ source, path: `${path}.chainPosition`, message: 'must be "before-degraded"' });
    }
    // Validated as a real endpoint (with a stand-in key) so a bad template fails now, not at the user's /byok.
    const {
      id: _id,
      apiKey: _key,
      ...endpoint
    } = parseEndpointConfig(
      { id: `byok-template-${name}`, ...fields, apiKey: 'template-check' },
      `${source} ${path}`,
    );
    out.set(name, { name, endpoint: Object.freeze(endpoint) });
  }
  return out;
}

/**
 * The provider engine of a BYOK key: built once per key from a key-less config and the key's sealed
 * credential (its SDK client holds only the credential's marker). Not `createEngine`: that reads the key
 * from the config, and a BYOK key is never in a config. `wire` says how it reads the waits on the wire (a
 * template outside the emulator in a time-scaled scenario lives in wall time): as `createEngine` does.
 *
 * @example
 * ```ts
 * const engine = buildByokEngine({ id, ...template.endpoint }, descriptor, clock, credential);
 * ```
 */
export function buildByokEngine(
  config: ParsedEndpointConfig,
  endpoint: EndpointDescriptor,
  clock: Clock,
  credential: CallCredential,
  wire: EngineWireOptions = {},
): Engine {
  return deferredSdkEngine(
    config,
    endpoint,
    clock,
    wire.wallNow ?? Date.now,
    credential,
    wire.wireScale ?? 1,
    wire.quotaDayNow,
  );
}
