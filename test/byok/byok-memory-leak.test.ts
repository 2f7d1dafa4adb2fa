import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { cleanEnv, REPO_ROOT } from '../cli/run-cli.ts';
import { keyForms } from '../support/key-forms.ts';
import { type MemoryScan, scanProcessMemory } from '../support/process-memory.ts';
import { findKeyInSnapshot, type HeapHit, leakReport } from './heap-retainers.ts';

// Issue 19, "done when": the raw-memory leak test on the real CLI. `breakwater run` runs as a child
// process; a canary key is typed as `/byok openai KEY` on its real stdin pipe; then the child's whole
// writable memory (/proc/<pid>/mem, read while it is stopped) is searched for the key as UTF-8/Latin-1,
// UTF-16LE, UTF-32LE, char-code arrays, hex and base64 (every alignment), and split in two halves:
//   A. live, right after its check call (no call using it in flight);
//   B. live, after agents used it for real calls, between two uses (a call in flight during the sample
//      makes the sample void: it is taken again);
//   C. after it expired (its idle TTL, wall time, 30 s), while the run goes on.
// Each must find no copy; after expiry a V8 heap snapshot of the CLI is searched too. The emulator runs here, in the parent, so the child's memory holds the key
// only where breakwater put it. The detectors themselves are tested in leak-detectors.test.ts.

const dir = mkdtempSync(join(tmpdir(), 'bw-memleak-'));
const PLATFORM_KEY = 'sk-emu-platform-memleak-0001';
const CANARY = `sk-proj-mem${randomBytes(20).toString('hex')}`;
const forms = keyForms(CANARY);
let emulator: Emulator;
let child: ChildProcess | undefined;
let stdout = '';
let stderr = '';
const scans: Record<string, MemoryScan> = {};
let expiredHeap: HeapHit[] | undefined;
const snapshots = join(dir, 'snapshots');
const scanMs: number[] = [];
const observed: { byokCalls: number; sampleRetries: number; ranAfterExpiry: boolean } = {
  byokCalls: 0,
  sampleRetries: 0,
  ranAfterExpiry: false,
};

const canaryCalls = () => emulator.stats().calls.filter((c) => c.key === 'canary');

/**
 * Waits for `done`, polled every 50 ms, at most `maxMs` of wall time. Not a count of polls: on a loaded machine
 * a 50 ms timer fires far later, and 1 200 polls took minutes, so the hook's own timeout ran out first.
 */
async function until(what: string, done: () => boolean, maxMs = 60_000): Promise<void> {
  for (const since = Date.now(); !done(); ) {
    if (Date.now() - since > maxMs) throw new Error(`${what}: not within ${maxMs} ms\n${stdout}\n${stderr}`);
    if (child?.exitCode !== null)
      throw new Error(`${what}: the CLI exited (${child?.exitCode})\n${stdout}\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Stops the child, scans its memory, lets it go on. Void when a call with the key was around. */
async function sample(name: string, quietAround: boolean): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = canaryCalls().length;
    const stoppedAt = Date.now();
    process.kill(child!.pid!, 'SIGSTOP');
    let scan: MemoryScan;
    try {
      scan = scanProcessMemory(child!.pid!, forms);
      scanMs.push(Date.now() - stoppedAt);
    } finally {
      process.kill(child!.pid!, 'SIGCONT');
    }
    if (!quietAround) {
      scans[name] = scan;
      return;
    }
    // A call whose request reached the emulator around the stop may have had its key in a request buffer.
    await new Promise((r) => setTimeout(r, 600));
    const around = canaryCalls().filter((c) => c.startedAt >= stoppedAt - 200);
    if (canaryCalls().length === before && around.length === 0) {
      scans[name] = scan;
      return;
    }
    observed.sampleRetries++;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`${name}: no quiet moment in 5 tries`);
}

beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      seed: 19,
      acceptAnyKey: false,
      latency: { minMs: 40, maxMs: 80 },
      keys: [
        { alias: 'platform', key: PLATFORM_KEY },
        { alias: 'canary', key: CANARY },
      ],
    },
  });
  mkdirSync(snapshots);
  const scenario = join(dir, 'byok-memory.yaml');
  writeFileSync(
    scenario,
    `name: byok-memory
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: ${PLATFORM_KEY} }
  chains: { main: [primary] }
  concurrency: { limit: 3 }
  breaker: { consecutiveToOpen: 1, openMs: 1500, probesToClose: 1 }
  retry: { minRetriesPerWindow: 10000 }
  creditCooldownMs: 2000
  # Long enough that a loaded machine's pauses do not send the agents to degraded answers before they use the key.
  agentDefaults: { maxWaitMs: 5000 }
  byok:
    # Wall time, and it runs while a scan holds the process stopped (7 s on a quiet machine, far longer under load):
    # at 15 s, a loaded machine's first scan used it up before the agents ever called with the key.
    idleTtlMs: 30000
    templates:
      openai: { provider: openai, model: gpt-4o-mini, emulator: openai }
agents:
  - { name: Kai, chain: main }
  - { name: Yuna, chain: main }
  - { name: Miso, chain: main }
rounds:
  count: 1000
  items:
    - { id: U01, title: Checkout latency }
emulator:
  acceptAnyKey: false
  keys: [{ alias: platform, key: ${PLATFORM_KEY} }]
`,
  );
  child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'bin/breakwater.js'),
      'run',
      scenario,
      '--no-live',
      '--emulator-url',
      emulator.controlURL,
      '--data-dir',
      join(dir, 'data'),
    ],
    {
      cwd: REPO_ROOT,
      // SIGUSR2 makes the CLI write a heap snapshot (after a full GC) into the snapshot folder.
      env: cleanEnv({ NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshots}` }),
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  child.stdout!.setEncoding('utf8').on('data', (s: string) => {
    stdout += s;
  });
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });

  await until('the /byok hint', () => stdout.includes('type /byok PROVIDER KEY'));
  // Typed on the real pipe from a buffer of the parent; the child reads bytes.
  child.stdin!.write(Buffer.from(`/byok openai ${CANARY}\n`));
  await until('the key active', () => /openai key sk-proj-….{4} active for session default/.test(stdout));
  await sample('A: live, after its check', true);

  // The platform key runs out of credit: the agents go on with the user's key for real calls.
  const fault = emulator.addFault({ kind: 'credit_exhausted', match: { key: 'platform' } });
  await until('agents calling with the key', () => canaryCalls().length >= 6);
  emulator.removeFault(fault);
  observed.byokCalls = canaryCalls().length;
  // Between two uses: the platform key answers again and the user's key rests (its TTL is 30 s; a scan
  // takes a few seconds of it, the process stopped).
  const restedSince = () => Math.max(...canaryCalls().map((c) => c.endedAt));
  await until('the key resting', () => Date.now() - restedSince() > 1_000, 20_000);
  await sample('B: live, between uses', true);

  await until(
    'the key expired',
    () => /for session default expired \(not used for its idle time\)/.test(stdout),
    60_000,
  );
  await sample('C: after expiry', false);
  observed.ranAfterExpiry = child.exitCode === null;
  // And the heap as V8 sees it, after expiry: whole key, halves, arrays of characters.
  process.kill(child.pid!, 'SIGUSR2');
  let file: string | undefined;
  let lastSize = -1;
  for (const since = Date.now(); Date.now() - since < 120_000; ) {
    await new Promise((r) => setTimeout(r, 500));
    const name = readdirSync(snapshots).find((f) => f.endsWith('.heapsnapshot'));
    if (!name) continue;
    const size = statSync(join(snapshots, name)).size;
    // Written synchronously by the child: done once the size stopped moving and the JSON closes (a child stalled
    // for more than a poll mid-write, on a loaded machine, leaves a file whose size holds still but is cut).
    if (size > 0 && size === lastSize && jsonCloses(join(snapshots, name), size)) {
      file = join(snapshots, name);
      break;
    }
    lastSize = size;
  }
  if (!file) throw new Error('the CLI wrote no heap snapshot within 120 s');
  expiredHeap = findKeyInSnapshot(file, CANARY);
  // Each stage above has its own bound (wall time), which a hang reaches with its name; this one is their sum (CLI
  // start 60 s, key active 60 s, calls 60 s, rest 20 s, expiry 60 s, snapshot 120 s) and the four samples' time.
}, 480_000);

/** Whether the file of `size` bytes ends its JSON (the last non-space byte is `}`). */
function jsonCloses(path: string, size: number): boolean {
  const tail = Buffer.alloc(Math.min(64, size));
  const fd = openSync(path, 'r');
  try {
    readSync(fd, tail, 0, tail.length, size - tail.length);
  } finally {
    closeSync(fd);
  }
  return tail.toString('latin1').trimEnd().endsWith('}');
}

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await emulator?.close();
  rmSync(dir, { recursive: true, force: true });
});

const describeHits = (scan: MemoryScan) =>
  scan.hits.map((h) => `${h.form} at ${h.address} in ${h.mapping}: …${h.context}…`).join('\n');

describe('the BYOK key in the raw memory of a real `breakwater run`', () => {
  it('the scenario did what the samples need: the key checked, used for real calls, then expired while the run went on', () => {
    expect(observed.byokCalls).toBeGreaterThanOrEqual(6);
    expect(observed.ranAfterExpiry).toBe(true);
    for (const name of Object.keys(scans)) expect(scans[name]!.bytes, name).toBeGreaterThan(20_000_000);
    expect(Object.keys(scans)).toHaveLength(3);
    // The figures, for the record: how much memory each sample read and how long the child was stopped.
    console.info(
      `raw-memory samples: ${Object.entries(scans)
        .map(([n, s]) => `${n.slice(0, 1)} ${(s.bytes / 1_048_576).toFixed(0)} MiB in ${s.mappings} mappings`)
        .join(
          '; ',
        )}; stopped ${scanMs.join('/')} ms; ${observed.byokCalls} calls with the key; ${observed.sampleRetries} void samples`,
    );
    expect(stdout).not.toContain(CANARY);
    expect(stderr).not.toContain(CANARY);
  });

  it('C: after expiry, the heap snapshot holds no copy either (whole, halves, character arrays)', () => {
    expect(expiredHeap).toBeDefined();
    expect(expiredHeap, leakReport(expiredHeap ?? [])).toEqual([]);
  });

  it.each(['A: live, after its check', 'B: live, between uses', 'C: after expiry'])(
    '%s: no copy in any form',
    (name) => {
      const scan = scans[name]!;
      expect(scan.hits, describeHits(scan)).toEqual([]);
    },
  );
});
