/**
 * breakwater: keeps multi-agent LLM systems working when the upstream APIs rate-limit, run out of credit,
 * overload or drop the connection. This file is the public API; everything else is internal.
 *
 * @example
 * ```ts
 * import { createSupervisor, startEmulator } from 'breakwater';
 * const emulator = await startEmulator();
 * const supervisor = createSupervisor({
 *   endpoints: [{ id: 'mini', provider: 'openai', model: 'gpt-4o-mini', apiKey: 'sk-test', baseURL: emulator.baseURL('openai') }],
 *   chains: { main: ['mini'] },
 * });
 * const turn = await supervisor.spawnAgent({ name: 'Kai', chain: 'main' }).ask('hello');
 * ```
 */
export * from './runtime/index.ts';
export * from './engines/index.ts';
export { classifyError, type ClassifyContext } from './faults/classify-error.ts';
export {
  EngineFaultError,
  FAULT_KINDS,
  type Fault,
  type FaultKind,
  isEngineFaultError,
  isSwappableFault,
  isTransientFault,
} from './faults/fault.ts';
export { readRateLimitState } from './ratelimit/rate-limit-headers.ts';
export { parseGoDuration, retryAfterFromHeaders } from './ratelimit/retry-after.ts';
export {
  type CallRecord,
  type Emulator,
  type EmulatorFaultKind,
  type EmulatorFlavor,
  type EmulatorOptions,
  type EmulatorProfile,
  type EmulatorStats,
  type FaultRule,
  loadEmulatorProfile,
  startEmulator,
} from './emulator/index.ts';
export * from './degraded/index.ts';
export { AimdLimiter, RetryBudget, TokenBucket, backoffDelay, retryDelay } from './resilience/index.ts';
export { breakerMachine, BREAKER_MACHINE_VERSION } from '../machines/breaker.machine.ts';
export { agentMachine, AGENT_MACHINE_VERSION } from '../machines/agent.machine.ts';
export { supervisorMachine, SUPERVISOR_MACHINE_VERSION } from '../machines/supervisor.machine.ts';
export { type Clock, createManualClock, type ManualClock, sleep, systemClock } from './clock/clock.ts';
export { createScaledClock, type ScaledClock } from './clock/scaled-clock.ts';
export {
  createVirtualClock,
  holdClock,
  parkOnClock,
  type VirtualClock,
  type VirtualClockOptions,
} from './clock/virtual-clock.ts';
export {
  type EndpointFaultRule,
  type FaultProxy,
  type FaultProxyOptions,
  startFaultProxy,
} from './fault-proxy/index.ts';
export type { RuntimeEvent, RuntimeEventListener, RuntimeEventType } from './events/runtime-event.ts';
export { ConfigError, isConfigError } from './errors/config-error.ts';
export {
  BYOK_USAGE,
  type ByokExpiryReason,
  type ByokReceipt,
  ByokRejectedError,
  type ByokTemplate,
  ByokVaultClosedError,
  isByokRejectedError,
  isByokVaultClosedError,
  parseByokCommand,
  parseByokLine,
  openCommandInput,
  startByokConsole,
  type ByokConsole,
  type ByokConsoleOptions,
} from './byok/index.ts';
export { createLogger, type LoggerOptions } from './logging/logger.ts';
export { maskSecret, redactUrl, scrubSecrets, scrubValue } from './redact/secret-scrubber.ts';
export {
  createLiveSource,
  startVizServer,
  applyEvent,
  stateAt,
  type VizLiveSource,
  type VizState,
} from './viz/index.ts';
export {
  buildRunReport,
  COOLING_DOWN_MESSAGE,
  eventsFromRecords,
  formatRunReport,
  loadRunReport,
  SEED_THRESHOLDS,
  type FormatReportOptions,
  type LoadRunReportOptions,
  type ReportCheck,
  type RunReport,
  type RunReportOptions,
} from './report/index.ts';
export {
  createLiveView,
  type LiveProgress,
  type LiveSource,
  type LiveStream,
  type LiveView,
  type LiveViewOptions,
} from './live/index.ts';
export {
  type ProviderMode,
  type RunPolicy,
  type RunScenarioOptions,
  runScenario,
  type ScenarioRunContext,
  type ScenarioRunResult,
} from './rounds/run-scenario.ts';
export { createBreakwaterExecutor, type BreakwaterExecutor } from './rounds/breakwater-executor.ts';
export type { TurnExecutor, TurnRequest } from './rounds/turn-executor.ts';
export { listScenarios, loadScenario, parseScenario, resolveScenario } from './scenarios/load-scenario.ts';
export { planRounds } from './scenarios/round-planner.ts';
export { scenarioAgents, SCENARIO_TOOLS } from './scenarios/scenario-tools.ts';
export { scenarioRuntimeConfig } from './scenarios/scenario-endpoints.ts';
export { toRealProviders } from './scenarios/real-providers.ts';
export type {
  AgendaItem,
  CronJob,
  ReportSpec,
  ScenarioAgent,
  ScenarioSpec,
} from './scenarios/scenario-types.ts';
export { createStatusQuoExecutor } from './policies/status-quo-worker.ts';
export { SEED_DECISION_TREES } from '../agents/seed-agents.ts';
export {
  openDatabase,
  createRunStore,
  migrateToLatest,
  type BreakwaterDatabase,
  type RunStore,
  DatabaseUnavailableError,
  isDatabaseUnavailableError,
} from './store/index.ts';
