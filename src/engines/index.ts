/**
 * breakwater's unified engine adapter: one {@link Engine} interface over Anthropic, OpenAI,
 * Gemini and OpenAI-compatible servers.
 *
 * @example
 * ```ts
 * import { createEngine } from './engines/index.ts';
 * const engine = createEngine({ id: 'local', provider: 'openai-compatible', flavor: 'ollama', model: 'llama3.1' });
 * ```
 */
export type {
  ChatMessage,
  CompatFlavor,
  EndpointDescriptor,
  Engine,
  EngineRequest,
  EngineResult,
  JsonSchema,
  ProviderKind,
  RateLimitState,
  RateLimitWindow,
  StopReason,
  ToolCall,
  ToolDefinition,
  Usage,
  UsageSource,
} from '../core/engine-types.ts';
export {
  addUsage,
  describeUsage,
  NO_USAGE,
  pacingTokens,
  reportedUsage,
  usageOf,
} from '../core/token-usage.ts';
export {
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_RETRY_AFTER_MS,
  describeEndpoint,
  type EndpointConfig,
  type EndpointLimits,
  endpointConfigSchema,
  keyFingerprint,
  type ParsedEndpointConfig,
  parseEndpointConfig,
} from './endpoint-config.ts';
export { type CreateEngineOptions, createEngine } from './create-engine.ts';
export { IDEMPOTENCY_HEADER } from './engine-call.ts';
export {
  type CallCredential,
  type CallCredentialOptions,
  createCallCredential,
  keyBytesOf,
} from './call-credential.ts';
export { credentialFetch } from './credential-fetch.ts';
