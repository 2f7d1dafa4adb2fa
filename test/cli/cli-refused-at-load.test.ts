import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, runCli } from './run-cli.ts';

// Issue 42, "Bad input: refused at load, with the place named": each bad input is one line that names
// the place and what to do, and nothing is stored or called before it.

let dir: string;
const servers: Server[] = [];
const held: Socket[] = [];

const scenario = (over: { agent?: string; itemId?: string; title?: string } = {}) =>
  JSON.stringify(
    {
      name: 'load-checks',
      runtime: {
        endpoints: [
          {
            id: 'primary',
            provider: 'openai',
            model: 'gpt-4o',
            emulator: 'openai',
            apiKey: 'sk-load-000000000000000001',
          },
        ],
        chains: { main: ['primary'] },
      },
      agents: [{ name: over.agent ?? 'Kai', chain: 'main' }],
      rounds: { count: 1, items: [{ id: over.itemId ?? 'I1', title: over.title ?? 'one' }] },
      emulator: { acceptAnyKey: true },
    },
    null,
    1,
  );

/** A server on 127.0.0.1 that greets every connection with `greeting` (or stays silent) and holds it. */
async function fakeServer(greeting: string | undefined): Promise<number> {
  const server = createServer((socket) => {
    held.push(socket);
    socket.on('error', () => {});
    if (greeting !== undefined) {
      socket.write(greeting);
      socket.on('data', () => socket.write(greeting));
    }
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const pglite = (name: string) => ['--data-dir', join(dir, name)];
const env = () => cleanEnv({ DATABASE_URL: '' });

async function noRunsIn(name: string): Promise<void> {
  const runs = await runCli(['runs', '--json', ...pglite(name)], env());
  expect(runs.code, runs.stderr).toBe(0);
  expect(JSON.parse(runs.stdout)).toEqual([]);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-load-'));
  writeFileSync(join(dir, 'surrogate.json'), scenario({ title: 'latency \ud800 spike' }));
  writeFileSync(join(dir, 'cjk-agent.json'), scenario({ agent: '小林' }));
  writeFileSync(join(dir, 'latin1.json'), scenario({ agent: 'Kai Müller', itemId: 'Café' }));
  writeFileSync(join(dir, 'tiny.json'), scenario());
});

afterAll(() => {
  for (const s of held) s.destroy();
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('bad input is refused at load, in one line naming the place', () => {
  it('a lone surrogate in an item title: file, line and field; no run stored', async () => {
    const run = await runCli(
      ['run', join(dir, 'surrogate.json'), '--no-stdin', ...pglite('surrogate')],
      env(),
    );
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^breakwater run: .*surrogate\.json:\d+ at rounds\.items\[0\]\.title: holds a lone UTF-16 surrogate \(U\+D800\)/,
    );
    await noRunsIn('surrogate');
  }, 120_000);

  it('an agent name outside Latin-1: refused naming the field; Latin-1 names run end to end', async () => {
    const bad = await runCli(['run', join(dir, 'cjk-agent.json'), '--no-stdin', ...pglite('cjk')], env());
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(
      /cjk-agent\.json:\d+ at agents\[0\]\.name: has "小" \(U\+5C0F\), which cannot travel/,
    );
    await noRunsIn('cjk');

    const ok = await runCli(
      ['run', join(dir, 'latin1.json'), '--no-stdin', '--json', ...pglite('latin1')],
      env(),
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).not.toMatch(/ByteString|431/);
    const report = JSON.parse(ok.stdout) as { status: string };
    expect(report.status).toBe('completed');
    expect(ok.stdout).not.toMatch(/"outcome":\s*"failed"/);
  }, 180_000);

  it('a 100,000-character or non-Latin-1 --run-id: one line, the value not echoed, no run stored', async () => {
    const long = await runCli(
      ['run', join(dir, 'tiny.json'), '--no-stdin', '--run-id', 'r'.repeat(100_000), ...pglite('runid')],
      env(),
    );
    expect(long.code).toBe(1);
    expect(long.stderr.trim()).toBe(
      "breakwater run: --run-id is 100000 characters long; at most 200 (it travels in every call's request headers)",
    );
    const cjk = await runCli(
      ['run', join(dir, 'tiny.json'), '--no-stdin', '--run-id', 'run-東京', ...pglite('runid')],
      env(),
    );
    expect(cjk.code).toBe(1);
    expect(cjk.stderr.trim()).toMatch(
      /^breakwater run: --run-id has "東" \(U\+6771\), which cannot travel in a request header/,
    );
    await noRunsIn('runid');
  }, 120_000);

  it('a dead --emulator-url: the URL (redacted), what happened and what to do; no run stored', async () => {
    const port = await fakeServer(undefined);
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const run = await runCli(
      [
        'run',
        join(dir, 'tiny.json'),
        '--no-stdin',
        '--emulator-url',
        `http://127.0.0.1:${port}/?token=hunter2`,
        ...pglite('emu'),
      ],
      env(),
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `^breakwater run: --emulator-url: no emulator answered at http://127\\.0\\.0\\.1:${port}/.* \\(the connection was refused: nothing listens there\\); start one with \`breakwater emulator\``,
      ),
    );
    expect(run.stderr).not.toContain('hunter2');
    expect(run.stderr).not.toContain('fetch failed');
    await noRunsIn('emu');
  }, 120_000);

  it('an unparsable --database-url: said to be unparsable, the password not shown', async () => {
    const run = await runCli(['runs', '--database-url', 'postgres://app:hunter2@[broken'], env());
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      'breakwater runs: --database-url / DATABASE_URL: does not parse as a URL (it is not shown: it may hold a password); write it as postgres://user@host:5432/database (percent-encode @ : / in the password), or leave it out to use embedded PGlite',
    );
  }, 60_000);

  it('a server speaking garbage on the PostgreSQL port: what answers there is said', async () => {
    const port = await fakeServer('HELLO GARBAGE 1.0 ready\r\n');
    const run = await runCli(['runs', '--database-url', `postgres://app:hunter2@127.0.0.1:${port}/x`], env());
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      `cannot use PostgreSQL at postgres://app@127.0.0.1:${port}/x: something that is not PostgreSQL answers there (it sent "HELLO GARBAGE 1.0 ready`,
    );
    expect(run.stderr).not.toContain('hunter2');
  }, 60_000);

  it('a server speaking garbage on the Redis port: what answers there, not "Please report this"', async () => {
    const port = await fakeServer('HELLO GARBAGE 1.0 ready\r\n');
    const run = await runCli(
      [
        'run',
        join(dir, 'tiny.json'),
        '--no-stdin',
        '--coordination-url',
        `redis://127.0.0.1:${port}`,
        ...pglite('redis'),
      ],
      env(),
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      'something that is not Redis answers there: it sent "HELLO GARBAGE 1.0 ready',
    );
    expect(run.stderr).not.toMatch(/Please report this/);
    await noRunsIn('redis');
  }, 120_000);

  it('a frozen PostgreSQL server (takes the connection, says nothing): one deadline, said as such', async () => {
    const port = await fakeServer(undefined);
    const run = await runCli(
      ['runs', '--database-url', `postgres://postgres@127.0.0.1:${port}/x`],
      cleanEnv({ DATABASE_URL: '', BREAKWATER_DB_TIMEOUT_MS: '1500' }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(
      new RegExp(
        `^breakwater runs: cannot use PostgreSQL at postgres://postgres@127\\.0\\.0\\.1:${port}/x: no answer within 1500 ms`,
      ),
    );
  }, 60_000);
});

describe('a 10 MB scenario', () => {
  it('is read with peak memory at most 10× the file (a child process, its own maxRSS)', async () => {
    const file = join(dir, 'big.json');
    const memory = Object.fromEntries(Array.from({ length: 200 }, (_, j) => [`note${j}`, 'x'.repeat(200)]));
    const spec = JSON.parse(scenario()) as { agents: unknown[] };
    spec.agents = Array.from({ length: 230 }, (_, i) => ({
      name: `A${i}`,
      chain: 'main',
      role: 'r'.repeat(1_000),
      memory,
    }));
    const text = JSON.stringify(spec, null, 1);
    writeFileSync(file, text);
    const size = Buffer.byteLength(text);
    expect(size).toBeGreaterThan(9_000_000);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `const { loadScenario } = await import(${JSON.stringify(join(REPO_ROOT, 'src/scenarios/load-scenario.ts'))});
         const before = process.resourceUsage().maxRSS;
         const s = loadScenario(${JSON.stringify(file)});
         console.log(JSON.stringify({ agents: s.agents.length, before, after: process.resourceUsage().maxRSS }));`,
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    await new Promise((resolve) => child.once('close', resolve));
    const m = JSON.parse(out.trim().split('\n').pop() ?? '{}') as {
      agents: number;
      before: number;
      after: number;
    };
    expect(m.agents, err).toBe(230);
    // maxRSS is in KiB: what reading the file added to the process's peak.
    expect((m.after - m.before) * 1024).toBeLessThanOrEqual(10 * size);
  }, 180_000);
});
