import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, finished, spawnCli } from '../cli/run-cli.ts';

// Issue 19, "done when": hundreds of local clients that open /api/live and never read must not make the
// run hold their events (before: 300 such clients took a run from 0.6 GB to 4.6 GB). The same real
// `breakwater run --viz` runs twice, alone and with 300 stalled readers attached for its whole life; its
// peak resident memory (VmHWM) with them stays within 1.5x of the run alone.

const CLIENTS = 300;
let dir: string;
const sockets: Socket[] = [];
const children: ChildProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-slow-clients-'));
  writeFileSync(
    join(dir, 'scenario.yaml'),
    `name: slow-clients
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-slow-clients-000000000001 }
  chains: { main: [primary] }
agents:
${Array.from({ length: 8 }, (_, i) => `  - { name: Agent${i}, chain: main }`).join('\n')}
rounds:
  count: 2
  items:
${Array.from({ length: 20 }, (_, i) => `    - { id: I${i}, title: Item ${i} }`).join('\n')}
emulator:
  seed: 9
  acceptAnyKey: true
  latency: { minMs: 20, maxMs: 50 }
`,
  );
});
afterAll(() => {
  for (const s of sockets) s.destroy();
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Peak resident memory of a live process, kB (VmHWM never goes down). */
function peakKb(pid: number): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** A client that asks for the live stream and never reads it. */
function stalledReader(port: number): Socket {
  const socket = connect(port, '127.0.0.1', () => {
    socket.write(`GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    socket.pause();
  });
  socket.on('error', () => {});
  sockets.push(socket);
  return socket;
}

async function measuredRun(
  name: string,
  attack: boolean,
): Promise<{ peakKb: number; code: number | null; attached: Socket[] }> {
  const child = spawnCli(
    [
      'run',
      join(dir, 'scenario.yaml'),
      '--viz',
      '--port',
      '0',
      '--no-live',
      '--no-stdin',
      '--data-dir',
      join(dir, name),
    ],
    cleanEnv({ DATABASE_URL: '' }),
  );
  children.push(child);
  const done = finished(child);
  let peak = 0;
  const poll = setInterval(() => {
    peak = Math.max(peak, peakKb(child.pid!) ?? 0);
  }, 100);
  const attached: Socket[] = [];
  let out = '';
  child.stdout?.on('data', (d: Buffer | string) => {
    out += d.toString();
    const m = /visualizer: http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
    if (m && attack && attached.length === 0) {
      for (let i = 0; i < CLIENTS; i++) attached.push(stalledReader(Number(m[1])));
    }
  });
  const run = await done;
  clearInterval(poll);
  return { peakKb: peak, code: run.code, attached };
}

describe('300 clients that open /api/live and never read', () => {
  it('keep the run within 1.5x the peak memory of the same run without them, and the run completes', async () => {
    const alone = await measuredRun('alone', false);
    const attacked = await measuredRun('attacked', true);
    expect(alone.code).toBe(0);
    expect(attacked.code).toBe(0);
    expect(attacked.attached).toHaveLength(CLIENTS);
    console.info(
      `peak RSS alone ${(alone.peakKb / 1024).toFixed(0)} MiB, with ${CLIENTS} stalled /api/live clients ${(attacked.peakKb / 1024).toFixed(0)} MiB (${(attacked.peakKb / alone.peakKb).toFixed(2)}x)`,
    );
    expect(alone.peakKb).toBeGreaterThan(50_000);
    expect(attacked.peakKb).toBeLessThanOrEqual(1.5 * alone.peakKb);
    // What the stalled clients got once they read: at most 16 live streams, the rest a 503 or a close.
    const heads = await Promise.all(
      attacked.attached.map(
        (s) =>
          new Promise<string>((resolve) => {
            let first = '';
            const timer = setTimeout(() => resolve(first), 5_000);
            s.once('data', (d: Buffer) => {
              first = d.toString('latin1', 0, 12);
              clearTimeout(timer);
              resolve(first);
            });
            s.once('close', () => {
              clearTimeout(timer);
              resolve(first);
            });
            s.resume();
          }),
      ),
    );
    const streams = heads.filter((h) => h.startsWith('HTTP/1.1 200')).length;
    expect(streams).toBeGreaterThanOrEqual(1);
    expect(streams).toBeLessThanOrEqual(16);
  }, 300_000);
});
