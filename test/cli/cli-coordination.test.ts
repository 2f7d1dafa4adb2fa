import { describe, expect, it } from 'vitest';
import { runCli } from './run-cli.ts';

// `--coordination-url` is checked and reached before a run is stored: a bad or unreachable backend is one
// line on stderr naming the flag, with no password, and a non-zero exit.

const oneLine = (stderr: string) => {
  expect(stderr.endsWith('\n')).toBe(true);
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
};

describe('breakwater run --coordination-url', () => {
  it('a URL of another scheme is refused naming the flag', async () => {
    const run = await runCli([
      'run',
      'morning-peak',
      '--no-live',
      '--coordination-url',
      'http://127.0.0.1:1',
    ]);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toMatch(/^breakwater run: --coordination-url: has scheme "http:"/);
  });

  it.each([
    [
      'postgres://app:hunter2@127.0.0.1:1/x',
      /PostgreSQL at postgres:\/\/app@127\.0\.0\.1:1\/x is unreachable/,
    ],
    ['redis://:hunter2@127.0.0.1:1', /Redis at redis:\/\/127\.0\.0\.1:1 is unreachable/],
  ])('%s unreachable: one line, no password', async (url, expected) => {
    const run = await runCli(['run', 'morning-peak', '--no-live', '--coordination-url', url]);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toMatch(/^breakwater run: --coordination-url: /);
    expect(run.stderr).toMatch(expected);
    expect(run.stderr).toContain('connection refused');
    expect(run.stderr).not.toContain('hunter2');
  });
});
