/**
 * A process that holds canary keys, each in ONE given form (and nowhere else), for the leak detectors' own
 * test: it shows that the raw-memory scan and the heap-snapshot search find each form they claim to
 * find, and find nothing of a key the process never held. Every form has its own key, derived from a seed as
 * bytes, so no string of a key exists unless its form is one, and the forms cannot see each other.
 *
 * argv[2]: JSON `{ seed, forms, snapshotPath? }`. Prints `ready` once it holds the forms (and wrote the
 * snapshot), then waits until killed.
 */
import { writeHeapSnapshot } from 'node:v8';
import { holderKeyBytes } from './leak-holder-key.ts';

const input = JSON.parse(process.argv[2] ?? '{}') as { seed: string; forms: string[]; snapshotPath?: string };
const held: unknown[] = [];
(globalThis as { held?: unknown[] }).held = held;

for (const form of input.forms) hold(form);

function hold(form: string): void {
  const bytes = holderKeyBytes(input.seed, form);
  const mid = Math.floor(bytes.length / 2);
  const latin1 = (b: Buffer) => b.toString('latin1');
  switch (form) {
    case 'string':
    case 'non-ascii string':
      held.push(latin1(bytes));
      break;
    case 'two-byte string':
      held.push(bytes.toString('utf16le'));
      break;
    case 'buffer':
      held.push(Buffer.from(bytes));
      break;
    case 'halves':
      held.push(latin1(bytes.subarray(0, mid)), latin1(bytes.subarray(mid)));
      break;
    case 'chars':
      held.push(Array.from(bytes, (b) => String.fromCharCode(b)));
      break;
    case 'char codes':
      held.push(Array.from(bytes, (b) => b));
      break;
    case 'utf16 array':
      held.push(Uint16Array.from(bytes));
      break;
    case 'hex':
      held.push(bytes.toString('hex'));
      break;
    case 'base64':
      held.push(bytes.toString('base64'));
      break;
    default:
      throw new Error(`unknown form ${form}`);
  }
  bytes.fill(0);
}

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
if (input.snapshotPath) writeHeapSnapshot(input.snapshotPath);
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
