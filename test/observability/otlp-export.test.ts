import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, finished, spawnCli } from '../cli/run-cli.ts';

/*
 * `breakwater run` with the standard OTEL_EXPORTER_OTLP_ENDPOINT set: its spans reach an OTLP/HTTP collector
 * (here a local server that records what it is sent).
 */

const KEY = 'sk-otlp-drill-canary-0000000001';
let dir: string;
let collector: Server;
let url: string;
const bodies: { path: string; body: string }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bw-otlp-'));
  writeFileSync(
    join(dir, 'scenario.yaml'),
    `
name: otlp-drill
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: ${KEY} }
  chains: { main: [primary] }
agents:
  - { name: Kai, chain: main }
  - { name: Yuna, chain: main }
rounds:
  count: 1
  items:
    - { id: I1, title: Item 1 }
    - { id: I2, title: Item 2 }
emulator:
  seed: 5
  latency: { minMs: 10, maxMs: 30 }
`,
  );
  collector = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      bodies.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await new Promise<void>((r) => collector.close(() => r()));
});

describe('breakwater run with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('exports turn and attempt spans to the collector, with no key in them', async () => {
    const run = await finished(
      spawnCli(
        ['run', join(dir, 'scenario.yaml'), '--no-live', '--no-stdin', '--data-dir', join(dir, 'data')],
        cleanEnv({ DATABASE_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: url }),
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const traces = bodies.filter((b) => b.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    const all = traces.map((t) => t.body).join('\n');
    const names = [...all.matchAll(/"name":"([^"]+)"/g)].map((m) => m[1]);
    expect(names.filter((n) => n?.startsWith('invoke_agent '))).toHaveLength(4);
    expect(names.filter((n) => n === 'chat gpt-4o').length).toBeGreaterThanOrEqual(4);
    expect(all).toContain('gen_ai.usage.input_tokens');
    expect(all).toMatch(/"key":"service\.name","value":\{"stringValue":"breakwater"\}/);
    expect(all).not.toContain(KEY);
  }, 120_000);

  // The process exiting at all is the claim: a CLI held open by the exporter would hit this test's own timeout.
  it('a collector that refuses: the run completes, one line says the traces were lost, the process exits', async () => {
    // A port nobody listens on (bound, then closed).
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const deadPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const run = await finished(
      spawnCli(
        ['run', join(dir, 'scenario.yaml'), '--no-live', '--no-stdin', '--data-dir', join(dir, 'data2')],
        cleanEnv({ DATABASE_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${deadPort}` }),
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^result PASS/m);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^breakwater run: traces could not all be sent to http://127\\.0\\.0\\.1:${deadPort} \\(.+\\); the run itself is unaffected$`,
      ),
    );
  }, 120_000);

  it('an endpoint that is not a URL: one line, non-zero, the value not echoed', async () => {
    const run = await finished(
      spawnCli(
        ['run', join(dir, 'scenario.yaml'), '--no-live', '--no-stdin', '--data-dir', join(dir, 'data3')],
        cleanEnv({ DATABASE_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url token=s3cr3t' }),
      ),
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      'breakwater run: OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL; give the collector like http://127.0.0.1:4318, or unset it',
    ]);
    expect(run.stderr + run.stdout).not.toContain('s3cr3t');
  }, 60_000);
});
