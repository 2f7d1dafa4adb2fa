import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runRunCommand } from '../../src/cli/commands/run-command.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { cleanEnv, finished, REPO_ROOT } from '../cli/run-cli.ts';
import { CANARY_RUN_SPEC } from './byok-run-spec.ts';

// `breakwater run` reads `/byok PROVIDER KEY` from stdin while the run goes: in-process through
// runRunCommand (a PassThrough as stdin), and as the real CLI in a child process with stdin a pipe that
// is never closed (the run must still end by itself). The key is never printed.

const USER_KEY = 'sk-proj-cliUser0000000000000000000a1b2';
const dir = mkdtempSync(join(tmpdir(), 'byok-cli-'));
const scenarioFile = join(dir, 'byok-cli.json');
writeFileSync(
  scenarioFile,
  JSON.stringify({
    ...CANARY_RUN_SPEC,
    name: 'byok-cli',
    emulator: {
      ...CANARY_RUN_SPEC.emulator,
      // Slow enough that a line written once the run has started lands while turns are still being asked: the run
      // takes ~3 s, the key's check one call. At 100–200 ms the run once ended in 1 s, before the check got its
      // call, on a machine running four test files beside it (the check was cancelled with the run).
      latency: { minMs: 400, maxMs: 600 },
      keys: [...(CANARY_RUN_SPEC.emulator.keys ?? []), { alias: 'cli-user', key: USER_KEY }],
    },
  }),
);
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function byokTurns(dataDir: string): Promise<number> {
  const database = await openDatabase({ dataDir });
  try {
    const rows = await database.db.selectFrom('turns').select('endpoint_id').execute();
    return rows.filter((r) => r.endpoint_id?.startsWith('byok:default:openai:')).length;
  } finally {
    await database.close();
  }
}

function spawnRun(args: string[]): ChildProcess {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin/breakwater.js'), 'run', scenarioFile, ...args],
    {
      cwd: REPO_ROOT,
      env: cleanEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  return child;
}

describe('breakwater run: /byok on stdin', () => {
  it('in process: the hint, then one line for the key; the agents go on with it; the key is never printed', async () => {
    const input = new PassThrough();
    const printed: string[] = [];
    const dataDir = join(dir, 'in-process');
    await runRunCommand({
      scenario: scenarioFile,
      dataDir,
      live: false,
      input,
      print: (line) => {
        printed.push(line);
        if (line.startsWith('type /byok')) input.write(`/byok openai ${USER_KEY}\n`);
      },
    });
    expect(printed[0]).toBe(
      'type /byok PROVIDER KEY and Enter to go on with your own key; providers: openai',
    );
    expect(printed).toContain('openai key sk-proj-…a1b2 active for session default');
    expect(printed.join('\n')).not.toContain(USER_KEY);
    expect(await byokTurns(dataDir)).toBeGreaterThan(0);
  });

  it('the real CLI, stdin a pipe left open: the key is taken, the run ends by itself, stdout never shows the key', async () => {
    const dataDir = join(dir, 'child');
    const child = spawnRun(['--no-live', '--data-dir', dataDir]);
    const done = finished(child);
    let seen = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (d: Buffer) => {
        seen += d.toString();
        if (seen.includes('type /byok PROVIDER KEY')) {
          child.stdin?.write(`/byok openai ${USER_KEY}\n`);
          resolve();
        }
      });
      child.once('exit', () => reject(new Error(`exited before the /byok hint:\n${seen}`)));
    });
    const run = await done;
    const out = seen + run.stdout;
    expect(run.code, run.stderr).toBe(0);
    expect(out).toContain('openai key sk-proj-…a1b2 active for session default');
    expect(out + run.stderr).not.toContain(USER_KEY);
    expect(await byokTurns(dataDir)).toBeGreaterThan(0);
  });

  it('--no-stdin: no hint, nothing read, and the run still ends with stdin open', async () => {
    const dataDir = join(dir, 'no-stdin');
    const child = spawnRun(['--no-live', '--no-stdin', '--data-dir', dataDir]);
    child.stdin?.write(`/byok openai ${USER_KEY}\n`);
    const run = await finished(child);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain('/byok PROVIDER KEY');
    expect(run.stdout).not.toContain('active for session');
    expect(await byokTurns(dataDir)).toBe(0);
  });
});
