import type { ChildProcess } from 'node:child_process';

/*
 * The crash drill shared by the crash tests (PostgreSQL server and PGlite): the scenario, a seeded random source,
 * and running a CLI child until it exits or is killed.
 */

export const KILLS = 20;
export const AGENTS = ['Kai', 'Yuna', 'Miso'];
export const ITEMS = 8;
export const ROUNDS = 5;

export const SCENARIO = `
name: crash-drill
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-crash-primary-000000000001 }
    - { id: backup, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: sk-ant-crash-backup-0002 }
  chains: { main: [primary, backup] }
  concurrency: { limit: 3 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}.", memory: { desk: ${a.toLowerCase()} } }`).join('\n')}
rounds:
  count: ${ROUNDS}
  items:
${Array.from({ length: ITEMS }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 4
`;

/** Seeded so a failure can be replayed. */
export function mulberry32(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs the child until it exits, or kills it with SIGKILL after `killAfterMs`. Resolves true when killed. */
export function runOrKill(
  child: ChildProcess,
  killAfterMs: number | undefined,
): Promise<{ killed: boolean; code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  child.stdout?.resume();
  return new Promise((resolve) => {
    const timer =
      killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('exit', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ killed: signal === 'SIGKILL', code, stderr });
    });
  });
}
