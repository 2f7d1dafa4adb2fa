import { existsSync } from 'node:fs';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Browser, type Page, chromium } from 'playwright-core';

/** Debian's Chromium, installed by .ci/browser. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Browser tests run when Chromium is there, and always under CI (where a missing browser must fail,
 * not skip): they are skipped only on a developer machine without /usr/bin/chromium.
 */
export const BROWSER_TESTS = existsSync(CHROMIUM) || Boolean(process.env.CI);

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
