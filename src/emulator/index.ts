/**
 * The provider emulator: a local HTTP server speaking the real wire formats of Anthropic, OpenAI,
 * Gemini and OpenAI-compatible servers (vLLM, Ollama), with quotas, credit and injectable faults.
 */
export { type EmulatorCommandOptions, runEmulatorCommand } from './emulator-command.ts';
export { loadEmulatorProfile } from './emulator-profile.ts';
export { type Emulator, type EmulatorOptions, startEmulator } from './emulator-server.ts';
export {
  type CallRecord,
  type CallStatus,
  EMULATOR_FAULT_KINDS,
  EMULATOR_FLAVORS,
  type EmulatorFaultKind,
  type EmulatorFlavor,
  type EmulatorKey,
  type EmulatorProfile,
  type EmulatorStats,
  type FaultRule,
  type LocalServerOptions,
  type QuotaLimits,
} from './emulator-types.ts';
export { keyFingerprint } from './emulator-core.ts';
