import { describe, expect, it } from 'vitest';
import { BYOK_USAGE, parseByokCommand, parseByokLine } from '../../src/byok/byok-command.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';

const KEY = 'sk-proj-commandTest0000000000000000a1b2';

function usageError(line: string): Error {
  try {
    parseByokCommand(line);
  } catch (e) {
    expect(isConfigError(e)).toBe(true);
    return e as Error;
  }
  throw new Error(`expected a usage error for a ${line.length}-char line`);
}

describe('parseByokCommand', () => {
  it.each([
    [`/byok openai ${KEY}`],
    [`   /byok    OpenAI\t${KEY}   `],
    [`/byok openai ${KEY}\r\n`],
    [`/BYOK OPENAI ${KEY}`],
    [`/byok openai "${KEY}"`],
    [`/byok openai '${KEY}'`],
    [`\uFEFF/byok openai ${KEY}`],
  ])('reads %j as provider openai and the key', (line) => {
    expect(parseByokCommand(line)).toEqual({ provider: 'openai', key: KEY });
  });

  it('parses bytes without making a string of the key: the key is a view into the line', () => {
    const line = Buffer.from(`/byok openai "${KEY}"\r\n`);
    const cmd = parseByokLine(line);
    expect(cmd?.provider).toBe('openai');
    expect(cmd?.key.buffer).toBe(line.buffer);
    expect(cmd?.key.equals(Buffer.from(KEY))).toBe(true);
    line.fill(0);
    expect(cmd?.key.every((b) => b === 0)).toBe(true);
  });

  it('leaves the format of the key to the vault: a short word is parsed (and refused there by provider format)', () => {
    expect(parseByokCommand('/byok openai Checkout')).toEqual({ provider: 'openai', key: 'Checkout' });
  });

  it('keeps a provider name with digits, dots, dashes and underscores', () => {
    expect(parseByokCommand(`/byok azure-openai_2.eu ${KEY}`)).toEqual({
      provider: 'azure-openai_2.eu',
      key: KEY,
    });
  });

  it.each([['hello agents'], [''], ['   '], ['/byokopenai x'], ['/help'], [`please /byok openai ${KEY}`]])(
    'says %j is not a /byok command',
    (line) => {
      expect(parseByokCommand(line)).toBeUndefined();
    },
  );

  it.each([
    ['/byok', 'needs a provider and a key'],
    ['/byok   ', 'needs a provider and a key'],
    ['/byok openai', 'needs the key after the provider'],
    [`/byok ${KEY}`, 'needs the provider before the key'],
    [`/byok ${KEY} openai`, 'takes the provider first, then the key'],
    [`/byok openai ${KEY} ${KEY}x`, 'takes exactly a provider and a key'],
    [`/byok open/ai ${KEY}`, 'needs a provider name such as openai'],
    [`/byok openai ${KEY}\u0000`, 'control character'],
    [`/byok openai sk-proj-\u0001${KEY.slice(8)}`, 'refused, not stripped'],
    [`/byok openai ${KEY}\u007f`, 'control character'],
  ])('refuses %j with a usage message that repeats nothing typed', (line, problem) => {
    const err = usageError(line);
    expect(err.message).toContain(problem);
    expect(err.message).toContain(BYOK_USAGE);
    expect(err.message).not.toContain('\n');
    expect(err.message.startsWith('/byok: ')).toBe(true);
    // No word of the line after the command appears in the message (the usage text aside).
    const rest = err.message.replace(BYOK_USAGE, '');
    for (const word of line.trim().split(/\s+/).slice(1)) {
      if (word.length >= 6) expect(rest).not.toContain(word);
    }
    expect(err.message).not.toContain(KEY);
  });
});
