/**
 * Summarizes a `.cpuprofile` written by `node --cpu-prof`: self time by function and by package/file,
 * so a missed target can be explained with the profile's own numbers.
 *
 * Run: `node --import tsx bench/lib/profile-summary.ts <file.cpuprofile> [top=25]`
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: `xstate`, `openai`, `undici`, `src/runtime/engine-pool.ts`, `(gc)`, … */
export function ownerOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const m = url.match(/\/(src|machines|bench)\/.*$/);
  return m ? m[0].slice(1) : url;
}

/** Self time (ms) by function and by owner. */
export function summarizeProfile(profile: Profile): {
  totalMs: number;
  byFunction: [string, number][];
  byOwner: [string, number][];
} {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  const byFunction = new Map<string, number>();
  const byOwner = new Map<string, number>();
  let totalMs = 0;
  for (const [id, ms] of self) {
    const n = nodes.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    const owner = ownerOf(url, functionName);
    const fn = `${functionName || '(anonymous)'} ${owner}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + ms);
    totalMs += ms;
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { totalMs, byFunction: sorted(byFunction), byOwner: sorted(byOwner) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [top]');
  const top = Number(process.argv[3] ?? 25);
  const { totalMs, byFunction, byOwner } = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')));
  const pct = (ms: number) => `${((ms / totalMs) * 100).toFixed(1).padStart(5)} %`;
  console.log(`total ${totalMs.toFixed(0)} ms sampled`);
  console.log('\nself time by package / file');
  for (const [k, ms] of byOwner.slice(0, top))
    console.log(`${pct(ms)}  ${ms.toFixed(0).padStart(7)} ms  ${k}`);
  console.log('\nself time by function');
  for (const [k, ms] of byFunction.slice(0, top))
    console.log(`${pct(ms)}  ${ms.toFixed(0).padStart(7)} ms  ${k}`);
}
