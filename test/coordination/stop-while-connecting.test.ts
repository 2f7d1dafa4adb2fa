import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';
import { childScript } from '../support/test-child.ts';

/*
 * A supervisor stopped while its coordination backend is still connecting must leave nothing open: a worker makes
 * a runtime per batch of parts, and a batch answered from the call memo stops it within milliseconds. Before the
 * fix, PostgreSQL's LISTEN connection was opened after close() had run, and the worker never exited (a
 * `run --workers` waited on it for good), and the connect's statements ran into the pool close() had ended and
 * were logged as the backend failing.
 */
const CHILD = childScript(fileURLToPath(new URL('./stop-while-connecting-child.ts', import.meta.url)));
// Every ms from 0 to 59: the connect's steps take a few ms each, so some stops land in each of them.
const STOP_AFTER_MS = Array.from({ length: 60 }, (_, i) => i);

function runChild(
  coordination: CoordinationOptions,
): Promise<{ code: number | null; out: string; err: string }> {
  const spec = { coordination, stopAfterMs: STOP_AFTER_MS, reportAfterMs: 8_000 };
  const child = spawn(process.execPath, [CHILD, JSON.stringify(spec)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  // Bounded: a child still alive well after its own report is killed (by pid: only this child).
  const guard = setTimeout(() => child.kill('SIGKILL'), 40_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(guard);
      resolve({ code, out, err });
    }),
  );
}

describe.each(coordinationCases())('$name: a supervisor stopped while connecting', ({ options: make }) => {
  let options: CoordinationOptions | undefined;
  afterEach(async () => {
    if (options) await cleanPool(options);
  });

  it('leaves no connection open: the process exits by itself', async () => {
    options = make();
    const { code, out, err } = await runChild(options);
    expect(out, err).toContain('stopped');
    expect(out, err).not.toContain('still alive');
    expect(code, `${out}\n${err}`).toBe(0);
    // A stop while connecting is not a coordination failure: no error line (it once said "Cannot use a pool
    // after calling end on the pool" at level 50, the connect's statements running into the closed pool).
    expect(err).not.toMatch(/"level":(50|60)/);
  }, 60_000);
});
