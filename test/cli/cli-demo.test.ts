import { beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, runCli } from './run-cli.ts';

// `breakwater demo` as a user runs it: the emulator in-process, a 429 on the Anthropic-wire endpoint
// classified as rate_limited, then the OpenAI-wire endpoint answers. No network, no key.

describe('breakwater demo', () => {
  let run: CliRun;
  beforeAll(async () => {
    // No key in the environment: start must not need one.
    const env = { ...process.env };
    for (const name of ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'GEMINI_API_KEY', 'BREAKWATER_DEBUG'])
      delete env[name];
    run = await runCli(['demo'], env);
  });

  it('exits 0 with nothing on stderr', () => {
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });

  it('shows the 429 classified as rate_limited, with the retry-after the emulator sent', () => {
    expect(run.stdout).toMatch(
      /call "start\/call-1" → primary-anthropic\n\s+fault\s+rate_limited \(HTTP 429\)/,
    );
    expect(run.stdout).toMatch(/retry-after\s+2000 ms/);
    expect(run.stdout).toMatch(/provider\s+anthropic, code rate_limit_error, request req_/);
  });

  it('shows the answer of the second endpoint: endpoint, model, usage and rate-limit state', () => {
    const answer = run.stdout.slice(run.stdout.indexOf('→ backup-openai'));
    expect(answer).toMatch(/answer\s+\S+/);
    expect(answer).toMatch(/endpoint\s+backup-openai \(openai, key fingerprint [0-9a-f]{8}\)/);
    expect(answer).toMatch(/model\s+gpt-4o-mini/);
    expect(answer).toMatch(/usage\s+[1-9]\d* input \+ [1-9]\d* output tokens/);
    expect(answer).toMatch(/rate limit\s+requests 49\/50 left, full again in \d+ s; tokens \d+\/40000 left/);
    expect(run.stdout).toMatch(/emulator {2}2 calls: 1 × 200, 1 × 429/);
    expect(run.stdout).toContain('done: the 429 was classified as rate_limited and backup-openai answered');
  });

  it('never prints a key, only fingerprints', () => {
    expect(run.stdout).not.toMatch(/sk-(ant-)?breakwater-demo/);
  });
});
