import type { EmulatorStats } from '../../src/emulator/emulator-types.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { IN_MEMORY, openDatabase } from '../../src/store/open-database.ts';
import type { AgentRoundsResult, RoundTail } from './agent-rounds.ts';
import { runBareSdk } from './bare-sdk-run.ts';
import { type BaselineEmulator, startBaselineEmulator } from './baseline-emulator.ts';
import { runAiFallbackPeer } from './peer-ai-fallback.ts';
import { runCockatielPeer } from './peer-cockatiel.ts';
import { runPolicy } from './policy-run.ts';
import { roundTailsOf, timeBreakdown } from './time-breakdown.ts';

/** The systems the goodput bench compares, in the order one run of the bench runs them. */
export const SYSTEMS = ['breakwater', 'ai-fallback', 'cockatiel', 'status-quo', 'bare SDK'] as const;
export type SystemName = (typeof SYSTEMS)[number];

/** What one system's run gives the bench (JSON: it comes back from the system's own process). */
export interface SystemRun {
  readonly system: SystemName;
  /** `virtual`, or `scaled ×N` (the peers and the bare SDK always: they sleep on real timers). */
  readonly clock: string;
  readonly makespanMs: number;
  readonly realMs: number;
  readonly turns: number;
  readonly failedTurns: number;
  /** Turns answered degraded (a policy that can degrade); absent where the system cannot. */
  readonly degradedTurns?: number;
  readonly rounds: readonly RoundTail[];
  readonly stats: EmulatorStats;
  /** CPU ms this process spent on the system's run (after its imports, store and emulator were up). */
  readonly cpuMs: number;
  /** Whether the emulator ran in this process (virtual clock): then `cpuMs` includes serving the calls. */
  readonly emulatorInProcess: boolean;
  /** CPU ms the emulator's own process spent serving this run (when it had one). */
  readonly emulatorCpuMs?: number;
  readonly forcedClockJumps?: number;
  /** breakwater: where its time went (`timeBreakdown`). */
  readonly time?: ReturnType<typeof timeBreakdown>;
}

/** Options of one system's run. */
export interface SystemOptions {
  readonly virtual: boolean;
  readonly jitterSeed?: number;
}

/** Runs `system` on agent8-storm in this process and measures it. */
export async function runSystem(
  spec: ScenarioSpec,
  system: SystemName,
  o: SystemOptions,
): Promise<SystemRun> {
  const scaled = `scaled ×${spec.timeScale ?? 1}`;
  if (system === 'breakwater' || system === 'status-quo') {
    const database = await openDatabase({ dataDir: IN_MEMORY });
    // On the virtual clock the emulator must share it, in this process; on the scaled clock it gets its own.
    const emu = o.virtual ? undefined : await startBaselineEmulator(spec);
    try {
      const cpu0 = process.cpuUsage();
      const r = await runPolicy(spec, system, database, {
        virtual: o.virtual,
        ...(o.jitterSeed !== undefined ? { jitterSeed: o.jitterSeed } : {}),
        ...(emu ? { emulator: emu } : {}),
      });
      const cpuMs = cpuSince(cpu0);
      const tokens = spec.runtime.concurrency?.limit ?? 3;
      return {
        system,
        clock: o.virtual ? 'virtual' : scaled,
        ...r.run,
        rounds: roundTailsOf(r.events),
        stats: r.stats,
        cpuMs,
        emulatorInProcess: !emu,
        ...(emu ? { emulatorCpuMs: emu.cpuMicros() / 1000 } : {}),
        ...(r.forcedClockJumps !== undefined ? { forcedClockJumps: r.forcedClockJumps } : {}),
        ...(system === 'breakwater' ? { time: timeBreakdown(r.events, r.run.makespanMs, tokens) } : {}),
      };
    } finally {
      await emu?.close();
      await database.close();
    }
  }
  const run: (spec: ScenarioSpec, emu: BaselineEmulator) => Promise<AgentRoundsResult> =
    system === 'ai-fallback' ? runAiFallbackPeer : system === 'cockatiel' ? runCockatielPeer : runBareSdk;
  const emu = await startBaselineEmulator(spec);
  try {
    const cpu0 = process.cpuUsage();
    const r = await run(spec, emu);
    const cpuMs = cpuSince(cpu0);
    return {
      system,
      clock: scaled,
      ...r,
      ...(system === 'bare SDK' ? {} : { degradedTurns: 0 }),
      stats: await emu.stats(),
      cpuMs,
      emulatorInProcess: false,
      emulatorCpuMs: emu.cpuMicros() / 1000,
    };
  } finally {
    await emu.close();
  }
}

function cpuSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}
