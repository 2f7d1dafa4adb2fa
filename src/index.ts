/**
 * breakwater: keeps multi-agent LLM systems working when the upstream APIs rate-limit, run out of credit,
 * overload or drop the connection. This is the embedding API; the rest lives under subpaths:
 * `breakwater/emulator` (the provider emulator), `breakwater/store` (durable rounds on PostgreSQL/PGlite),
 * `breakwater/testing` (manual clock, emulator fixture), `breakwater/viz` (the state visualizer) and
 * `breakwater/ai-sdk` (a Vercel AI SDK provider).
 *
 * @example
 * ```ts
 * import { createSupervisor } from 'breakwater';
 * const supervisor = createSupervisor({
 *   endpoints: [
 *     { id: 'sonnet', provider: 'anthropic', model: 'claude-sonnet-4-6', apiKeyEnv: 'ANTHROPIC_API_KEY' },
 *     { id: 'mini', provider: 'openai', model: 'gpt-4o-mini', apiKeyEnv: 'OPENAI_API_KEY' },
 *   ],
 *   chains: { premium: ['sonnet', 'mini'] },
 * });
 * const turn = await supervisor.call({ chain: 'premium', messages: [{ role: 'user', content: 'Hello' }] });
 * console.log(turn.outcome, turn.endpointId, turn.answer.text);
 * await supervisor.stop();
 * ```
 */

// The supervisor and its agents.
export { createSupervisor } from './runtime/create-supervisor.ts';
export type {
  AgentStateChange,
  AgentStateName,
  SpawnOptions,
  Supervisor,
  SupervisorOptions,
  SupervisorState,
  TokenView,
} from './runtime/create-supervisor.ts';
export { defineAgent } from './runtime/agent-definition.ts';
export type {
  AgentDefinition,
  DegradedContext,
  LlmAgentDefinition,
  NoAgentDefinition,
} from './runtime/agent-definition.ts';
export type { AgentHandle, AskOptions, TurnMeta } from './runtime/agent-handle-types.ts';
export type { CallOptions } from './runtime/supervisor-types.ts';
export type { Turn, TurnAnswer, TurnOutcome } from './core/turn.ts';
export type { StreamEvent, TurnStream } from './runtime/turn-stream.ts';
export type { ChatMessage, StopReason, ToolCall, Usage } from './core/engine-types.ts';
export type { EndpointHealth } from './health/endpoint-health-view.ts';

// Tools.
export { defineTool, type ToolSpec, type TypedTool } from './runtime/define-tool.ts';
export type { AgentTool, ClientTool, ToolRunContext } from './runtime/agent-definition.ts';

// Config.
export { defineConfig } from './runtime/runtime-config.ts';
export type { RuntimeConfig, RuntimeConfigInput } from './runtime/runtime-config.ts';
export type { EndpointConfig } from './engines/endpoint-config.ts';

// Errors and their guards.
export { ConfigError, isConfigError } from './core/errors/config-error.ts';
export { AgentStoppedError, isAgentStoppedError } from './core/errors/lifecycle-errors.ts';
export { ToolArgumentsError, isToolArgumentsError } from './core/errors/tool-arguments-error.ts';
export { EngineFaultError, isEngineFaultError, type Fault, type FaultKind } from './core/fault.ts';

// Events.
export type { RuntimeEvent, RuntimeEventListener, RuntimeEventType } from './core/runtime-event.ts';

// Time.
export { type Clock, systemClock } from './clock/clock.ts';
