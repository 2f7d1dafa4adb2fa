import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorStats } from '../../src/emulator/emulator-types.ts';
import { finished, runCli, spawnCli, waitForOutput } from './run-cli.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'breakwater-cli-emulator-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('breakwater emulator', () => {
  it('serves on ephemeral ports, answers /_emulator/stats and a real call, and exits 0 on SIGTERM', async () => {
    const profile = join(dir, 'one-fault.yaml');
    writeFileSync(
      profile,
      'seed: 5\nfaults:\n  - kind: overloaded\n    match: { flavor: openai }\n    count: 1\n',
    );
    const child = spawnCli(['emulator', '--port', '0', '--profile', profile]);
    const exit = finished(child);
    try {
      const banner = await waitForOutput(child, /SIGTERM stops it\.\n/);
      const controlURL = banner.match(/^control\s+(http:\/\/127\.0\.0\.1:\d+)$/m)?.[1];
      const openaiURL = banner.match(/^openai\s+(http:\/\/127\.0\.0\.1:\d+\/v1)$/m)?.[1];
      expect(controlURL).toBeDefined();
      expect(openaiURL).toBeDefined();
      for (const flavor of ['anthropic', 'gemini', 'gemini-compat', 'vllm', 'ollama']) {
        expect(banner).toMatch(new RegExp(`^${flavor}\\s+http://127\\.0\\.0\\.1:\\d+`, 'm'));
      }
      const before = (await (await fetch(`${controlURL}/_emulator/stats`)).json()) as EmulatorStats;
      expect(before).toMatchObject({ totalCalls: 0, calls: [], byStatus: {}, maxInFlight: 0 });

      // The profile's fault rule is live: the first OpenAI call is a 529-style overload (503 on OpenAI's wire).
      const call = await fetch(`${openaiURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-any-key-00000000000000' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      await call.text();
      expect(call.status).toBeGreaterThanOrEqual(500);
      const after = (await (await fetch(`${controlURL}/_emulator/stats`)).json()) as EmulatorStats;
      expect(after.totalCalls).toBe(1);
      expect(after.calls[0]).toMatchObject({ flavor: 'openai', model: 'gpt-4o-mini', fault: 'overloaded' });
    } finally {
      child.kill('SIGTERM');
    }
    const run = await exit;
    expect(run.signal).toBeNull();
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('SIGTERM: closing the emulator after 1 call(s)');
  });

  it('--show-profile prints the effective profile with its defaults, keys masked', async () => {
    const profile = join(dir, 'keys.json');
    writeFileSync(profile, JSON.stringify({ keys: [{ alias: 'primary', key: 'sk-primary-secret-0001' }] }));
    const run = await runCli(['emulator', '--show-profile', '--profile', profile]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^seed: 1$/m);
    expect(run.stdout).toMatch(/^timeScale: 1$/m);
    expect(run.stdout).toMatch(/^answerTokens: 60$/m);
    expect(run.stdout).toMatch(/^acceptAnyKey: false$/m);
    expect(run.stdout).toMatch(/alias: primary/);
    expect(run.stdout).not.toContain('sk-primary-secret-0001');
  });

  it('refuses a bad profile with one line naming the file and the field, exit 1', async () => {
    const profile = join(dir, 'bad.yaml');
    writeFileSync(profile, 'faults:\n  - kind: rate_limit\n    probability: 2\n');
    const run = await runCli(['emulator', '--profile', profile]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `breakwater emulator: ${profile} at faults[0].probability: must be between 0 and 1\n`,
    );
  });

  it('refuses a profile with an unknown field, naming it', async () => {
    const profile = join(dir, 'typo.yaml');
    writeFileSync(profile, 'sead: 3\n');
    const run = await runCli(['emulator', '--profile', profile]);
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(`${profile} at sead: is not a known field; remove it or fix its spelling`);
  });

  it('refuses a profile file that does not exist', async () => {
    const run = await runCli(['emulator', '--profile', join(dir, 'missing.yaml')]);
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/missing\.yaml: cannot read the profile \(ENOENT/);
  });
});
