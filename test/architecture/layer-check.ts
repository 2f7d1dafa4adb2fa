/**
 * Reads the import graph of a source tree and checks it against declared floors: the checker behind
 * layers.test.ts, kept apart so the same code runs on the product and on a fixture tree.
 *
 * Imports are read with TypeScript's own pre-processor (static `import`/`export … from`, `import type`, and
 * `import('…')` with a literal), so strings and comments that look like imports are not counted. Only relative
 * specifiers are followed: a package name is an arrow out of the tree, which only the machine rule looks at.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** One import: the importing file and what it names, both relative to the tree's root with '/' separators. */
export interface Arrow {
  readonly from: string;
  /** A file of the tree, or the bare package specifier (`xstate`) when `external`. */
  readonly to: string;
  readonly external: boolean;
}

export interface LayerRules {
  /** Top folders read, relative to the root (`src`, `machines`, …). */
  readonly dirs: readonly string[];
  /** The floor of each room; a room missing from the table is reported, never guessed. */
  readonly floors: Readonly<Record<string, number>>;
  /** The rooms whose files may not import anything but `machineImports` (the statecharts). */
  readonly machineRooms: readonly string[];
  /** What a machine may import: package names, and rooms of the tree. */
  readonly machineImports: { readonly packages: readonly string[]; readonly rooms: readonly string[] };
  /** Known upward arrows still waiting for their move, as `from → to`; each must still exist. */
  readonly allowedUpward?: readonly string[];
  /** Known file circles still waiting for their move, as their files joined by ` ↔ ` (sorted). */
  readonly allowedCycles?: readonly string[];
}

export interface LayerReport {
  readonly files: number;
  readonly arrows: readonly Arrow[];
  /** Arrows from a room on a lower floor to a room on a higher one (not allow-listed). */
  readonly upward: readonly Arrow[];
  /** Allow-listed upward arrows that no longer exist (the list must shrink with the code). */
  readonly staleAllowed: readonly string[];
  /** Strongly connected groups of files (each a circle of imports), sorted; allow-listed ones left out. */
  readonly cycles: readonly (readonly string[])[];
  /** Allow-listed circles that no longer exist. */
  readonly staleCycles: readonly string[];
  /** Imports of a machine file outside what machines may import. */
  readonly machineViolations: readonly Arrow[];
  /** Files whose room has no floor in the table. */
  readonly unplaced: readonly string[];
  /** Relative specifiers that name no file (a stale path the checker would otherwise skip silently). */
  readonly unresolved: readonly Arrow[];
}

const SOURCE = /\.(ts|mts|tsx)$/;
const TEST = /(\.test\.ts|-child\.ts)$/;

/** Every product `.ts` file under the given top folders (tests excluded), relative to root, sorted. */
export function productFiles(root: string, dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (SOURCE.test(name) && !TEST.test(name) && !name.endsWith('.d.ts'))
        out.push(toPosix(root, path));
    }
  };
  for (const dir of dirs) if (existsSync(join(root, dir))) walk(join(root, dir));
  return out.sort();
}

/** The room of a file: its top folder under `src/` (`src/index.ts` is the room `index`), or its top folder. */
export function roomOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'src')
    return parts.length > 2 ? (parts[1] as string) : (parts[1] as string).replace(SOURCE, '');
  return parts[0] as string;
}

/** The arrows out of one file, relative specifiers resolved to files of the tree. */
export function importsOf(root: string, file: string): { arrows: Arrow[]; unresolved: Arrow[] } {
  const text = readFileSync(join(root, file), 'utf8');
  const arrows: Arrow[] = [];
  const unresolved: Arrow[] = [];
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    if (!fileName.startsWith('.')) {
      arrows.push({ from: file, to: fileName, external: true });
      continue;
    }
    const target = resolveRelative(root, file, fileName);
    if (target === undefined) unresolved.push({ from: file, to: fileName, external: false });
    else arrows.push({ from: file, to: target, external: false });
  }
  return { arrows, unresolved };
}

function resolveRelative(root: string, file: string, specifier: string): string | undefined {
  const base = resolve(root, dirname(file), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  for (const candidate of candidates) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return toPosix(root, candidate);
  }
  return undefined;
}

function toPosix(root: string, path: string): string {
  return relative(root, path).split(sep).join('/');
}

/** Reads the tree under `root` and checks it against `rules`. */
export function checkLayers(root: string, rules: LayerRules): LayerReport {
  const files = productFiles(root, rules.dirs);
  const arrows: Arrow[] = [];
  const unresolved: Arrow[] = [];
  for (const file of files) {
    const found = importsOf(root, file);
    arrows.push(...found.arrows);
    unresolved.push(...found.unresolved);
  }
  const internal = arrows.filter((a) => !a.external);
  const allowed = new Set(rules.allowedUpward ?? []);
  const seenAllowed = new Set<string>();
  const upward: Arrow[] = [];
  for (const arrow of internal) {
    const from = rules.floors[roomOf(arrow.from)];
    const to = rules.floors[roomOf(arrow.to)];
    if (from === undefined || to === undefined || to <= from) continue;
    const key = arrowText(arrow);
    if (allowed.has(key)) seenAllowed.add(key);
    else upward.push(arrow);
  }
  const machineViolations = arrows.filter(
    (a) =>
      rules.machineRooms.includes(roomOf(a.from)) &&
      (a.external
        ? !rules.machineImports.packages.includes(a.to)
        : !rules.machineImports.rooms.includes(roomOf(a.to))),
  );
  const cycles = fileCycles(files, internal);
  const found = new Set(cycles.map((c) => c.join(' ↔ ')));
  const allowedCycles = new Set(rules.allowedCycles ?? []);
  return {
    files: files.length,
    arrows,
    upward,
    staleAllowed: [...allowed].filter((key) => !seenAllowed.has(key)),
    cycles: cycles.filter((c) => !allowedCycles.has(c.join(' ↔ '))),
    staleCycles: [...allowedCycles].filter((key) => !found.has(key)),
    machineViolations,
    unplaced: files.filter((f) => rules.floors[roomOf(f)] === undefined),
    unresolved,
  };
}

export function arrowText(arrow: Arrow): string {
  return `${arrow.from} → ${arrow.to}`;
}

/** Tarjan's strongly connected components: every group of two or more files (or a file importing itself). */
function fileCycles(files: readonly string[], arrows: readonly Arrow[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const a of arrows) next.get(a.from)?.push(a.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  let counter = 0;
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const to of next.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file) as number, index.get(to) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1 || next.get(file)?.includes(file)) groups.push(group.sort());
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return groups.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}
