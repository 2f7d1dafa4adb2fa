import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from './run-cli.ts';

// Every failure is one line on stderr that names the command and what to do, with a non-zero exit
// and no stack trace unless BREAKWATER_DEBUG=1.

const oneLine = (stderr: string) => {
  expect(stderr.endsWith('\n')).toBe(true);
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
};

describe('CLI errors', () => {
  it('an unknown flag names the flag, suggests the right one and points at --help', async () => {
    const run = await runCli(['emulator', '--prot', '4000']);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toBe(
      "breakwater emulator: unknown option '--prot' (Did you mean --port?); run `breakwater emulator --help` for usage\n",
    );
  });

  it('a bad --port value says which values are accepted', async () => {
    const run = await runCli(['emulator', '--port', 'http']);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toContain("breakwater emulator: option '--port <n>' argument 'http' is invalid");
    expect(run.stderr).toContain('must be an integer from 0 (free ports) to 65529');
  });

  it('an unknown command points at breakwater --help', async () => {
    const run = await runCli(['rnu']);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toMatch(
      /^breakwater: unknown command 'rnu' \(Did you mean run\?\); run `breakwater --help`/,
    );
  });

  it('an extra argument is refused', async () => {
    const run = await runCli(['demo', 'now']);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toContain("breakwater demo: too many arguments for 'demo'");
  });

  it('a port already in use says to pick another --port', async () => {
    const { createServer } = await import('node:net');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const taken = (server.address() as { port: number }).port;
    try {
      const run = await runCli(['emulator', '--port', String(taken)]);
      expect(run.code).toBe(1);
      oneLine(run.stderr);
      expect(run.stderr).toContain(`breakwater emulator: port ${taken} or one of`);
      expect(run.stderr).toContain('pick another --port, or --port 0 for free ports');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('BREAKWATER_DEBUG=1 adds the stack trace', async () => {
    const args = ['migrate', '--data-dir', '/tmp/x', '--database-url', 'postgres://u@127.0.0.1/db'];
    const quiet = await runCli(args);
    const debug = await runCli(args, cleanEnv({ BREAKWATER_DEBUG: '1' }));
    expect(quiet.code).toBe(1);
    expect(debug.code).toBe(1);
    oneLine(quiet.stderr);
    expect(debug.stderr.startsWith(quiet.stderr)).toBe(true);
    expect(debug.stderr).toMatch(/^\s+at runMigrateCommand /m);
  });
});
