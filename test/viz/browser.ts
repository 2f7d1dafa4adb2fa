import { existsSync } from 'node:fs';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Browser, type Page, chromium } from 'playwright-core';
import { describe, it } from 'vitest';

/** Debian's Chromium, installed by .ci/browser. Env `BREAKWATER_CHROMIUM` points elsewhere. */
export const CHROMIUM = process.env.BREAKWATER_CHROMIUM || '/usr/bin/chromium';

/** Whether this run is CI (`CI=true`, or any non-empty value but `false`/`0`). */
const IN_CI = Boolean(process.env.CI) && !/^(?:false|0)$/i.test(process.env.CI ?? '');

/** Why the browser tests cannot run here, or `undefined` when Chromium is installed. */
export const BROWSER_MISSING: string | undefined = existsSync(CHROMIUM)
  ? undefined
  : `Chromium not found at ${CHROMIUM}: the visualizer's browser tests cannot run. Install it with ` +
    '`sudo apt-get install -y chromium` (Debian; `bash .ci/browser` does the same), or point BREAKWATER_CHROMIUM ' +
    'at a Chromium binary, to run them.';

/**
 * `describe` for a browser test. With Chromium it runs. Without it: under CI it fails with the reason
 * (a browser test must never pass unseen there); elsewhere it is skipped, says why on stderr, and
 * carries the reason in its name so the closing summary lists it.
 */
export function describeBrowser(name: string, body: () => void): void {
  if (!BROWSER_MISSING) {
    describe(name, body);
    return;
  }
  if (IN_CI) {
    describe(name, () => {
      it('needs Chromium (CI=true: a skipped browser test is a failure)', () => {
        throw new Error(BROWSER_MISSING);
      });
    });
    return;
  }
  process.stderr.write(`\n[browser tests] ${name}: SKIPPED. ${BROWSER_MISSING} Under CI=true this fails.\n`);
  describe.skip(`${name} [skipped: ${BROWSER_MISSING}]`, body);
}

/** Where screenshots go (test-output/ at the repository root). */
export const OUTPUT_DIR = fileURLToPath(new URL('../../test-output/', import.meta.url));

/** Launches headless Chromium with everything that would reach the network turned off. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** Every URL the page requests, and every script error it throws, from now on. */
export function watchPage(page: Page): { requests: string[]; errors: string[] } {
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  return { requests, errors };
}

/** The text of the element with this data-testid, or null. */
export function textOf(page: Page, testid: string): Promise<string | null> {
  return page.locator(`[data-testid="${testid}"]`).first().textContent();
}

/** Waits until the element with this data-testid shows exactly `text`. */
export async function waitForText(page: Page, testid: string, text: string, timeout = 20_000): Promise<void> {
  await page.waitForFunction(
    ([id, want]) => document.querySelector(`[data-testid="${id}"]`)?.textContent === want,
    [testid, text] as const,
    { timeout },
  );
}

export function screenshotPath(name: string): string {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  return `${OUTPUT_DIR}${name}`;
}
