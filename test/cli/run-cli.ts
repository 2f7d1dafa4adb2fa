import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Runs the real CLI (`node bin/breakwater.js …`) as a child process, from the repository root. */

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/breakwater.js', import.meta.url));

export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The parent's environment without the variables that would change what the CLI does. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['BREAKWATER_DEBUG', 'BREAKWATER_DATA_DIR', 'BREAKWATER_LOG_LEVEL', 'NODE_OPTIONS']) {
    delete env[name];
  }
  return { ...env, ...extra };
}

export function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = cleanEnv()): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Collects a child's output until it exits. */
export function finished(child: ChildProcess): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => {
    stdout += s;
  });
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs the CLI to completion. */
export function runCli(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<CliRun> {
  return finished(spawnCli(args, env));
}

/**
 * Resolves with all stdout seen so far once it matches `pattern`; rejects if the child exits first,
 * or after `giveUpMs` (a guard so the caller's `finally` can still kill the child).
 */
export function waitForOutput(child: ChildProcess, pattern: RegExp, giveUpMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const guard = setTimeout(
      () => reject(new Error(`no ${pattern} after ${giveUpMs} ms:\n${seen}`)),
      giveUpMs,
    );
    let errors = '';
    const onErr = (s: string) => {
      errors += s;
    };
    const onData = (s: string) => {
      seen += s;
      if (pattern.test(seen)) {
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onErr);
        child.off('exit', onExit);
        clearTimeout(guard);
        resolve(seen);
      }
    };
    const onExit = (code: number | null) => {
      clearTimeout(guard);
      reject(new Error(`the CLI exited (${code}) before printing ${pattern}:\n${seen}\n${errors}`));
    };
    child.stdout?.setEncoding('utf8').on('data', onData);
    child.stderr?.setEncoding('utf8').on('data', onErr);
    child.once('exit', onExit);
  });
}
