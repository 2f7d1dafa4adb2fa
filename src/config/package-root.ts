import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** breakwater's package.json, as far as the package needs it. */
export interface PackageManifest {
  readonly name: string;
  readonly version: string;
}

/**
 * The folder holding breakwater's package.json: the repository root when running from the sources, the
 * installed package's folder when running from `dist/` (one level deeper: `dist/src/config/`). Found by walking
 * up from this file, not by a fixed `../..`, so the same code works from either place.
 */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown };
      if (pkg.name === 'breakwater') return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('breakwater: its package.json was not found above its own files');
    dir = up;
  }
}

/**
 * The package root (where `scenarios/` and package.json ship), whatever the working directory.
 *
 * @example
 * ```ts
 * join(PACKAGE_ROOT, 'scenarios', 'agent8-storm', 'scenario.yaml');
 * ```
 */
export const PACKAGE_ROOT: string = findPackageRoot();

/**
 * breakwater's own name and version (what `breakwater --version` prints).
 *
 * @example
 * ```ts
 * packageManifest().version; // '0.1.0'
 * ```
 */
export function packageManifest(): PackageManifest {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
    name?: string;
    version?: string;
  };
  return { name: pkg.name ?? 'breakwater', version: pkg.version ?? '0.0.0' };
}
