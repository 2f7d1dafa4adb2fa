import type { IncomingMessage, ServerResponse } from 'node:http';
import { isConfigError } from '../core/errors/config-error.ts';
import type { EmulatorStats, FaultRule } from './emulator-types.ts';

/** What the control endpoints drive (the {@link Emulator} itself). */
export interface EmulatorControl {
  stats(): EmulatorStats;
  addFault(rule: FaultRule): string;
  removeFault(id: string): void;
  clearFaults(): void;
  listFaults(): FaultRule[];
  setCredit(keyOrAlias: string, tokens: number | null): void;
  setTimeScale(scale: number): void;
  reset(): void;
  /** Every flavor's base URL, so another process can point its engines at this emulator. */
  baseURLs(): Record<string, string>;
}

/** Thrown by control actions for a bad field; answered with 400 naming it. */
export class ControlInputError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

const send = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ControlInputError('body', 'must be valid JSON');
  }
}

const asObject = (v: unknown): Record<string, unknown> => {
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new ControlInputError('body', 'must be a JSON object');
  return v as Record<string, unknown>;
};

/**
 * Serves `/_emulator/*`: `GET stats`, `GET urls` (every flavor's base URL), `POST faults` (FaultRule → `{id}`), `GET faults`,
 * `DELETE faults[/id]`, `POST credit` (`{key, tokens}`), `POST time-scale` (`{scale}`), `POST reset`. The
 * listener has checked `Host` first (`emulator-host-policy.ts`: 403 for a foreign one, 400 for two).
 */
export async function handleControl(
  control: EmulatorControl,
  method: string,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  // The caller has checked Host (every emulator listener does, before routing): the control routes change
  // what the emulator answers, and a page reaching it under a name of its own must not drive them.
  const path = pathname.replace(/^\/_emulator\/?/, '').replace(/\/$/, '');
  try {
    if (method === 'GET' && path === 'stats') return send(res, 200, control.stats());
    if (method === 'GET' && path === 'urls') return send(res, 200, { baseURLs: control.baseURLs() });
    if (method === 'GET' && path === 'faults') return send(res, 200, { faults: control.listFaults() });
    if (method === 'POST' && path === 'faults')
      return send(res, 200, { id: control.addFault((await readJson(req)) as FaultRule) });
    if (method === 'DELETE' && path === 'faults') {
      control.clearFaults();
      return send(res, 200, { ok: true });
    }
    if (method === 'DELETE' && path.startsWith('faults/')) {
      const id = decodeURIComponent(path.slice('faults/'.length));
      if (!control.listFaults().some((f) => f.id === id))
        return send(res, 404, { error: `no fault rule with id "${id}"`, field: 'id' });
      control.removeFault(id);
      return send(res, 200, { ok: true });
    }
    if (method === 'POST' && path === 'credit') {
      const b = asObject(await readJson(req));
      if (typeof b.key !== 'string' || !b.key)
        throw new ControlInputError('key', 'must be a non-empty string (alias or key)');
      if (b.tokens !== null && (typeof b.tokens !== 'number' || !Number.isFinite(b.tokens))) {
        throw new ControlInputError('tokens', 'must be a number, or null for unlimited');
      }
      control.setCredit(b.key, b.tokens as number | null);
      return send(res, 200, { ok: true });
    }
    if (method === 'POST' && path === 'time-scale') {
      const b = asObject(await readJson(req));
      if (typeof b.scale !== 'number' || !(b.scale > 0) || !Number.isFinite(b.scale)) {
        throw new ControlInputError('scale', 'must be a positive number');
      }
      control.setTimeScale(b.scale);
      return send(res, 200, { ok: true });
    }
    if (method === 'POST' && path === 'reset') {
      control.reset();
      return send(res, 200, { ok: true });
    }
    return send(res, 404, { error: `unknown control endpoint ${method} /_emulator/${path}` });
  } catch (e) {
    if (e instanceof ControlInputError) return send(res, 400, { error: e.message, field: e.field });
    if (isConfigError(e)) return send(res, 400, { error: e.message, field: e.path });
    return send(res, 500, { error: (e as Error).message });
  }
}
