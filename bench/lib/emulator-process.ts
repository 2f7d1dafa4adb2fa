import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { EmulatorFlavor, EmulatorProfile, EmulatorStats } from '../../src/emulator/emulator-types.ts';

const CHILD = resolve(dirname(fileURLToPath(import.meta.url)), 'emulator-child.ts');

/** A provider emulator running in a child process (127.0.0.1 only). */
export interface EmulatorProcess {
  readonly controlURL: string;
  readonly pid: number;
  baseURL(flavor: EmulatorFlavor): string;
  /** `GET /_emulator/stats` (the calls list is the last 100 000 calls). */
  stats(): Promise<EmulatorStats>;
  /** `POST /_emulator/reset`: clears stats, quota windows and fault counters. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the emulator in a child process (`node --import tsx`), with `profile`.
 *
 * @example
 * ```ts
 * const emu = await startEmulatorProcess({ latency: { minMs: 0, maxMs: 0 } });
 * new OpenAI({ apiKey: 'sk-bench', baseURL: emu.baseURL('openai') });
 * await emu.close();
 * ```
 */
export async function startEmulatorProcess(profile: EmulatorProfile = {}): Promise<EmulatorProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_EMULATOR_PROFILE: JSON.stringify(profile) },
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((res, rej) => {
    child.once('exit', (code) => rej(new Error(`emulator child exited with ${code} before it listened`)));
    lines.once('line', res);
  });
  lines.close();
  const { controlURL, urls } = JSON.parse(first) as { controlURL: string; urls: Record<string, string> };
  let closed: Promise<void> | undefined;
  return {
    controlURL,
    pid: child.pid!,
    baseURL: (flavor) => {
      const url = urls[flavor];
      if (!url) throw new Error(`the emulator has no ${flavor} listener`);
      return url;
    },
    async stats() {
      // The stats body carries up to 100 000 call records; a read cut short under load is tried again.
      for (let attempt = 1; ; attempt++) {
        try {
          const res = await fetch(`${controlURL}/_emulator/stats`);
          return (await res.json()) as EmulatorStats;
        } catch (e) {
          if (attempt >= 3) throw e;
        }
      }
    },
    async reset() {
      const res = await fetch(`${controlURL}/_emulator/reset`, { method: 'POST' });
      await res.arrayBuffer();
    },
    close() {
      closed ??= new Promise<void>((res) => {
        if (child.exitCode !== null) return res();
        child.once('exit', () => res());
        child.stdin?.end();
        // A child that ignores the end of stdin is stopped by its own pid after a grace period.
        setTimeout(() => child.kill('SIGTERM'), 3_000).unref();
      });
      return closed;
    },
  };
}
