import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import { cleanEnv, finished, REPO_ROOT } from '../cli/run-cli.ts';
import { childScript } from '../support/test-child.ts';

const CHILD = childScript(fileURLToPath(new URL('./keep-alive-child.ts', import.meta.url)));

describe('the process stays alive while an ask is pending, and only then', () => {
  it('a script whose only agent cools on a 429 (Retry-After 2 s) gets its answer and exits 0 by itself', async () => {
    const emu = await startEmulator({
      profile: {
        seed: 5,
        latency: { minMs: 0, maxMs: 0 },
        faults: [{ kind: 'rate_limit', match: { flavor: 'openai' }, count: 1, retryAfterMs: 2_000 }],
      },
    });
    try {
      const child = spawn(process.execPath, [CHILD, emu.baseURL('openai')], {
        cwd: REPO_ROOT,
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Bounded: a process that never ends is killed and fails the test (exit by signal, not 0).
      const kill = setTimeout(() => child.kill('SIGKILL'), 45_000);
      const run = await finished(child).finally(() => clearTimeout(kill));
      // Before: exit code 13 (an unsettled top-level await) with nothing printed.
      expect(run.signal).toBeNull();
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout.trim())).toEqual({
        outcome: 'answered',
        faults: ['rate_limited'],
        state: 'running',
      });
    } finally {
      await emu.close();
    }
  }, 60_000);
});
