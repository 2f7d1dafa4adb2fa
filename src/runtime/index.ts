/**
 * The resilience core's public API: the supervisor runtime, agent definitions, turns and config.
 *
 * @example
 * ```ts
 * import { createSupervisor, defineAgent } from './runtime/index.ts';
 * const supervisor = createSupervisor(config);
 * const turn = await supervisor.spawnAgent(defineAgent({ name: 'Kai', chain: 'premium' })).ask('Item 1?');
 * ```
 */
export type {
  AgentDefinition,
  AgentTool,
  DegradedContext,
  LlmAgentDefinition,
  NoAgentDefinition,
  ToolRunContext,
} from './agent-definition.ts';
export { defineAgent, isNoAgentDefinition } from './agent-definition.ts';
export type { AgentHandle, AskOptions, TurnMeta } from './agent-handle.ts';
export type { CallMemo, CallRecordEvent } from './agent-actors.ts';
export type {
  AgentStateChange,
  AgentStateName,
  SpawnOptions,
  Supervisor,
  SupervisorOptions,
  SupervisorState,
  TokenView,
} from './create-supervisor.ts';
export { createSupervisor } from './create-supervisor.ts';
export type { EndpointHealth, WaitCause } from '../health/endpoint-health.ts';
export type { Selection } from '../health/endpoint-registry.ts';
export type {
  Grant,
  SchedulerReport,
  TokenDecision,
  TokenRequest,
  TokenScheduler,
} from '../scheduler/token-scheduler.ts';
export {
  isLeaseExpiredError,
  isSchedulerClosedError,
  LeaseExpiredError,
  SchedulerClosedError,
} from '../scheduler/token-scheduler.ts';
export { AgentStoppedError, isAgentStoppedError } from '../errors/lifecycle-errors.ts';
export { buildRequest, estimateRequestTokens } from './prompt-builder.ts';
export type { RuntimeConfig, RuntimeConfigInput } from './runtime-config.ts';
export { byokConfigSchema, defineConfig, runtimeConfigSchema } from './runtime-config.ts';
export {
  DEFAULT_BYOK_SESSION,
  type SupervisorByok,
  type SupervisorByokListener,
} from './supervisor-byok.ts';
export type { AgentMemory, ToolResultRecord, Turn, TurnAnswer, TurnOutcome, Utterance } from './turn.ts';
export { emptyMemory } from './turn.ts';
