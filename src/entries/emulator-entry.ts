/**
 * `breakwater/emulator`: the provider emulator. Real Anthropic, OpenAI (Chat Completions and Responses),
 * Gemini and OpenAI-compatible (vLLM, Ollama) wire formats over HTTP on 127.0.0.1, with quotas, credit, fault
 * rules on a timeline, control endpoints and call statistics: rehearse outages without a key or a network.
 *
 * @example
 * ```ts
 * import { startEmulator } from 'breakwater/emulator';
 * const emulator = await startEmulator({ profile: { seed: 7 } });
 * emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
 * console.log(emulator.baseURL('anthropic'), emulator.stats().totalCalls);
 * await emulator.close();
 * ```
 */
export { loadEmulatorProfile } from '../emulator/emulator-profile.ts';
export { type Emulator, type EmulatorOptions, startEmulator } from '../emulator/emulator-server.ts';
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
} from '../emulator/emulator-types.ts';
