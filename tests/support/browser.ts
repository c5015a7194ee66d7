// Debian's Chromium driven by playwright-core (no browser download): what the console's browser
// test and `pnpm bench console` use. Every request the page makes and every CSP complaint it
// logs are recorded, so a test can say the console talked to nobody but its api.
import { execFileSync } from 'node:child_process';
import { chromium, type Browser, type Page } from 'playwright-core';

export function chromiumPath(): string {
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim();
    } catch {
      // try the next name
    }
  }
  throw new Error(
    'chromium is not installed: run `bash scripts/setup.sh` (apt-get install chromium)',
  );
}

export interface ConsoleBrowser {
  browser: Browser;
  page: Page;
  /** Every URL the page requested. */
  requests: string[];
  /** Console messages of the page that mention the Content-Security-Policy. */
  cspErrors: string[];
  close(): Promise<void>;
}

export async function openBrowser(): Promise<ConsoleBrowser> {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    // Root in a container has no user namespace for Chromium's own sandbox.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const requests: string[] = [];
  const cspErrors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(m.text());
  });
  return { browser, page, requests, cspErrors, close: () => browser.close() };
}

/** Fills the sign-in form and waits for the executions page. */
export async function signIn(page: Page, base: string, key: string, project: string) {
  // Whoever an earlier test left signed in is signed out first (the key lives in sessionStorage).
  await page.goto(`${base}/console/`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.fill('input[name=key]', key);
  await page.fill('input[name=project]', project);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('main[data-page=executions] table.executions');
}
