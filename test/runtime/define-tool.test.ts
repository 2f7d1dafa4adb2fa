import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { isToolArgumentsError } from '../../src/core/errors/tool-arguments-error.ts';
import type { ToolRunContext } from '../../src/runtime/agent-definition.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { defineTool } from '../../src/runtime/define-tool.ts';
import { type EmulatorFixture, startEmulatorFixture } from '../../src/testing/emulator-fixture.ts';

/*
 * Typed tools: the zod schema types `run`'s arguments, becomes the JSON Schema the model sees, and arguments that
 * fail it go back to the model as a tool error (the tool does not run). Against the emulator, whose model calls
 * the first tool offered with arguments sampled from its JSON Schema.
 */

const context: ToolRunContext = {
  signal: new AbortController().signal,
  agent: 'test',
  idempotencyKey: 'k',
  toolName: 'quote',
};

describe('defineTool types', () => {
  it("run's arguments are the schema's output type", () => {
    const quote = defineTool({
      parameters: z.object({
        pair: z.enum(['EURUSD', 'USDJPY']),
        precision: z.number().int().default(4),
        note: z.string().optional(),
      }),
      run: async (args) => {
        expectTypeOf(args).toEqualTypeOf<{
          pair: 'EURUSD' | 'USDJPY';
          precision: number;
          note?: string | undefined;
        }>();
        return args.pair;
      },
    });
    expectTypeOf(quote.schema).toExtend<z.ZodType>();
    expectTypeOf<Parameters<typeof quote.run>[0]>().toEqualTypeOf<Readonly<Record<string, unknown>>>();
  });

  it('a wrong argument type in run is a type error', () => {
    defineTool({
      parameters: z.object({ n: z.number() }),
      // @ts-expect-error n is a number, not a string
      run: (args: { n: string }) => args.n,
    });
  });
});

describe('defineTool at run time', () => {
  it('sends the JSON Schema of the input side (a field with a default is optional), without $schema', () => {
    const t = defineTool({
      description: 'Latest price',
      parameters: z.object({ pair: z.string(), precision: z.number().int().default(4) }),
      run: () => 'ok',
    });
    expect(t.description).toBe('Latest price');
    expect(t.parameters).toMatchObject({
      type: 'object',
      properties: { pair: { type: 'string' }, precision: { type: 'integer', default: 4 } },
      required: ['pair'],
    });
    expect(t.parameters).not.toHaveProperty('$schema');
  });

  it('checks the arguments: defaults applied on success, a ToolArgumentsError naming the field on failure', async () => {
    const seen: unknown[] = [];
    const t = defineTool({
      parameters: z.object({ pair: z.string(), precision: z.number().int().default(4) }),
      run: (args) => {
        seen.push(args);
        return 'ok';
      },
    });
    expect(await t.run({ pair: 'EURUSD' }, context)).toBe('ok');
    expect(seen).toEqual([{ pair: 'EURUSD', precision: 4 }]);
    const error = await t.run({ pair: 7 }, context).catch((e: unknown) => e);
    expect(isToolArgumentsError(error)).toBe(true);
    expect((error as Error).message).toMatch(/tool "quote".*at pair: .*expected string/);
    expect(seen).toHaveLength(1);
  });

  it('refuses a schema that is not an object', () => {
    let caught: unknown;
    try {
      defineTool({ parameters: z.string(), run: () => 'x' });
    } catch (e) {
      caught = e;
    }
    expect(isConfigError(caught)).toBe(true);
  });
});

describe('typed tools in an agent', () => {
  let fixture: EmulatorFixture;
  let supervisor: Supervisor | undefined;
  beforeAll(async () => {
    fixture = await startEmulatorFixture({ profile: { seed: 4 } });
  });
  afterEach(async () => {
    await supervisor?.stop();
    supervisor = undefined;
    fixture.reset();
  });
  afterAll(async () => {
    await fixture.close();
  });

  function runtime() {
    supervisor = createSupervisor({
      endpoints: [fixture.endpoint('mini', 'openai')],
      chains: { main: ['mini'] },
    });
    return supervisor;
  }

  it('the model gets the schema, calls the tool with valid arguments, and the tool runs typed', async () => {
    const runs: { pair: 'EURUSD' | 'USDJPY' }[] = [];
    const fx = defineTool({
      description: 'Latest rate of a currency pair',
      parameters: z.object({ pair: z.enum(['EURUSD', 'USDJPY']) }),
      run: async (args) => {
        runs.push(args);
        return { rate: 1.0842 };
      },
    });
    const turn = await runtime().call({
      chain: 'main',
      messages: [{ role: 'user', content: 'EURUSD?' }],
      tools: { fx_rate: fx },
    });
    expect(turn.outcome).toBe('answered');
    expect(runs).toEqual([{ pair: 'EURUSD' }]);
    expect(turn.answer.text).toContain('1.0842');
  });

  it('arguments failing the schema go back to the model as a tool error; the tool does not run', async () => {
    let ran = 0;
    // The emulator's model writes "sample" for a string: shorter than the schema allows.
    const lookup = defineTool({
      parameters: z.object({ ticker: z.string().min(10) }),
      run: () => {
        ran++;
        return 'never';
      },
    });
    const turn = await runtime().call({
      chain: 'main',
      messages: [{ role: 'user', content: 'Look it up.' }],
      tools: { lookup },
    });
    expect(ran).toBe(0);
    const result = turn.messages.find((m) => m.role === 'tool_result');
    expect(result).toMatchObject({ role: 'tool_result', toolName: 'lookup', isError: true });
    expect((result as { content: string }).content).toMatch(
      /tool "lookup" do not match its schema: at ticker/,
    );
    expect(turn.outcome).toBe('answered');
  });
});
