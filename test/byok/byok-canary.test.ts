import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { CANARY_PROVIDERS, canaryAlias, canaryKey } from './byok-canary.ts';
import { findKeyInSnapshot, leakReport } from './heap-retainers.ts';
import { childScript } from '../support/test-child.ts';

// A canary key per provider is injected (as bytes), used and expired in a child process
// (canary-child.ts); then its plaintext is searched for in every log line, every error message, the
// vault's enumerable state and two V8 heap snapshots — whole, split in halves, spelled as an array of
// characters. The emulator runs here, in the parent, so the child's heap holds no copy of the keys but
// its own. While a key lives, between calls, the vault holds it only sealed: the snapshot taken then
// must hold no copy at all (it used to hold one, in the secret scrubber's registry).

interface ChildReport {
  logs: string[];
  errors: string[];
  state: string[];
  liveSnapshot: string;
  expiredSnapshot: string;
}

const seed = randomBytes(8).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'byok-canary-'));
let emulator: Emulator;
let report: ChildReport;

beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      acceptAnyKey: false,
      keys: CANARY_PROVIDERS.map((p) => ({ alias: canaryAlias(p), key: canaryKey(seed, p) })),
    },
  });
  const input = {
    seed,
    snapshotDir: dir,
    baseURLs: Object.fromEntries(CANARY_PROVIDERS.map((p) => [p, emulator.baseURL(p)])),
  };
  // Asynchronous on purpose: the emulator answering the child lives on this event loop.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--expose-gc',
      // Strings are cut at 1024 chars in a snapshot by default; a key deep in a long string would hide.
      '--heap-snapshot-string-limit=10000000',
      childScript(join(import.meta.dirname, 'canary-child.ts')),
      JSON.stringify(input),
    ],
    { cwd: join(import.meta.dirname, '../..'), maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
  );
  report = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as ChildReport;
}, 180_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await emulator?.close();
});

const canaries = CANARY_PROVIDERS.flatMap((p) => [
  { provider: p, kind: 'good' as const, key: canaryKey(seed, p, 'good') },
  { provider: p, kind: 'bad' as const, key: canaryKey(seed, p, 'bad') },
]);

describe('canary keys (one child process: inject, use, expire)', () => {
  it('the scenario ran: every good key answered through the emulator, every bad key was refused', () => {
    expect(report.errors.filter((e) => e.startsWith('UNEXPECTED'))).toEqual([]);
    const byKey = emulator.stats().byKey;
    for (const p of CANARY_PROVIDERS) {
      // One check call + one real call; nothing after expiry.
      expect(byKey[canaryAlias(p)]).toBe(2);
    }
    const oneLine = report.errors.filter((e) => !e.includes('\n'));
    expect(oneLine.filter((m) => / refused: auth \(\d{3}\)\./.test(m))).toHaveLength(3);
    expect(oneLine.filter((m) => /expired after 1 min without use/.test(m))).toHaveLength(3);
    expect(report.logs.length).toBeGreaterThanOrEqual(15);
  });

  it.each(canaries)(
    '$provider $kind canary: 0 occurrences in log lines, error messages and enumerable state',
    ({ key }) => {
      const hits = [...report.logs, ...report.errors, ...report.state].filter((s) => s.includes(key));
      expect(hits).toEqual([]);
    },
  );

  it.each(canaries)(
    '$provider $kind canary: 0 copies (whole, halves or character array) in the heap snapshot taken after expiry',
    ({ key }) => {
      const hits = findKeyInSnapshot(report.expiredSnapshot, key);
      expect(hits, leakReport(hits)).toEqual([]);
    },
  );

  it.each(canaries)(
    '$provider $kind canary while the good keys live, between calls: 0 copies in the heap snapshot (sealed only)',
    ({ key }) => {
      const hits = findKeyInSnapshot(report.liveSnapshot, key);
      expect(hits, leakReport(hits)).toEqual([]);
    },
  );
});
