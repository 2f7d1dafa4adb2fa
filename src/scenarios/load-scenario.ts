import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { PACKAGE_ROOT } from '../config/package-root.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { applyJobOverrides } from './job-overrides.ts';
import { describeIssue, formatPath, lineOf } from './scenario-issue.ts';
import { findUnstorableText } from './scenario-text.ts';
import { scanJson } from './json-scan.ts';
import { scenarioSchema } from './scenario-schema.ts';
import type { ScenarioSpec } from './scenario-types.ts';

export { PACKAGE_ROOT };

const SCENARIO_FILES = ['scenario.yaml', 'scenario.yml', 'scenario.json'];

function scenarioFileIn(dir: string): string | undefined {
  for (const f of SCENARIO_FILES) {
    const p = join(dir, f);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * The scenarios shipped with breakwater (folders of `scenarios/` holding a `scenario.yaml`), sorted.
 *
 * @example
 * ```ts
 * listScenarios(); // ['agent8-storm', 'morning-peak']
 * ```
 */
export function listScenarios(): string[] {
  const root = join(PACKAGE_ROOT, 'scenarios');
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && scenarioFileIn(join(root, d.name)) !== undefined)
    .map((d) => d.name)
    .sort();
}

/**
 * Finds a scenario file: a path to a file as it is, a folder's `scenario.yaml` (or `.yml`, `.json`),
 * else the shipped `scenarios/<name>` under the package root — so `breakwater run agent8-storm` works
 * from any directory. Returns an absolute path; an unknown name is a {@link ConfigError} listing the
 * shipped scenarios.
 *
 * @example
 * ```ts
 * resolveScenario('morning-peak'); // '/…/breakwater/scenarios/morning-peak/scenario.yaml'
 * resolveScenario('./my-scenario.yaml'); // '/cwd/my-scenario.yaml'
 * ```
 */
export function resolveScenario(nameOrPath: string): string {
  const direct = resolve(nameOrPath);
  if (existsSync(direct)) {
    const stat = statSync(direct);
    if (stat.isFile()) return direct;
    if (!stat.isDirectory()) {
      throw new ConfigError({
        source: nameOrPath,
        path: '',
        message:
          'is not a regular file or a folder (a device, a pipe or a socket); give a YAML or JSON scenario file',
      });
    }
    const inside = scenarioFileIn(direct);
    if (inside) return inside;
    throw new ConfigError({
      source: nameOrPath,
      path: '',
      message: `is a folder without a scenario file; put a ${SCENARIO_FILES.join(' / ')} in it`,
    });
  }
  if (!isAbsolute(nameOrPath) && !nameOrPath.includes('/')) {
    const shipped = scenarioFileIn(join(PACKAGE_ROOT, 'scenarios', nameOrPath));
    if (shipped) return shipped;
  }
  throw new ConfigError({
    source: nameOrPath,
    path: '',
    message: `is neither a scenario file or folder nor a shipped scenario; give a path, or one of: ${listScenarios().join(', ') || 'none'}`,
  });
}

/** Largest scenario file read, in bytes: a scenario is configuration, not data. */
const MAX_SCENARIO_BYTES = 10 * 1_048_576;

/** How a file is named in messages: relative to the working directory when it is inside it. */
function label(file: string): string {
  const rel = relative(process.cwd(), file);
  // `..` as a path segment, not as a prefix: a folder named `..cache` inside the cwd is inside it.
  return rel && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel) ? rel : file;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * Parses and validates scenario text (YAML, or JSON — JSON is read as YAML so its lines are known too).
 * A bad scenario is refused with ONE {@link ConfigError} naming `source`, the line, the field and what
 * to do, e.g. `scenarios/x/scenario.yaml:42 at agents[3].chain: names chain "gold", which is not
 * defined under runtime.chains (defined: premium, light)`.
 *
 * @example
 * ```ts
 * const spec = parseScenario(readFileSync('my.yaml', 'utf8'), 'my.yaml');
 * ```
 */
export function parseScenario(text: string, source: string): ScenarioSpec {
  // JSON is read by JSON.parse when it is valid JSON: the YAML document model of a 10 MB JSON file took
  // ~40× the file in memory and seconds. Lines and duplicate keys then come from one scan (json-scan.ts).
  const json = text.trimStart().startsWith('{') ? tryJson(text) : undefined;
  let value: unknown;
  let lineAt: (path: readonly PropertyKey[]) => number | undefined;
  if (json !== undefined) {
    value = json;
    lineAt = (path) => scanJson(text, path).line;
    const { duplicate } = scanJson(text);
    if (duplicate)
      throw new ConfigError({
        source,
        path: formatPath(duplicate.path),
        line: duplicate.line,
        message: 'is given twice in the same mapping; keep one',
      });
  } else {
    const counter = new LineCounter();
    const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
    const bad = doc.errors[0];
    if (bad) {
      const line = bad.linePos?.[0]?.line ?? counter.linePos(bad.pos[0]).line;
      throw new ConfigError({
        source,
        path: '',
        line,
        message: `is not valid YAML/JSON: ${bad.message.split('\n')[0]}; fix the syntax on that line`,
      });
    }
    value = doc.toJS({ maxAliasCount: 1_000 });
    lineAt = (path) => lineOf(doc, counter, path);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError({
      source,
      path: '',
      line: 1,
      message: 'must be a mapping with name, runtime, agents and rounds: or schedule:',
    });
  }
  // Before the schema: a string the store cannot keep would otherwise fail the first commit, seconds in.
  const unstorable = findUnstorableText(value);
  if (unstorable) {
    const line = lineAt(unstorable.path);
    throw new ConfigError({
      source,
      path: formatPath(unstorable.path),
      ...(line !== undefined ? { line } : {}),
      message: unstorable.message,
    });
  }
  const parsed = scenarioSchema.safeParse(value);
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    const { path, message } = describeIssue(first, value, scenarioSchema);
    const line = lineAt(path);
    const more =
      parsed.error.issues.length > 1
        ? ` (${parsed.error.issues.length - 1} more problem(s) after this one)`
        : '';
    throw new ConfigError({
      source,
      path: formatPath(path),
      ...(line !== undefined ? { line } : {}),
      message: scrubSecrets(message) + more,
    });
  }
  return deepFreeze(applyJobOverrides(parsed.data as unknown as ScenarioSpec));
}

/** The value of `text` when it is valid JSON, else undefined (the YAML parser then says where it breaks). */
function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Loads a scenario: a `scenario.yaml` path, a folder holding one, or the name of a shipped scenario
 * (see {@link resolveScenario}); YAML or JSON. Validated by {@link parseScenario}: unknown fields,
 * wrong types and broken cross-references are refused with one {@link ConfigError} naming the file,
 * its line and the field. The result is frozen, with the runtime's defaults filled in.
 *
 * @example
 * ```ts
 * const spec = loadScenario('agent8-storm');
 * spec.agents.map((a) => a.name); // ['Kai', 'Yuna', …, 'Andrew']
 * ```
 */
export function loadScenario(pathOrDir: string): ScenarioSpec {
  const file = resolveScenario(pathOrDir);
  const size = statSync(file).size;
  if (size > MAX_SCENARIO_BYTES) {
    throw new ConfigError({
      source: label(file),
      path: '',
      message: `is ${(size / 1_048_576).toFixed(1)} MB; a scenario file is at most ${MAX_SCENARIO_BYTES / 1_048_576} MB`,
    });
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError({
      source: label(file),
      path: '',
      message: `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); check the path and its permissions`,
    });
  }
  return parseScenario(text, label(file));
}
