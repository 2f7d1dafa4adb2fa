/**
 * `breakwater/testing`: what a test of a program that embeds breakwater needs. A manual clock (cooldowns and
 * deadlines move only when the test says so), an in-process emulator fixture (the real SDKs over real HTTP,
 * no key), and a fault proxy to put in front of a real endpoint.
 *
 * @example
 * ```ts
 * import { createManualClock, startEmulatorFixture } from 'breakwater/testing';
 * const clock = createManualClock(Date.parse('2026-08-17T07:00:00Z'));
 * const fixture = await startEmulatorFixture({ clock });
 * clock.advance(30_000); // a 30 s cooldown passes, instantly
 * ```
 */
export { createManualClock, type ManualClock } from '../clock/clock.ts';
export { createVirtualClock, type VirtualClock, type VirtualClockOptions } from '../clock/virtual-clock.ts';
export {
  type EmulatorFixture,
  type FixtureEndpointOptions,
  startEmulatorFixture,
} from '../testing/emulator-fixture.ts';
export type { EndpointFaultRule } from '../fault-proxy/endpoint-fault-rule.ts';
export { type FaultProxy, type FaultProxyOptions, startFaultProxy } from '../fault-proxy/fault-proxy.ts';
