import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canReadCommands, startByokConsole } from '../../src/byok/byok-console.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

// The /byok console against a real supervisor and the emulator (real SDKs, real HTTP). Input is a
// PassThrough: as a pipe, or dressed as a terminal (isTTY, setRawMode) to drive the raw-mode line editor.

const KEY = 'sk-proj-consoleUser00000000000000a1b2';
const BAD = 'sk-proj-consoleWrong0000000000000dead';

let emulator: Emulator;
let supervisor: Supervisor | undefined;

beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      seed: 8,
      acceptAnyKey: false,
      keys: [
        { alias: 'platform', key: 'sk-platform-0000000000000001' },
        { alias: 'user', key: KEY },
      ],
    },
  });
});
afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
});
afterAll(() => emulator?.close());

function runtime(byok = true): Supervisor {
  supervisor = createSupervisor({
    endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o', 'sk-platform-0000000000000001')],
    chains: { main: ['primary'] },
    ...(byok
      ? {
          byok: {
            templates: {
              openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') },
            },
          },
        }
      : {}),
  });
  return supervisor;
}

class FakeTerminal extends PassThrough {
  readonly isTTY = true;
  readonly rawModes: boolean[] = [];
  unrefs = 0;
  setRawMode(mode: boolean): this {
    this.rawModes.push(mode);
    return this;
  }
  unref(): void {
    this.unrefs++;
  }
}

async function settle(console: { settled(): Promise<void> }): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await console.settled();
}

describe('the /byok console', () => {
  it('a pipe: one line per command, the key never printed; good, bad, unknown provider, malformed and other lines', async () => {
    const sup = runtime();
    const input = new PassThrough();
    const printed: string[] = [];
    const console = startByokConsole({ input, byok: sup.byok, print: (l) => printed.push(l) });
    input.write(`/byok openai ${BAD}\n`);
    await settle(console);
    input.write(`  /byok  OpenAI  ${KEY} \r\n`);
    await settle(console);
    input.write(`/byok mistral ${KEY}\n/byok ${KEY}\n${KEY}\n\n   \n`);
    await settle(console);
    expect(printed).toEqual([
      'openai key sk-proj-…dead refused: auth (401). Check the key and try again.',
      'openai key sk-proj-…a1b2 active for session default',
      'byok at provider: the provider name is not a BYOK provider (what was typed is not shown); use one of openai',
      '/byok: needs the provider before the key; usage: /byok PROVIDER KEY (e.g. /byok openai sk-…)',
      'ignored a line that is not a /byok command (it is not shown); usage: /byok PROVIDER KEY',
    ]);
    expect(printed.join('\n')).not.toContain(KEY.slice(8));
    expect(printed.join('\n')).not.toContain(BAD.slice(8));
    expect(sup.byok.list('default').map((r) => r.masked)).toEqual(['sk-proj-…a1b2']);
    console.stop();
  });

  it('a flood of 2,000 /byok lines is bounded: the oldest waiting are dropped and said so once, and a good key typed after is handled', async () => {
    const sup = runtime();
    const input = new PassThrough();
    const printed: string[] = [];
    const console = startByokConsole({ input, byok: sup.byok, print: (l) => printed.push(l), maxWaiting: 8 });
    const flood = Array.from(
      { length: 2_000 },
      (_, i) => `/byok openai sk-proj-flood${String(i).padStart(24, '0')}\n`,
    );
    input.write(flood.join(''));
    await new Promise((resolve) => setImmediate(resolve));
    input.write(`/byok openai ${KEY}\n`);
    await settle(console);
    const drops = printed.filter((l) => l.startsWith('dropped '));
    expect(drops.length).toBeGreaterThanOrEqual(1);
    expect(drops.length).toBeLessThanOrEqual(3);
    const droppedTotal = drops.reduce((n, l) => n + Number(/^dropped (\d+)/.exec(l)?.[1]), 0);
    const refused = printed.filter((l) => / refused: auth \(401\)/.test(l)).length;
    // Every line is accounted for: checked (and refused by the emulator), or dropped.
    expect(refused + droppedTotal).toBe(2_000);
    expect(refused).toBeLessThanOrEqual(2 * 8 + 1);
    expect(printed.at(-1)).toBe('openai key sk-proj-…a1b2 active for session default');
    expect(sup.byok.list('default').map((r) => r.masked)).toEqual(['sk-proj-…a1b2']);
    console.stop();
  });

  it('a line with a control byte (0x01 inside the key) is refused whole, never altered and injected', async () => {
    const sup = runtime();
    const input = new PassThrough();
    const printed: string[] = [];
    const console = startByokConsole({ input, byok: sup.byok, print: (l) => printed.push(l) });
    const before = emulator.stats().calls.length;
    input.write(`/byok openai ${KEY.slice(0, 10)}\u0001${KEY.slice(10)}\n`);
    input.write(`/byok openai ${KEY}\u001b[A\n`);
    await settle(console);
    expect(printed).toHaveLength(2);
    for (const line of printed)
      expect(line).toMatch(/control character, so nothing was kept \(it is refused, not stripped\)/);
    expect(emulator.stats().calls.length).toBe(before);
    expect(sup.byok.list()).toEqual([]);
    console.stop();
  });

  it('wipes what it read: every input chunk is zero-filled once handled', async () => {
    const sup = runtime();
    const input = new PassThrough();
    const console = startByokConsole({ input, byok: sup.byok, print: () => {} });
    const chunk = Buffer.from(`/byok openai ${KEY}\n`);
    input.write(chunk);
    await settle(console);
    expect(chunk.every((b) => b === 0)).toBe(true);
    expect(sup.byok.list('default')).toHaveLength(1);
    console.stop();
  });

  it('announces, in one line, a key of its session that goes away', async () => {
    const sup = runtime();
    const input = new PassThrough();
    const printed: string[] = [];
    const console = startByokConsole({ input, byok: sup.byok, print: (l) => printed.push(l) });
    input.write(`/byok openai ${KEY}\n`);
    await settle(console);
    await sup.byok.inject('other-session', 'openai', KEY);
    sup.byok.endSession('other-session');
    sup.byok.endSession('default');
    expect(printed).toEqual([
      'openai key sk-proj-…a1b2 active for session default',
      'openai key sk-proj-…a1b2 for session default removed: the session ended',
    ]);
    console.stop();
  });

  it('a terminal: raw mode hides the typing; Backspace, Ctrl+U and arrow keys edit; Ctrl+C interrupts; stop() restores it', async () => {
    const sup = runtime();
    const input = new FakeTerminal();
    const printed: string[] = [];
    let interrupts = 0;
    const console = startByokConsole({
      input,
      byok: sup.byok,
      print: (l) => printed.push(l),
      onInterrupt: () => interrupts++,
    });
    expect(input.rawModes).toEqual([true]);
    // Typed one keystroke at a time, with a typo fixed by Backspace, a discarded line, and cursor keys.
    const keys = [
      'g',
      'a',
      'r',
      'b',
      'a',
      'g',
      'e',
      '\u0015',
      ...'/byok openaj',
      '\u007f',
      'i',
      '\u001b[D',
      '\u001b[C',
      ' ',
      ...KEY,
      '\r',
    ];
    for (const k of keys) input.write(k);
    await settle(console);
    input.write('\u0003');
    await settle(console);
    expect(interrupts).toBe(1);
    expect(printed).toEqual(['openai key sk-proj-…a1b2 active for session default']);
    console.stop();
    expect(input.rawModes).toEqual([true, false]);
    expect(input.unrefs).toBe(1);
    input.write(`/byok openai ${BAD}\r`);
    await settle(console);
    expect(printed).toHaveLength(1);
  });

  it('without a runtime to give the key to, or with BYOK off, it says so in one line', async () => {
    const input = new PassThrough();
    const printed: string[] = [];
    const none = startByokConsole({ input, byok: undefined, print: (l) => printed.push(l) });
    input.write(`/byok openai ${KEY}\n`);
    await settle(none);
    none.stop();
    const off = runtime(false);
    const input2 = new PassThrough();
    const offConsole = startByokConsole({ input: input2, byok: off.byok, print: (l) => printed.push(l) });
    input2.write(`/byok openai ${KEY}\n`);
    await settle(offConsole);
    offConsole.stop();
    expect(printed).toHaveLength(2);
    expect(printed[0]).toMatch(/^\/byok needs the breakwater policy/);
    expect(printed[1]).toMatch(/BYOK is off because the runtime config has no byok\.templates/);
    expect(printed.join('\n')).not.toContain(KEY.slice(8));
  });

  it('reads only from a terminal or a pipe: a pipe yes; /dev/null (stdio ignore) and a closed descriptor no', async () => {
    const { openSync, closeSync } = await import('node:fs');
    const devNull = openSync('/dev/null', 'r');
    closeSync(devNull);
    expect(canReadCommands(devNull)).toBe(false);
    const probe = (stdin: 'pipe' | 'ignore') =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            '-e',
            "import('./src/byok/byok-console.ts').then((m) => process.stdout.write(String(m.canReadCommands(0))))",
          ],
          { cwd: join(import.meta.dirname, '../..'), stdio: [stdin, 'pipe', 'inherit'] },
        );
        let out = '';
        child.stdout?.on('data', (d) => {
          out += String(d);
        });
        child.once('error', reject);
        child.once('close', () => resolve(out));
      });
    expect(await probe('pipe')).toBe('true');
    expect(await probe('ignore')).toBe('false');
  });
});
