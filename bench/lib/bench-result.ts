import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where every benchmark writes its JSON. */
export const RESULTS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'results');

/** The machine a figure was measured on: benchmarks on shared 2-core machines drift, so say which. */
export interface MachineInfo {
  readonly cores: number;
  readonly cpu: string;
  readonly memoryGb: number;
  readonly platform: string;
  /** 1-minute load average when the result was written (other work sharing the machine). */
  readonly loadAverage: number;
}

/** Describes this machine. */
export function machineInfo(): MachineInfo {
  return {
    cores: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform}-${process.arch}`,
    loadAverage: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}

/**
 * Writes `bench/results/<name>.json` with `date`, `node`, `machine` and the benchmark's fields, and
 * returns the path.
 */
export async function writeResult(name: string, fields: Record<string, unknown>): Promise<string> {
  const path = resolve(RESULTS_DIR, `${name}.json`);
  await mkdir(RESULTS_DIR, { recursive: true });
  const body = {
    benchmark: name,
    date: new Date().toISOString(),
    node: process.version,
    machine: machineInfo(),
    command: `npm run bench:${name}${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    ...fields,
  };
  await writeFile(path, `${JSON.stringify(body, null, 2)}\n`);
  return path;
}

/** One line of a printed table: label padded, then the values. */
export function row(label: string, ...values: readonly (string | number)[]): string {
  return `${label.padEnd(34)}${values.map((v) => String(v).padStart(14)).join('')}`;
}
