import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** One asset the visualizer serves. */
export interface VizAsset {
  readonly body: string;
  readonly contentType: string;
}

const PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));

let script: Promise<string> | undefined;

/** The page's script as the build bundled it (`dist/src/viz/page/viz-page.js`); absent in the sources. */
const PREBUILT = `${PAGE_DIR}viz-page.js`;

/**
 * The page's script: `src/viz/page/viz-page.ts` bundled with the reducer (`viz-state.ts`) into one ES module.
 * The installed package serves the bundle its build wrote; the sources (tests, a checkout) bundle it in
 * memory, once per process, with esbuild (a devDependency): nothing is fetched and nothing is written.
 */
function pageScript(): Promise<string> {
  if (existsSync(PREBUILT)) {
    script ??= readFile(PREBUILT, 'utf8');
    return script;
  }
  // esbuild is loaded only when a page is served: importing the visualizer costs nothing until then.
  script ??= import('esbuild')
    .then(({ build }) =>
      build({
        entryPoints: [`${PAGE_DIR}viz-page.ts`],
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        write: false,
        logLevel: 'silent',
        legalComments: 'none',
      }),
    )
    .then((r) => r.outputFiles[0]!.text)
    .catch((e: unknown) => {
      script = undefined;
      throw e;
    });
  return script;
}

/**
 * The page's assets by URL path: `/` (the HTML), `/assets/viz.css`, `/assets/viz-page.js`.
 *
 * @example
 * ```ts
 * const html = await pageAsset('/');
 * html?.contentType; // 'text/html; charset=utf-8'
 * ```
 */
export async function pageAsset(path: string): Promise<VizAsset | undefined> {
  switch (path) {
    case '/':
    case '/index.html':
      return {
        body: await readFile(`${PAGE_DIR}index.html`, 'utf8'),
        contentType: 'text/html; charset=utf-8',
      };
    case '/assets/viz.css':
      return { body: await readFile(`${PAGE_DIR}viz.css`, 'utf8'), contentType: 'text/css; charset=utf-8' };
    case '/assets/viz-page.js':
      return { body: await pageScript(), contentType: 'text/javascript; charset=utf-8' };
    default:
      return undefined;
  }
}
