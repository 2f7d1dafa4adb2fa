import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { startVizServer } from '../../src/viz/viz-server.ts';
import { cleanEnv, REPO_ROOT, runCli } from './run-cli.ts';

// Issue 19, "done when": a scenario with `apiKey: ollama` and an endpoint id containing `ollama`
// completes; `/byok openai <run id>` and `/byok openai Checkout` change nothing stored and the run
// completes; and none of the leak cases prints or stores its secret — each grepped for in stdout,
// stderr, a dump of every table, and the visualizer's responses (live, and replayed from the store).

const dir = mkdtempSync(join(tmpdir(), 'bw-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every row of every table of a store, as text. */
async function dumpDatabase(database: BreakwaterDatabase): Promise<string> {
  const names = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'`.execute(
    database.db,
  );
  const out: string[] = [];
  for (const { table_name } of names.rows) {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table_name)}`.execute(
      database.db,
    );
    for (const r of rows.rows) out.push(`${table_name} ${JSON.stringify(r)}`);
  }
  return out.join('\n');
}

/**
 * Every row of every table of a PGlite data directory, as text; '' when the run left no folder (nothing stored
 * there). Opening a missing folder would make a new, empty cluster only to dump nothing (a second of CPU).
 */
async function dumpDataDir(dataDir: string): Promise<string> {
  if (!existsSync(dataDir)) return '';
  const database = await openDatabase({ dataDir });
  try {
    return await dumpDatabase(database);
  } finally {
    await database.close();
  }
}

/** What the visualizer serves for a stored run (replay APIs, the same server `breakwater viz` runs). */
async function replayResponses(database: BreakwaterDatabase, runId: string): Promise<string> {
  const viz = await startVizServer({ port: 0, store: createRunStore(database), runId });
  try {
    const texts: string[] = [];
    for (const path of [
      '/api/runs',
      `/api/runs/${runId}`,
      `/api/runs/${runId}/events`,
      `/api/runs/${runId}/turns`,
      `/api/runs/${runId}/snapshots`,
    ]) {
      const res = await fetch(`${viz.url}${path}`);
      expect(res.status, path).toBe(200);
      texts.push(await res.text());
    }
    return texts.join('\n');
  } finally {
    await viz.close();
  }
}

describe('ordinary words as keys: apiKey "ollama", /byok openai <run id>, /byok openai Checkout', () => {
  const runId = `ollama-local-run-${process.pid}`;
  const dataDir = join(dir, 'words');
  const file = join(dir, 'ollama-words.yaml');
  // A key of the right shape that the emulator does not know: refused by the provider, never printed.
  const unknownKey = `sk-proj-${randomBytes(16).toString('hex')}`;
  const typedFirst = `mysecret${randomBytes(4).toString('hex')}`;
  let run: { code: number | null; stdout: string; stderr: string };
  let live = '';
  // The run's folder, opened once (after the run: one process at a time) for every check below.
  let opened: Promise<BreakwaterDatabase> | undefined;
  const stored = () => (opened ??= openDatabase({ dataDir }));
  afterAll(async () => {
    await (await opened)?.close();
  });

  beforeAll(async () => {
    writeFileSync(
      file,
      `name: ollama-words
runtime:
  endpoints:
    - { id: ollama-local, provider: openai-compatible, flavor: ollama, model: llama3.1, emulator: ollama, apiKey: ollama }
  chains: { main: [ollama-local] }
  byok:
    templates:
      openai: { provider: openai, model: gpt-4o-mini, emulator: openai }
agents:
  - { name: Kai, chain: main }
  - { name: Yuna, chain: main }
rounds:
  count: 4
  items:
    - { id: U01, title: Checkout latency above 4 s }
    - { id: U02, title: ollama-local capacity }
emulator:
  acceptAnyKey: false
  keys: [{ alias: local, key: ollama }]
  latency: { minMs: 300, maxMs: 500 }
`,
    );
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, 'bin/breakwater.js'),
        'run',
        file,
        '--no-live',
        '--viz',
        '--port',
        '0',
        '--run-id',
        runId,
        '--data-dir',
        dataDir,
      ],
      { cwd: REPO_ROOT, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
    });
    const sawUrl = new Promise<string>((resolve) => {
      child.stdout.setEncoding('utf8').on('data', (s: string) => {
        stdout += s;
        const m = /visualizer: (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
        if (m) resolve(m[1]!);
      });
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    const url = await Promise.race([sawUrl, exited.then(() => undefined)]);
    if (url) {
      // The live feed as a browser gets it, read at the start of the run.
      const res = await fetch(`${url}/api/live`);
      const reader = res.body!.getReader();
      const first = await reader.read();
      live += new TextDecoder().decode(first.value);
      await reader.cancel();
      for (const line of [
        `/byok openai ${runId}`,
        '/byok openai Checkout',
        `/byok ${typedFirst} openai`,
        `/byok openai ${unknownKey}`,
      ]) {
        child.stdin.write(`${line}\n`);
      }
      child.stdin.end();
    }
    const code = await exited;
    run = { code, stdout, stderr };
  }, 180_000);

  it('the run completes: every turn answered by ollama-local, the words stored as they are', async () => {
    expect(run.code, run.stderr).toBe(0);
    const store = createRunStore(await stored());
    const row = await store.getRun(runId);
    expect(row?.status).toBe('completed');
    expect(row?.currentRound).toBe(4);
    const turns = await store.listTurns(runId);
    expect(turns).toHaveLength(4 * 2 * 2);
    expect(new Set(turns.map((t) => t.endpointId))).toEqual(new Set(['ollama-local']));
    expect(new Set(turns.map((t) => t.outcome))).toEqual(new Set(['answered']));
    const checkout = turns.filter((t) => t.itemId === 'U01');
    expect(checkout).toHaveLength(8);
    for (const t of checkout) expect(JSON.stringify(t.prompt)).toContain('Checkout latency above 4 s');
    const events = await store.readEvents(runId);
    expect(events.some((e) => e.type.startsWith('byok.'))).toBe(false);
  });

  it('each /byok line got one answer and changed nothing: two format refusals, an unknown provider, a refused key', () => {
    const answers = run.stdout
      .split('\n')
      .filter((l) => /key|provider/.test(l) && !l.startsWith('visualizer'));
    expect(answers.filter((l) => /is not an OpenAI key: such a key starts with "sk-"/.test(l))).toHaveLength(
      2,
    );
    expect(
      answers.filter((l) =>
        /the provider name is not a BYOK provider \(what was typed is not shown\)/.test(l),
      ),
    ).toHaveLength(1);
    expect(
      answers.filter(
        (l) =>
          l ===
          `openai key sk-proj-…${unknownKey.slice(-4)} refused: auth (401). Check the key and try again.`,
      ),
    ).toHaveLength(1);
  });

  it('the typed word and the refused key are nowhere: stdout, stderr, every table, the live feed, the replay APIs', async () => {
    const dump = await dumpDatabase(await stored());
    const replay = await replayResponses(await stored(), runId);
    expect(dump).toContain('ollama-local');
    expect(replay).toContain('Checkout latency above 4 s');
    expect(live).toContain('event: init');
    for (const [where, text] of Object.entries({
      stdout: run.stdout,
      stderr: run.stderr,
      dump,
      live,
      replay,
    })) {
      expect(text, where).not.toContain(unknownKey);
      expect(text, where).not.toContain(unknownKey.slice(8, 24));
      expect(text, where).not.toContain(typedFirst);
    }
  });
});

describe('leak cases outside BYOK: nothing printed or stored', () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startEmulator({ profile: { acceptAnyKey: true } });
  });
  afterAll(() => emulator?.close());

  const SECRET = `pw${randomBytes(6).toString('hex')}`;
  const scenarioWith = (endpoint: string) => `name: leak
runtime:
  endpoints:
    - ${endpoint}
  chains: { main: [p] }
agents:
  - { name: Kai, chain: main }
rounds:
  count: 1
  items: [{ id: U01, title: t }]
`;

  async function check(args: string[], env: NodeJS.ProcessEnv = cleanEnv(), dataDir?: string) {
    const run = await runCli(args, env);
    expect(run.code).not.toBe(0);
    expect(run.stderr.trim().length).toBeGreaterThan(0);
    const dump = dataDir ? await dumpDataDir(dataDir).catch(() => '') : '';
    for (const [where, text] of Object.entries({ stdout: run.stdout, stderr: run.stderr, dump })) {
      expect(text, where).not.toContain(SECRET);
    }
    return run;
  }

  it('a database password given as ?password= (with BREAKWATER_DEBUG=1: the stack trace too)', async () => {
    const run = await check(
      [
        'run',
        'agent8-storm',
        '--no-stdin',
        '--no-live',
        '--database-url',
        `postgres://postgres@127.0.0.1:1/test?password=${SECRET}`,
      ],
      cleanEnv({ BREAKWATER_DEBUG: '1' }),
    );
    expect(run.stderr).toContain('password=***');
  }, 60_000);

  it('--emulator-url http://admin:PASSWORD@…', async () => {
    const url = new URL(emulator.controlURL);
    const dataDir = join(dir, 'leak-emu');
    const run = await check(
      [
        'run',
        'agent8-storm',
        '--no-stdin',
        '--no-live',
        '--data-dir',
        dataDir,
        '--emulator-url',
        `http://admin:${SECRET}@127.0.0.1:${url.port}`,
      ],
      cleanEnv(),
      dataDir,
    );
    expect(run.stderr.trim()).toBe(
      'breakwater run: --emulator-url must not carry a user or password (the URL is not shown; the emulator needs none); give e.g. http://127.0.0.1:4000',
    );
  }, 60_000);

  it('a baseURL with user:password@ is refused before anything runs, without echoing it', async () => {
    const file = join(dir, 'leak-baseurl.yaml');
    const dataDir = join(dir, 'leak-baseurl');
    writeFileSync(
      file,
      scenarioWith(
        `{ id: p, provider: openai-compatible, model: m, baseURL: "http://user:${SECRET}@127.0.0.1:${new URL(emulator.baseURL('vllm')).port}/v1", apiKey: sk-local-key-0000000001 }`,
      ),
    );
    const run = await check(
      ['run', file, '--no-stdin', '--no-live', '--data-dir', dataDir],
      cleanEnv(),
      dataDir,
    );
    expect(run.stderr).toMatch(
      /at runtime\.endpoints\[0\]\.baseURL: must not carry a user or password \(the URL is not shown\)/,
    );
  }, 60_000);

  it.each([
    ['a Groq-style key (a valid variable name)', () => `gsk_${SECRET}${'A'.repeat(30)}`],
    ['an OpenAI key', () => `sk-proj-${SECRET}${'b'.repeat(20)}`],
  ])(
    'a key pasted into apiKeyEnv: %s',
    async (_what, key) => {
      const file = join(dir, `leak-env-${key().slice(0, 3)}.yaml`);
      const dataDir = join(dir, `leak-env-${key().slice(0, 3)}`);
      writeFileSync(file, scenarioWith(`{ id: p, provider: openai, model: gpt-4o, apiKeyEnv: ${key()} }`));
      const run = await check(
        ['run', file, '--no-stdin', '--no-live', '--data-dir', dataDir],
        cleanEnv(),
        dataDir,
      );
      expect(run.stderr).toMatch(/apiKeyEnv/);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
    },
    60_000,
  );
});
