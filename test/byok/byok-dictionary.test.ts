import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { cleanEnv, finished, REPO_ROOT, waitForOutput } from '../cli/run-cli.ts';
import { dictionary, recoveredWords } from './key-dictionary-attack.ts';

// Issue 42, "Secrets that can't be guessed": a BYOK key that is an ordinary dictionary word is used for a
// whole `breakwater run` (the real CLI, typed on its stdin). Everything that run let out is captured — its
// stdout and stderr, every row of every table (events included), what `breakwater report`, `runs` and the
// visualizer's pages and APIs serve, and every request that went upstream (head and body; only the
// Authorization header's value, which carries the key by design, is left out) — and a 1,000-word
// dictionary is tried against it in every fingerprint form (key-dictionary-attack.ts). The word is not
// recovered.

const WORD = 'vertex';
const PLATFORM_KEY = 'sk-platform-dictionary-000000000001';
const BIN = join(REPO_ROOT, 'bin/breakwater.js');
const dir = mkdtempSync(join(tmpdir(), 'bw-dict-'));
const dataDir = join(dir, 'pglite');
const captured: string[] = [];
const upstream: string[] = [];
let emulator: Emulator;
let proxy: Server;
let byokEndpoints: string[] = [];

/** Forwards every request to the emulator's listener and records what it carried, auth values excepted. */
async function startRecordingProxy(target: URL): Promise<Server> {
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const head = req.rawHeaders
        .map((v, i, all) =>
          i % 2 === 1 && /^(authorization|x-api-key|x-goog-api-key|api-key)$/i.test(all[i - 1]!)
            ? '[auth]'
            : v,
        )
        .join('\n');
      upstream.push(`${req.method} ${req.url}\n${head}\n\n${body.toString('utf8')}`);
      // Host names the emulator's listener, as a reverse proxy sends it (the emulator answers only its own names).
      const out = request(
        {
          host: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, host: target.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function cli(args: string[], stdin: 'pipe' | 'ignore' = 'ignore'): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    env: cleanEnv({ DATABASE_URL: '' }),
    stdio: [stdin, 'pipe', 'pipe'],
  });
}

async function capture(args: string[]): Promise<void> {
  const run = await finished(cli(args));
  captured.push(run.stdout, run.stderr);
}

beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      seed: 7,
      acceptAnyKey: false,
      answerTokens: 40,
      keys: [
        { alias: 'platform', key: PLATFORM_KEY, credit: 500 },
        { alias: 'word', key: WORD },
      ],
    },
  });
  const base = new URL(emulator.baseURL('openai'));
  proxy = await startRecordingProxy(base);
  const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${base.pathname.replace(/\/$/, '')}`;
  const scenario = join(dir, 'dictionary.json');
  writeFileSync(
    scenario,
    JSON.stringify({
      name: 'byok-dictionary',
      runtime: {
        endpoints: [
          { id: 'primary', provider: 'openai', model: 'gpt-4o', baseURL: proxied, apiKey: PLATFORM_KEY },
        ],
        chains: { main: ['primary'] },
        agentDefaults: { maxWaitMs: 2_000 },
        byok: {
          templates: { mine: { provider: 'openai-compatible', model: 'gpt-4o-mini', baseURL: proxied } },
        },
      },
      agents: [
        { name: 'Kai', role: 'You are Kai.', chain: 'main' },
        { name: 'Yuna', role: 'You are Yuna.', chain: 'main' },
      ],
      rounds: {
        count: 3,
        items: [
          { id: 'A1', title: 'Checkout latency' },
          { id: 'A2', title: 'Credit ran out' },
          { id: 'A3', title: 'Bring your own key' },
        ],
      },
    }),
  );

  const child = cli(['run', scenario, '--data-dir', dataDir], 'pipe');
  const done = finished(child);
  try {
    // The key is typed once the console listens, as a user would.
    await waitForOutput(child, /type \/byok PROVIDER KEY/, 60_000).catch(() => undefined);
    child.stdin?.write(`/byok mine ${WORD}\n`);
  } finally {
    const run = await done;
    captured.push(run.stdout, run.stderr);
  }

  const database = await openDatabase({ dataDir });
  let runId = '';
  try {
    const names = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'`.execute(
      database.db,
    );
    for (const { table_name } of names.rows) {
      const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table_name)}`.execute(
        database.db,
      );
      for (const r of rows.rows) captured.push(JSON.stringify(r));
      if (table_name === 'turns') {
        byokEndpoints = [
          ...new Set(
            rows.rows.map((r) => String(r.endpoint_id ?? '')).filter((id) => id.startsWith('byok:')),
          ),
        ];
      }
      if (table_name === 'runs') runId = String(rows.rows[0]?.id ?? rows.rows[0]?.run_id ?? '');
    }
  } finally {
    await database.close();
  }

  await capture(['runs', '--json', '--data-dir', dataDir]);
  await capture(['report', runId, '--data-dir', dataDir]);
  await capture(['report', runId, '--json', '--data-dir', dataDir]);
  const viz = cli(['viz', '--run', runId, '--port', '0', '--data-dir', dataDir]);
  const vizDone = finished(viz);
  try {
    const banner = await waitForOutput(viz, /at (http:\/\/127\.0\.0\.1:\d+)\//, 60_000);
    const url = /at (http:\/\/127\.0\.0\.1:\d+)\//.exec(banner)![1]!;
    const id = encodeURIComponent(runId);
    for (const path of [
      '/',
      '/api/config',
      '/api/runs',
      `/api/runs/${id}`,
      `/api/runs/${id}/events?limit=10000`,
      `/api/runs/${id}/turns`,
      `/api/runs/${id}/report`,
      `/api/runs/${id}/snapshots?agent=Kai`,
      `/api/runs/${id}/snapshots?agent=Yuna`,
    ]) {
      const res = await fetch(`${url}${path}`);
      captured.push(await res.text());
    }
  } finally {
    viz.kill('SIGTERM');
    const run = await vizDone;
    captured.push(run.stdout, run.stderr);
  }
}, 300_000);

afterAll(async () => {
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  await emulator?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a BYOK key that is a dictionary word', () => {
  it('the attack finds a word key in every form a fingerprint used to take, and in a salt kept beside it', () => {
    // The detector itself: what the old fingerprint and a stored salt would have let out is recovered.
    const words = dictionary();
    expect(words).toHaveLength(1_000);
    expect(words).toContain(WORD);
    const old = createHash('sha256').update(WORD).digest('hex').slice(0, 8);
    expect(recoveredWords([`key fingerprint ${old}`], words)).toContain(WORD);
    expect(recoveredWords([`{"endpoint_id":"byok:default:mine:${old}"}`], words)).toContain(WORD);
    const salt = randomBytes(32).toString('hex');
    const salted = createHmac('sha256', Buffer.from(salt, 'hex')).update(WORD).digest('hex').slice(0, 8);
    expect(recoveredWords([`{"salt":"${salt}"}`, `byok:default:mine:${salted}`], words)).toContain(WORD);
  });

  it('the run used the key, and nothing it printed, stored, served or sent upstream gives the word back', () => {
    // The key answered turns (so its fingerprint was printed, stored, served and sent upstream)...
    expect(byokEndpoints).toHaveLength(1);
    expect(byokEndpoints[0]).toMatch(/^byok:default:mine:[0-9a-f]{8}$/);
    expect(emulator.stats().byKey.word).toBeGreaterThan(1);
    const text = captured.join('\n');
    expect(text).toContain(byokEndpoints[0]);
    expect(upstream.length).toBeGreaterThan(3);
    // ...and the dictionary gets nothing from any of it.
    const recovered = recoveredWords([...captured, ...upstream], dictionary());
    expect(recovered).not.toContain(WORD);
  });
});
