import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli } from './run-cli.ts';

describe('breakwater --help', () => {
  it('lists every command and exits 0', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^Usage: breakwater \[options\] \[command\]/);
    for (const name of ['run', 'resume', 'demo', 'emulator', 'migrate', 'report', 'runs', 'viz'])
      expect(run.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });

  it.each([
    ['demo', ['Starts the emulator in-process']],
    ['emulator', ['--port <n>', '--profile <file>', '--show-profile', 'GET /_emulator/stats']],
    ['migrate', ['--database-url <url>', '--data-dir <dir>']],
  ])('%s --help shows its usage and options, exit 0', async (name, expected) => {
    const run = await runCli([name, '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Usage: breakwater ${name} [options]`);
    expect(run.stdout).toContain('-h, --help');
    for (const text of expected) expect(run.stdout).toContain(text);
  });

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(`${REPO_ROOT}/package.json`, 'utf8')) as { version: string };
    const run = await runCli(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(pkg.version);
  });
});
