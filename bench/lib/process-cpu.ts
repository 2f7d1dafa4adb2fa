import { readFileSync } from 'node:fs';

/** CPU time (µs) a process used so far, from /proc (Linux): user + system; NaN where /proc cannot be read. */
export function processCpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat (1-based), in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}
