/**
 * A process that holds a canary key in ONE given form (and nowhere else), for the leak detectors' own
 * test: it shows that the raw-memory scan and the heap-snapshot search find each form they claim to
 * find, and find nothing in a process that never held the key. The key is derived from a seed as bytes,
 * so no string of it exists unless the form is one.
 *
 * argv[2]: JSON `{ seed, form, snapshotPath? }`. Prints `ready` once it holds the form (and wrote the
 * snapshot), then waits until killed.
 */
import { createHash } from 'node:crypto';
import { writeHeapSnapshot } from 'node:v8';
import { holderKeyBytes } from './leak-holder-key.ts';

const input = JSON.parse(process.argv[2] ?? '{}') as { seed: string; form: string; snapshotPath?: string };
const held: unknown[] = [];
(globalThis as { held?: unknown[] }).held = held;

const bytes = holderKeyBytes(input.seed, input.form);
const mid = Math.floor(bytes.length / 2);
const latin1 = (b: Buffer) => b.toString('latin1');
switch (input.form) {
  case 'none':
    held.push(createHash('sha256').update('nothing').digest('hex'));
    break;
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
    throw new Error(`unknown form ${input.form}`);
}
bytes.fill(0);

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
if (input.snapshotPath) writeHeapSnapshot(input.snapshotPath);
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
