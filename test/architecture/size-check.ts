/**
 * The sizes the house keeps: product files in lines, and functions (declarations, methods, arrows, function
 * expressions) in lines from their first to their last. The checker behind sizes.test.ts.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

export interface Sized {
  /** `path` for a file, `path#name` for a function (`<anonymous>` when it has no name of its own). */
  readonly id: string;
  readonly lines: number;
}

function sourceFiles(root: string, dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
    }
  };
  for (const d of dirs) walk(join(root, d));
  return out.sort();
}

function nameOf(node: ts.Node): string {
  const named = node as { name?: ts.Node };
  if (named.name && ts.isIdentifier(named.name)) return named.name.text;
  if (named.name && ts.isPrivateIdentifier(named.name)) return named.name.text;
  // `const f = () => …` and `f: () => …` take the name they are given.
  const parent = node.parent;
  if (
    parent &&
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) &&
    ts.isIdentifier(parent.name)
  )
    return parent.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  return '<anonymous>';
}

/** Every file's lines and every function's lines under `dirs`, longest first. */
export function measureSizes(root: string, dirs: readonly string[]): { files: Sized[]; functions: Sized[] } {
  const files: Sized[] = [];
  const functions: Sized[] = [];
  for (const path of sourceFiles(root, dirs)) {
    const text = readFileSync(path, 'utf8');
    const rel = relative(root, path).split(sep).join('/');
    files.push({ id: rel, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) });
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        functions.push({ id: `${rel}#${nameOf(node)}`, lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  const longest = (a: Sized, b: Sized) => b.lines - a.lines || a.id.localeCompare(b.id);
  return { files: files.sort(longest), functions: functions.sort(longest) };
}
