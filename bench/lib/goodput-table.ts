import { row } from './bench-result.ts';
import type { PolicyFigures } from './goodput-figures.ts';
import { percentile, round } from './stats.ts';

/** Issue 34's targets for breakwater, against the peers in the same run. */
export const ISSUE_34_TARGETS = {
  makespanOverBoundVirtual: 1.05,
  makespanOverBoundScaled: 'below ai-fallback’s',
  topTierDoneS: 140,
  failedTurns: 0,
  degradedTurns: 0,
  cpuPerLogicalCall: 'at most ai-fallback’s',
  amplification: 1.03,
  upstream429s: 12,
} as const;

/** The CPU of a system's client work per logical call, and whether it is an estimate. */
export interface ClientCpu {
  readonly ms: number;
  /** The emulator ran in the system's process (virtual clock): its share, estimated, was taken off. */
  readonly estimated: boolean;
}

/**
 * Client CPU per logical call. A system with its emulator in process (virtual clock: the emulator must share the
 * run's clock) paid for serving its calls too: the emulator's CPU per upstream call, as measured in this run's
 * emulator processes (median), times its upstream calls per logical call, is taken off — an estimate, said so.
 */
export function clientCpu(f: PolicyFigures, emulatorMsPerUpstream: number): ClientCpu {
  if (!f.emulatorInProcess) return { ms: f.cpuPerLogicalCallMs, estimated: false };
  return { ms: round(f.cpuPerLogicalCallMs - emulatorMsPerUpstream * f.amplification, 2), estimated: true };
}

/** The emulator's CPU ms per upstream call: the median over the systems whose emulator had its own process. */
export function emulatorMsPerUpstream(all: Readonly<Record<string, PolicyFigures>>): number {
  const v = Object.values(all)
    .map((f) => f.emulatorCpuPerUpstreamMs)
    .filter((x): x is number => x !== undefined);
  return percentile(v, 50);
}

/** breakwater against issue 34's targets; the makespan one depends on breakwater's clock. */
export function issue34Met(all: Readonly<Record<string, PolicyFigures>>, virtual: boolean) {
  const bw = all.breakwater!;
  const b = all['ai-fallback'];
  const em = emulatorMsPerUpstream(all);
  return {
    makespanOverBound: virtual
      ? bw.makespanOverBound <= ISSUE_34_TARGETS.makespanOverBoundVirtual
      : b !== undefined && bw.makespanOverBound < b.makespanOverBound,
    topTierDoneS: bw.topTierDoneS <= ISSUE_34_TARGETS.topTierDoneS,
    failedAndDegraded: bw.failedTurns === 0 && (bw.degradedTurns ?? 0) === 0,
    cpuPerLogicalCall: b !== undefined && clientCpu(bw, em).ms <= clientCpu(b, em).ms,
    amplification: bw.amplification <= ISSUE_34_TARGETS.amplification,
    upstream429s: bw.upstream429s <= ISSUE_34_TARGETS.upstream429s,
  };
}

/** Prints every system side by side (medians over the runs), then breakwater against issue 34's targets. */
export function printSideBySide(
  all: Readonly<Record<string, PolicyFigures>>,
  o: { virtual: boolean; runs: number; load: Readonly<Record<string, readonly number[]>> },
): void {
  const em = emulatorMsPerUpstream(all);
  const line = (label: string, get: (f: PolicyFigures, name: string) => number | string) =>
    console.log(row(label, ...Object.entries(all).map(([name, f]) => get(f, name))));
  console.log();
  console.log(o.runs > 1 ? `medians over ${o.runs} interleaved runs` : 'one run');
  console.log(row('', ...Object.keys(all)));
  line('clock', (f) => f.clock);
  line('answered / degraded / failed', (f) => {
    const degraded = f.degradedTurns ?? 0;
    return `${f.turns - f.failedTurns - degraded} / ${f.degradedTurns ?? '—'} / ${f.failedTurns}`;
  });
  line('makespan (simulated s)', (f) => round(f.makespanMs / 1000, 1));
  line('makespan ÷ quota bound', (f) => f.makespanOverBound);
  line('top tier done, s into round', (f) => f.topTierDoneS);
  line('lowest tier done, s into round', (f) => f.lowestTierDoneS);
  line('logical calls', (f) => f.logicalCalls);
  line('upstream calls', (f) => f.upstreamCalls);
  line('upstream ÷ logical calls', (f) => f.amplification);
  line('upstream 429s', (f) => f.upstream429s);
  line('429s ÷ upstream calls', (f) => f.upstream429Ratio);
  line('max in flight (emulator)', (f) => f.maxInFlight);
  line('client CPU ms per logical call', (f) => {
    const c = clientCpu(f, em);
    return c.estimated ? `≈${c.ms}` : c.ms;
  });
  line('  process CPU ms per logical call', (f) => f.cpuPerLogicalCallMs);
  line('  emulator CPU ms per upstream call', (f) => f.emulatorCpuPerUpstreamMs ?? 'in process');
  line('real time (s)', (f) => round(f.realMs / 1000, 1));
  line('load (1-min avg) over its runs', (_f, name) => loadRange(o.load[name] ?? []));
  const met = issue34Met(all, o.virtual);
  const bw = all.breakwater!;
  const b = all['ai-fallback'];
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
  const cpu = clientCpu(bw, em);
  console.log();
  console.log('issue 34 targets (breakwater):');
  console.log(
    o.virtual
      ? `  makespan ÷ bound ${bw.makespanOverBound} ≤ ${ISSUE_34_TARGETS.makespanOverBoundVirtual} (virtual clock): ${mark(met.makespanOverBound)}`
      : `  makespan ÷ bound ${bw.makespanOverBound} < ai-fallback's ${b?.makespanOverBound ?? '—'} (same scaled clock): ${mark(met.makespanOverBound)}`,
  );
  console.log(
    `  top tier done ${bw.topTierDoneS} s ≤ ${ISSUE_34_TARGETS.topTierDoneS} s: ${mark(met.topTierDoneS)}`,
  );
  console.log(
    `  failed ${bw.failedTurns}, degraded ${bw.degradedTurns ?? 0} (target 0 / 0): ${mark(met.failedAndDegraded)}`,
  );
  console.log(
    `  client CPU per logical call ${cpu.estimated ? '≈' : ''}${cpu.ms} ms ≤ ai-fallback's ${b ? clientCpu(b, em).ms : '—'} ms: ${mark(met.cpuPerLogicalCall)}${cpu.estimated ? ' (estimate: see the note)' : ''}`,
  );
  console.log(
    `  upstream ÷ logical ${bw.amplification} ≤ ${ISSUE_34_TARGETS.amplification}: ${mark(met.amplification)}`,
  );
  console.log(`  429s ${bw.upstream429s} ≤ ${ISSUE_34_TARGETS.upstream429s}: ${mark(met.upstream429s)}`);
  console.log();
  console.log(
    o.virtual
      ? `note: breakwater and status-quo ran on the virtual clock with the emulator in their process; the peers and the bare SDK sleep on real timers, so they ran at the scaled clock (emulator at ×timeScale in its own process) — their figures are scaled-clock figures, not virtual ones. "≈" CPU: the process's CPU minus the emulator's share, estimated as ${round(em, 2)} ms per upstream call (the median of this run's emulator processes).`
      : 'note: every system ran at the scaled clock, each against a fresh emulator at ×timeScale in its own process; CPU is the system process’s own.',
  );
  console.log(
    'note: the peers’ configured durations (60 s deadline, modelResetInterval 60 s, halfOpenAfter 10 s, sampling 30 s at 0.2 rps) are simulated and set on real timers ÷ timeScale; the libraries’ own constants (AI SDK backoff 2 s ×2, cockatiel ExponentialBackoff 128 ms ×2) stay real.',
  );
}

function loadRange(values: readonly number[]): string {
  if (values.length === 0) return '—';
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return lo === hi ? `${round(lo, 1)}` : `${round(lo, 1)}…${round(hi, 1)}`;
}
