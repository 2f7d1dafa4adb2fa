/*
 * A process that makes supervisors on a shared quota and stops each one at once, or a few ms later, while its
 * coordination backend may still be connecting (loading the driver, the first query, the migrations, LISTEN /
 * SUBSCRIBE). Then it does nothing: it must exit by itself. If it is still alive after `reportAfterMs`, it prints the
 * handles that keep it (an unref'd timer: the report itself holds nothing).
 */
import pino from 'pino';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeConfigInput } from '../../src/runtime/runtime-config.ts';

interface Spec {
  readonly coordination: CoordinationOptions;
  /** How long after creating each supervisor it is stopped, ms (0: in the same tick). */
  readonly stopAfterMs: readonly number[];
  readonly reportAfterMs: number;
}

const spec = JSON.parse(process.argv[2]!) as Spec;
const config: RuntimeConfigInput = {
  endpoints: [
    {
      id: 'e',
      provider: 'openai',
      model: 'gpt-4o-mini',
      apiKey: 'sk-test-close-race-000000000',
      baseURL: 'http://127.0.0.1:9/v1',
    },
  ],
  chains: { main: ['e'] },
};

// Errors and warnings on stderr: a connect cut short by the stop is no backend gone (the test reads them).
const logger = pino({ level: 'warn' }, pino.destination(2));
for (const ms of spec.stopAfterMs) {
  const supervisor = createSupervisor(config, { coordination: spec.coordination, logger });
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  await supervisor.stop();
}
process.stdout.write('stopped\n');
setTimeout(() => {
  const handles = (process as unknown as { _getActiveHandles(): object[] })._getActiveHandles();
  const described = handles.map((h) => {
    const s = h as { constructor: { name: string }; remotePort?: number };
    return `${s.constructor.name}${s.remotePort ? `:${s.remotePort}` : ''}`;
  });
  process.stdout.write(`still alive: ${described.join(', ')}\n`);
}, spec.reportAfterMs).unref();
