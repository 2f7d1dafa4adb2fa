import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeConfigInput } from '../../src/runtime/runtime-config.ts';
import {
  okReply,
  RESET_HEADER_FORMS,
  type ResetHeaderForm,
  rateLimitReply,
} from '../support/reset-header-forms.ts';
import { driveUntil } from '../support/runtime-harness.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

/*
 * A BYOK key's engine reads the wire as the configured endpoints' engines do (`byokWire`, by template): a template
 * in wall time on a time-scaled clock gets its 7 s retry-after as 105 s of the run's clock at scale 15; another
 * template, on the run's clock, reads it as it is.
 */

const USER_KEY = 'sk-proj-byokWireTime000000000000a1b2';
const PLATFORM = 'sk-platform-wire-time-0000000000000001';
const WAIT_MS = 7_000;

let server: WireFixtureServer;

beforeAll(async () => {
  server = await startWireFixtureServer({
    // The platform key: out of credit, so the agent goes to the session's key.
    primary: {
      status: 429,
      body: {
        error: {
          message: 'You exceeded your current quota.',
          type: 'insufficient_quota',
          code: 'insufficient_quota',
        },
      },
    },
  });
});
afterAll(() => server.close());

/** The platform endpoint (out of credit) and one BYOK template, `name`, served at `route`. */
function byokConfig(name: string, route: string): RuntimeConfigInput {
  return {
    endpoints: [
      {
        id: 'primary',
        provider: 'openai',
        model: 'gpt-4o',
        apiKey: PLATFORM,
        baseURL: server.url('primary'),
      },
    ],
    chains: { main: ['primary'] },
    agentDefaults: { maxWaitMs: 1_000 },
    byok: { templates: { [name]: { provider: 'openai', model: 'gpt-4o-mini', baseURL: server.url(route) } } },
  } as RuntimeConfigInput;
}

async function faultOfByokCall(
  template: 'walltime' | 'onclock',
): Promise<Extract<RuntimeEvent, { type: 'call.attempt' }>> {
  const form = RESET_HEADER_FORMS.find((f) => f.name === 'retry-after-ms') as ResetHeaderForm;
  // The key's check call answers; every call after it is a 429 asking for 7 s.
  server.route(template, (r) =>
    server.requests(template).length <= 1 && r.method === 'POST'
      ? okReply('openai')
      : rateLimitReply(form, Date.now(), WAIT_MS),
  );
  const clock = createManualClock(Date.parse('2026-03-02T09:00:00Z'));
  const events: RuntimeEvent[] = [];
  const config = byokConfig(template, template);
  const supervisor = createSupervisor(config, {
    clock,
    random: () => 0.5,
    onEvent: (e) => events.push(e),
    byokWire: (name) => (name === 'walltime' ? { wireScale: 15 } : {}),
  });
  try {
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
    const receipt = await supervisor.byok.inject('default', template, USER_KEY);
    let settled = false;
    const turn = kai.ask('Status of the payment API?').finally(() => {
      settled = true;
    });
    await driveUntil(clock, () => settled, { stepMs: 100, maxSimulatedMs: 60_000 });
    await turn;
    const fault = events.find(
      (e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> =>
        e.type === 'call.attempt' && e.endpoint === receipt.endpointId && e.data.outcome === 'fault',
    );
    if (!fault)
      throw new Error(`no faulted call on the BYOK endpoint: ${JSON.stringify(events.map((e) => e.type))}`);
    return fault;
  } finally {
    await supervisor.stop();
  }
}

describe('a BYOK key on a time-scaled clock', () => {
  it("a template in wall time: the key's 7 s retry-after is 105 s of the run's clock", async () => {
    const fault = await faultOfByokCall('walltime');
    expect(fault.data.faultKind).toBe('rate_limited');
    expect(fault.data.retryAfterMs).toBe(WAIT_MS * 15);
  });

  it('a template on the run clock (byokWire gives no scale): the 7 s stay 7 s', async () => {
    const fault = await faultOfByokCall('onclock');
    expect(fault.data.faultKind).toBe('rate_limited');
    expect(fault.data.retryAfterMs).toBe(WAIT_MS);
  });

  it('a wireScale that is not a number > 0 is refused naming the field, and the key is not kept', async () => {
    const supervisor = createSupervisor(byokConfig('walltime', 'x'), {
      clock: createManualClock(0),
      byokWire: () => ({ wireScale: 0 }),
    });
    try {
      const err = await supervisor.byok.inject('default', 'walltime', USER_KEY).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isConfigError(err)).toBe(true);
      expect((err as Error).message).toMatch(/wireScale: is 0; set a number > 0/);
      expect((err as Error).message).not.toContain(USER_KEY);
      expect(supervisor.byok.list()).toEqual([]);
    } finally {
      await supervisor.stop();
    }
  });
});
