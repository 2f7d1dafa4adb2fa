import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import { runEmulatorCommand } from '../../src/emulator/emulator-command.ts';

const dir = mkdtempSync(join(tmpdir(), 'bw-emu-cmd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('runEmulatorCommand', () => {
  it('prints the control URL and one base URL per flavor, serves, and stops on the signal', async () => {
    const profile = join(dir, 'p.yaml');
    writeFileSync(profile, 'seed: 5\nfaults:\n  - { kind: overloaded, match: { flavor: openai } }\n');
    const lines: string[] = [];
    const ac = new AbortController();
    let emu: Emulator | undefined;
    let ready: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const done = runEmulatorCommand({
      profile,
      signal: ac.signal,
      print: (l) => lines.push(l),
      onReady: (e) => {
        emu = e;
        ready();
      },
    });
    // Ready, or the command failed before it: either ends the wait (no polling).
    await Promise.race([started, done]);
    expect(emu).toBeDefined();
    expect(lines).toHaveLength(7);
    expect(lines[0]).toMatch(/^control\s+http:\/\/127\.0\.0\.1:\d+$/);
    expect(lines[2]).toMatch(/^openai\s+http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(lines[4]).toMatch(/^gemini-compat\s+http:\/\/127\.0\.0\.1:\d+\/v1beta\/openai$/);
    const openaiURL = lines[2]!.split(/\s+/)[1]!;
    const res = await fetch(`${openaiURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-x' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(503); // the profile's fault is live
    ac.abort();
    await done;
    await expect(fetch(`${emu!.controlURL}/_emulator/stats`)).rejects.toThrow();
  });

  it('a malformed profile rejects with the ConfigError and starts nothing', async () => {
    const profile = join(dir, 'bad.yaml');
    writeFileSync(profile, 'seed: nope\n');
    await expect(runEmulatorCommand({ profile, print: () => {} })).rejects.toThrow(
      /bad\.yaml at seed: must be a number/,
    );
  });
});
