import type { ScenarioByokInput } from '../../scenarios/scenario-base-schema.ts';
import type { ScenarioSpec } from '../../scenarios/scenario-types.ts';
import { CliError } from '../cli-error.ts';

/** The flags of `breakwater run` that decide whether `--virtual-time` can hold. */
export interface VirtualTimeFlags {
  readonly providers?: string;
  readonly emulatorUrl?: string;
  readonly coordinationUrl?: string;
}

/**
 * `run --virtual-time` runs the scenario on a virtual clock (`runScenario({ virtualTime })`): simulated time stands
 * still while real work runs and jumps to the next timer when only timers are left, so the run takes the CPU it
 * needs and its timeline does not depend on the machine's speed or load. That only holds when everything the run
 * waits on is on that clock: the in-process emulator. Anything in wall time (real providers, an emulator given by
 * URL, other processes sharing the tokens) is refused in one line naming what to drop, before anything is reached
 * or stored; `--workers` is refused before this, as it takes another path. See also {@link checkVirtualTimeScenario}.
 *
 * @example
 * ```ts
 * checkVirtualTimeFlags({ providers: 'emulator' }); // fine
 * ```
 */
export function checkVirtualTimeFlags(flags: VirtualTimeFlags): void {
  const wallTime = [
    flags.providers === 'real' ? '--providers real' : '',
    flags.emulatorUrl !== undefined ? '--emulator-url (that emulator runs on its own wall clock)' : '',
    flags.coordinationUrl !== undefined ? '--coordination-url (other processes share it in wall time)' : '',
  ].filter(Boolean);
  if (wallTime.length > 0)
    throw new CliError(
      `--virtual-time does not go with ${wallTime.join(', ')}: a virtual clock is only for the in-process emulator; drop one`,
    );
}

/**
 * The scenario's half of {@link checkVirtualTimeFlags}: every endpoint and BYOK template must be served by the
 * in-process emulator (`emulator:`); one in wall time (a real server, with or without a fault proxy) is refused
 * naming it.
 *
 * @example
 * ```ts
 * checkVirtualTimeScenario(loadScenario(resolveScenario('agent8-storm'))); // fine: emulator only
 * ```
 */
export function checkVirtualTimeScenario(scenario: ScenarioSpec): void {
  const endpoints = scenario.runtime.endpoints.filter((e) => !e.emulator).map((e) => e.id);
  const byok = scenario.runtime.byok as ScenarioByokInput | undefined;
  const templates = Object.entries(byok?.templates ?? {})
    .filter(([, t]) => !t.emulator)
    .map(([name]) => `byok template ${name}`);
  const outside = [...endpoints, ...templates];
  if (outside.length > 0)
    throw new CliError(
      `--virtual-time needs every endpoint served by the emulator (emulator:); ${outside.join(', ')} ${outside.length === 1 ? 'is' : 'are'} in wall time; run without --virtual-time`,
    );
}
