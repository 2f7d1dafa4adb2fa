import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from './run-cli.ts';

// Issue 19, the small ones: each bad input gets one clear line that names the place and what to do.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-hostile-'));
  writeFileSync(
    join(dir, 'tiny.yaml'),
    `name: tiny
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-tiny-000000000000000001 }
  chains: { main: [primary] }
agents:
  - { name: Kai, chain: main }
rounds:
  count: 1
  items: [{ id: I1, title: one }]
emulator: { acceptAnyKey: true }
`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the CLI on hostile or careless input', () => {
  it('--json --viz: stdout is exactly one JSON object (the visualizer URL goes to stderr)', async () => {
    const run = await runCli(
      [
        'run',
        join(dir, 'tiny.yaml'),
        '--json',
        '--viz',
        '--port',
        '0',
        '--no-stdin',
        '--data-dir',
        join(dir, 'json'),
      ],
      cleanEnv({ DATABASE_URL: '' }),
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { status: string; runId: string };
    expect(report.status).toBe('completed');
    expect(run.stdout.trimStart().startsWith('{')).toBe(true);
    expect(run.stderr).toMatch(/^visualizer: http:\/\/127\.0\.0\.1:\d+$/m);
  }, 120_000);

  it("resume '' is refused, not a new run", async () => {
    const run = await runCli(
      ['resume', '', '--no-stdin', '--data-dir', join(dir, 'resume')],
      cleanEnv({ DATABASE_URL: '' }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      'breakwater resume: resume needs the id of a run; `breakwater runs` lists them',
    );
    const runs = await runCli(
      ['runs', '--json', '--data-dir', join(dir, 'resume')],
      cleanEnv({ DATABASE_URL: '' }),
    );
    expect(JSON.parse(runs.stdout)).toEqual([]);
  }, 120_000);

  it('--data-dir /proc/self: one line naming the directory, never [object Object]', async () => {
    const run = await runCli(['runs', '--data-dir', '/proc/self'], cleanEnv({ DATABASE_URL: '' }));
    expect(run.code).toBe(1);
    expect(run.stderr).not.toContain('[object Object]');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^breakwater runs: cannot use PGlite data directory \/proc\/self: .+; fix --data-dir \/ BREAKWATER_DATA_DIR$/m,
    );
  }, 60_000);

  it('--emulator-url that is not a URL: one line, nothing echoed', async () => {
    const run = await runCli(
      [
        'run',
        join(dir, 'tiny.yaml'),
        '--no-stdin',
        '--emulator-url',
        'not a url',
        '--data-dir',
        join(dir, 'e'),
      ],
      cleanEnv({ DATABASE_URL: '' }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      'breakwater run: --emulator-url is not a URL; give its control URL, e.g. http://127.0.0.1:4000',
    );
  }, 60_000);
});
