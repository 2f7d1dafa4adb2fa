import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { scanJson } from '../../src/scenarios/json-scan.ts';
import { parseScenario } from '../../src/scenarios/load-scenario.ts';
import { storableTextProblem, wireNameProblem } from '../../src/scenarios/scenario-text.ts';

// Issue 42, "Bad input: refused at load, with the place named": text a run cannot store or send is
// refused when the scenario is read, in one line naming the file, the line and the field.

const base = (over: { agent?: string; itemId?: string; title?: string; name?: string } = {}) => ({
  name: over.name ?? 'hostile',
  runtime: {
    endpoints: [{ id: 'p', provider: 'openai', model: 'gpt-4o', emulator: 'openai', apiKey: 'sk-x' }],
    chains: { main: ['p'] },
  },
  agents: [{ name: over.agent ?? 'Kai', chain: 'main' }],
  rounds: { count: 1, items: [{ id: over.itemId ?? 'I1', title: over.title ?? 'one' }] },
  emulator: {},
});

function refusal(text: string, source = 'hostile.json'): string {
  try {
    parseScenario(text, source);
  } catch (e) {
    expect(isConfigError(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('the scenario was accepted');
}

describe('text a run cannot carry is refused at load', () => {
  it('a lone surrogate in an item title (JSON escape): file, line and field', () => {
    const text = JSON.stringify(base({ title: 'latency \ud800 spike' }), null, 1);
    const message = refusal(text);
    const line = text.split('\n').findIndex((l) => l.includes('"title"')) + 1;
    expect(message).toBe(
      `hostile.json:${line} at rounds.items[0].title: holds a lone UTF-16 surrogate (U+D800) at character 9, which is not text; remove the \\ud800 escape or give the whole character`,
    );
  });

  it('a lone surrogate in YAML (a \\uDC00 escape) and a NUL are refused; a whole emoji is not', () => {
    const yaml = (title: string) => `name: hostile
runtime:
  endpoints: [{ id: p, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-x }]
  chains: { main: [p] }
agents: [{ name: Kai, chain: main }]
rounds:
  count: 1
  items:
    - id: I1
      title: "${title}"
emulator: {}
`;
    expect(refusal(yaml('a \\uDC00 b'), 'h.yaml')).toMatch(
      /^h\.yaml:10 at rounds\.items\[0\]\.title: holds a lone UTF-16 surrogate \(U\+DC00\)/,
    );
    expect(refusal(yaml('a \\0 b'), 'h.yaml')).toMatch(
      /^h\.yaml:10 at rounds\.items\[0\]\.title: holds a NUL/,
    );
    expect(parseScenario(yaml('fire 🔥 drill'), 'h.yaml').rounds?.items[0]?.title).toBe('fire 🔥 drill');
  });

  it('an agent name or item id outside Latin-1 is refused with the field named; Latin-1 is accepted', () => {
    expect(refusal(JSON.stringify(base({ agent: '小林' }), null, 1))).toMatch(
      /^hostile\.json:\d+ at agents\[0\]\.name: has "小" \(U\+5C0F\), which cannot travel in a request header/,
    );
    expect(refusal(JSON.stringify(base({ itemId: 'I-✓' }), null, 1))).toMatch(
      /^hostile\.json:\d+ at rounds\.items\[0\]\.id: has "✓" \(U\+2713\)/,
    );
    expect(refusal(JSON.stringify(base({ itemId: 'x'.repeat(201) })))).toMatch(
      /at rounds\.items\[0\]\.id: is 201 characters long; at most 200/,
    );
    const ok = parseScenario(JSON.stringify(base({ agent: 'Kai Müller', itemId: 'Café' })), 'ok.json');
    expect(ok.agents[0]?.name).toBe('Kai Müller');
  });

  it('a bad scenario name says the schema\'s own rule, not "must be a valid regex"', () => {
    const text = JSON.stringify(base({ name: 'bad name!' }), null, 1);
    expect(refusal(text)).toBe(
      'hostile.json:2 at name: must be letters, digits, ".", "_" or "-" (it names the run)',
    );
  });

  it('a scenario name longer than 160 characters and a cron job name outside Latin-1 are refused at load', () => {
    expect(refusal(JSON.stringify(base({ name: 'a'.repeat(161) }), null, 1))).toBe(
      'hostile.json:2 at name: is too long: at most 160 characters (it names the run)',
    );
    const peak = readFileSync(new URL('../../scenarios/morning-peak/scenario.yaml', import.meta.url), 'utf8');
    const cjk = peak.replace(
      '- name: telegram-outbox-flusher\n      cron:',
      '- name: 모닝-브리핑\n      cron:',
    );
    expect(refusal(cjk, 'peak.yaml')).toMatch(
      /^peak\.yaml:\d+ at schedule\.jobs\[0\]\.name: has "모" \(U\+BAA8\), which cannot travel in a request header/,
    );
  });

  it('a JSON key given twice is refused with its line (as YAML refuses it)', () => {
    const text = '{\n "name": "a",\n "name": "b"\n}';
    expect(refusal(text)).toBe('hostile.json:3 at name: is given twice in the same mapping; keep one');
  });
});

describe('the rules themselves', () => {
  it('wireNameProblem accepts exactly printable Latin-1 up to 200 characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 220 }), (s) => {
        const ok = s.length <= 200 && [...s].every((ch) => /^[\x20-\x7e\xa0-\xff]$/.test(ch));
        expect(wireNameProblem(s) === undefined).toBe(ok);
      }),
      { seed: 42, numRuns: 500 },
    );
  });

  it('storableTextProblem refuses exactly NULs and unpaired surrogates', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary-ascii', maxLength: 20 }),
        fc.integer({ min: 0xd800, max: 0xdfff }),
        (s, c) => {
          expect(storableTextProblem(s.replaceAll('\0', ''))).toBeUndefined();
          expect(storableTextProblem(`${s}${String.fromCharCode(c)}x`)).toMatch(/lone UTF-16 surrogate|NUL/);
          expect(storableTextProblem(`${s}\u{1F525}`.replaceAll('\0', ''))).toBeUndefined();
        },
      ),
      { seed: 42, numRuns: 300 },
    );
  });

  it('scanJson finds the line of a path as the YAML document model does', () => {
    const text = JSON.stringify(base(), null, 2);
    const lines = text.split('\n');
    expect(scanJson(text, ['agents', 0, 'name']).line).toBe(lines.findIndex((l) => l.includes('"Kai"')) + 1);
    expect(scanJson(text, ['rounds', 'items', 0, 'title']).line).toBe(
      lines.findIndex((l) => l.includes('"title"')) + 1,
    );
    // A missing field: the line of its nearest parent (the item, whose `{` is the line before its id).
    expect(scanJson(text, ['rounds', 'items', 0, 'nope']).line).toBe(
      lines.findIndex((l) => l.includes('"I1"')),
    );
    expect(scanJson(text).duplicate).toBeUndefined();
  });
});
