import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEntryPath, requireCliEntry } from '../../src/cli/cli-entry.ts';
import { startWorkerProcesses, whyItDied } from '../../src/cli/commands/worker-processes.ts';
import { REPO_ROOT } from '../cli/run-cli.ts';

/*
 * How `run --workers` finds the command its workers run, and how it sees one die at start: real child processes
 * (a stand-in entry file), their stderr as Node writes it.
 */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-worker-processes-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the workers’ entry', () => {
  it('is main.js next to the module in a built package, bin/breakwater.js in a checkout', () => {
    expect(cliEntryPath('file:///opt/app/node_modules/breakwater/dist/src/cli/cli-entry.js')).toBe(
      '/opt/app/node_modules/breakwater/dist/src/cli/main.js',
    );
    expect(cliEntryPath('file:///work/breakwater/src/cli/cli-entry.ts')).toBe(
      '/work/breakwater/bin/breakwater.js',
    );
    // This checkout's own (the module as the tests load it).
    expect(requireCliEntry()).toBe(join(REPO_ROOT, 'bin', 'breakwater.js'));
  });

  it('missing from an installed package is one error naming the file and what to do', () => {
    const moduleUrl = pathToFileURL(join(dir, 'dist', 'src', 'cli', 'cli-entry.js')).href;
    expect(() => requireCliEntry(moduleUrl)).toThrow(
      `the breakwater command's entry ${join(dir, 'dist', 'src', 'cli', 'main.js')} is missing, so no worker can be started; reinstall breakwater`,
    );
  });
});

describe('worker processes', () => {
  it('one that dies before joining is reported with its stderr and why; one that joined is not', async () => {
    const entry = join(dir, 'fake-worker.mjs');
    // Worker 1 joins then exits 3 (a death after start: lease takeover's business); worker 2 crashes at import.
    writeFileSync(
      entry,
      `if (process.env.FAKE_INDEX === '1') { console.log(JSON.stringify({ type: 'joined', runId: 'r', worker: 'w1' })); process.exitCode = 3; }
else { throw new Error('cannot load the worker command'); }
`,
    );
    const messages: string[] = [];
    const env = { ...process.env, FAKE_INDEX: '1' };
    const first = startWorkerProcesses({
      entry,
      count: 1,
      databaseUrl: 'postgres://x@127.0.0.1:1/none',
      runId: 'r',
      env,
      onMessage: (m) => messages.push(m.type),
    });
    const exits = await first.exited;
    expect(exits).toMatchObject([{ index: 1, code: 3, joined: true }]);
    expect(messages).toEqual(['joined']);
    const second = startWorkerProcesses({
      entry,
      count: 1,
      databaseUrl: 'postgres://x@127.0.0.1:1/none',
      runId: 'r',
      env: { ...process.env, FAKE_INDEX: '2' },
    });
    const dead = await second.diedAtStart;
    expect(dead).toMatchObject({ index: 1, code: 1, joined: false });
    expect(dead.stderr).toContain('Error: cannot load the worker command');
    expect(dead.stderr).toMatch(/Node\.js v\d+/);
    expect(whyItDied(dead.stderr)).toBe('Error: cannot load the worker command');
  }, 60_000);

  it('whyItDied picks the error line, not the Node.js banner nor a stack frame', () => {
    const crash = `node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/app/node_modules/breakwater/dist/bin/breakwater.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
`;
    expect(whyItDied(crash)).toBe(
      "Error: Cannot find module '/app/node_modules/breakwater/dist/bin/breakwater.js'",
    );
    expect(whyItDied('breakwater worker: run "x" needs an emulator but stored none\n')).toBe(
      'breakwater worker: run "x" needs an emulator but stored none',
    );
    expect(whyItDied('\nNode.js v20.20.2\n')).toBe('');
  });
});
