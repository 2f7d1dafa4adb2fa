import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SystemName, SystemRun } from './goodput-system.ts';

const CHILD = resolve(dirname(fileURLToPath(import.meta.url)), 'goodput-child.ts');

/** Runs one system of the goodput bench in its own process (`goodput-child.ts`) and returns its result. */
export async function runSystemProcess(system: SystemName, flags: readonly string[]): Promise<SystemRun> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-goodput-'));
  const out = join(dir, 'result.json');
  try {
    const code = await new Promise<number | null>((res, rej) => {
      const child = spawn(process.execPath, ['--import', 'tsx', CHILD, system, ...flags], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, BENCH_GOODPUT_OUT: out },
      });
      child.once('error', rej);
      child.once('exit', res);
    });
    if (code !== 0) throw new Error(`${system}: its process exited with ${code}`);
    return JSON.parse(await readFile(out, 'utf8')) as SystemRun;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
