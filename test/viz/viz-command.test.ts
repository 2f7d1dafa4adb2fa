import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { finished, runCli, spawnCli, waitForOutput } from '../cli/run-cli.ts';

/* The real CLI as a child process, over a PGlite directory holding one recorded run. */

const RUN_ID = 'viz-cli-run';
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'breakwater-viz-'));
  const database = await openDatabase({ dataDir });
  try {
    const store = createRunStore(database);
    await store.createRun({
      runId: RUN_ID,
      scenario: 'cli-demo',
      totalRounds: 2,
      machineVersion: AGENT_MACHINE_VERSION,
    });
    await store.appendEvents(RUN_ID, [
      {
        seq: 1,
        at: 1_000,
        type: 'agent.state',
        agent: 'analyst',
        data: { state: 'queued', previous: 'idle' },
      },
      {
        seq: 2,
        at: 2_000,
        type: 'agent.state',
        agent: 'analyst',
        data: { state: 'cooling', previous: 'queued' },
      },
    ]);
  } finally {
    await database.close();
  }
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('breakwater viz', () => {
  it('without --run lists the runs of the store and serves the runs page until SIGTERM', async () => {
    const child = spawnCli(['viz', '--port', '0', '--data-dir', dataDir]);
    const done = finished(child);
    let out = '';
    try {
      out = await waitForOutput(child, /the runs page at (http:\/\/127\.0\.0\.1:\d+)\//);
      const [, origin] = /the runs page at (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)!;
      expect(await (await fetch(`${origin}/api/config`)).json()).toMatchObject({
        replay: true,
        runId: null,
        live: false,
      });
      const runs = (await (await fetch(`${origin}/api/runs`)).json()) as { runId: string }[];
      expect(runs.map((r) => r.runId)).toEqual([RUN_ID]);
    } finally {
      child.kill('SIGTERM');
    }
    const result = await done;
    expect(result.code).toBe(0);
    expect(out).toContain(`1 run(s) in ${dataDir} (pglite), newest first:`);
    expect(out).toMatch(new RegExp(`${RUN_ID}\\s+running\\s+round 0/2 .* cli-demo`));
    expect(out).toContain('breakwater viz --run <id>');
  });

  it('an unknown run is one line on stderr and exit code 1', async () => {
    const run = await runCli(['viz', '--run', 'no-such-run', '--data-dir', dataDir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toEqual([
      `breakwater viz: no run "no-such-run" in ${dataDir}; \`breakwater viz\` without --run lists the runs`,
    ]);
  });

  it('--run serves the replay page and its event log on 127.0.0.1 until SIGTERM', async () => {
    const child = spawnCli(['viz', '--run', RUN_ID, '--port', '0', '--data-dir', dataDir]);
    const done = finished(child);
    try {
      const out = await waitForOutput(child, /at (http:\/\/127\.0\.0\.1:\d+)\/\?run=(\S+)/);
      const [, origin, run] = /at (http:\/\/127\.0\.0\.1:\d+)\/\?run=(\S+)/.exec(out)!;
      expect(run).toBe(RUN_ID);
      const page = await fetch(`${origin}/?run=${RUN_ID}`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('data-testid="scrubber"');
      expect(await (await fetch(`${origin}/api/config`)).json()).toMatchObject({
        replay: true,
        runId: RUN_ID,
      });
      const events = (await (await fetch(`${origin}/api/runs/${RUN_ID}/events`)).json()) as {
        type: string;
      }[];
      expect(events.map((e) => e.type)).toEqual(['agent.state', 'agent.state']);
    } finally {
      child.kill('SIGTERM');
    }
    const result = await done;
    expect(result.code).toBe(0);
  });

  it('refuses a bad --port with a one-line usage error', async () => {
    const run = await runCli(['viz', '--port', '70000', '--data-dir', dataDir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^breakwater viz: .*--port.*must be an integer from 0 \(a free port\) to 65535/,
    );
  });
});
