import type { ParsedEndpointConfig } from './endpoint-config.ts';

/**
 * The timeout handed to an SDK's own (real-time) timer. breakwater's deadlines run on the injected
 * clock in {@link timedFetch}; the SDK's timer is only a backstop well past them, so it never
 * decides a call's fate (with a manual clock, a real timer firing first would be a lie).
 */
export function sdkTimeoutMs(config: ParsedEndpointConfig): number {
  return Math.max(10 * 60_000, 2 * (config.headersTimeoutMs + config.idleTimeoutMs));
}
