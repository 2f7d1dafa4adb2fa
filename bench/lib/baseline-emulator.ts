import type { EmulatorFlavor, EmulatorStats } from '../../src/emulator/emulator-types.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { startEmulatorProcess } from './emulator-process.ts';
import { processCpuMicros } from './process-cpu.ts';

/** The emulator a system of the goodput bench talks to: its own process, so the system's CPU is its own. */
export interface BaselineEmulator {
  /** Control URL (`runScenario`'s `emulatorUrl`). */
  readonly controlURL: string;
  baseURL(flavor: EmulatorFlavor): string;
  stats(): Promise<EmulatorStats>;
  /** CPU µs the emulator process spent since it started listening (what serving this system cost it). */
  cpuMicros(): number;
  close(): Promise<void>;
}

/**
 * Starts a fresh emulator for one system at the scenario's `timeScale` on the real clock, as the bare SDK baseline
 * always ran it: the emulated windows, latencies and Retry-After values are then consistent with a client's real
 * timers. Fresh per system: a reset keeps the fault windows' origin and the spent credit.
 */
export async function startBaselineEmulator(spec: ScenarioSpec): Promise<BaselineEmulator> {
  const emu = await startEmulatorProcess({ ...(spec.emulator ?? {}), timeScale: spec.timeScale ?? 1 });
  const cpu0 = processCpuMicros(emu.pid);
  return {
    controlURL: emu.controlURL,
    baseURL: (f) => emu.baseURL(f),
    stats: () => emu.stats(),
    cpuMicros: () => processCpuMicros(emu.pid) - cpu0,
    close: () => emu.close(),
  };
}
