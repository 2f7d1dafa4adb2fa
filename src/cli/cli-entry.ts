import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The file that starts the `breakwater` command of this very installation, found from this module's own place:
 * next to it (`main.js`) in the built package (`dist/src/cli/`, what `npm install breakwater` gives), else the
 * checkout's `bin/breakwater.js` (this module is TypeScript there, run by tsx or bundled by that bin, which keeps
 * each module's own URL). Worker processes are started with it, so they run the same code as their parent.
 *
 * @example
 * ```ts
 * spawn(process.execPath, [cliEntryPath(), 'worker', '--run-id', runId]);
 * ```
 */
export function cliEntryPath(moduleUrl: string = import.meta.url): string {
  return moduleUrl.endsWith('.js')
    ? fileURLToPath(new URL('./main.js', moduleUrl))
    : fileURLToPath(new URL('../../bin/breakwater.js', moduleUrl));
}

/**
 * {@link cliEntryPath}, checked to exist: a package missing its entry is one line saying which file and what to
 * do, before any run is stored.
 *
 * @example
 * ```ts
 * const entry = requireCliEntry(); // throws Error naming the file when it is not there
 * ```
 */
export function requireCliEntry(moduleUrl: string = import.meta.url): string {
  const entry = cliEntryPath(moduleUrl);
  if (!existsSync(entry))
    throw new Error(
      `the breakwater command's entry ${entry} is missing, so no worker can be started; reinstall breakwater (or run \`npm run build\` in a checkout)`,
    );
  return entry;
}
