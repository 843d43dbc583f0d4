/**
 * Headless Chromium for the app's browser tests (playwright-core drives the system's Chromium; no
 * browser download). Where Chromium is missing the suites skip with `browserSkip` as the reason.
 */
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Why the browser suites are skipped here, if they are. */
export const browserSkip: string | undefined = existsSync(CHROMIUM_PATH)
  ? undefined
  : `Chromium not found at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH): browser tests skipped`;

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** One browser per suite; every test opens fresh contexts (own cookies and storage) in it. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS, timeout: 30_000 });
}

export async function closeBrowser(browser: Browser | undefined): Promise<void> {
  await browser?.close().catch(() => {});
}

export interface TestPage {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors, in order. */
  errors: string[];
  /** Every alert / confirm / prompt that opened (dismissed at once). */
  dialogs: string[];
  close(): Promise<void>;
}

/** A fresh context (a new profile: no cookies) with one page, watched for errors and dialogs. */
export async function openPage(
  browser: Browser,
  options: { width?: number; height?: number; baseURL?: string; deviceScaleFactor?: number } = {},
): Promise<TestPage> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1200, height: options.height ?? 900 },
    deviceScaleFactor: options.deviceScaleFactor ?? 1,
    baseURL: options.baseURL,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const errors: string[] = [];
  const dialogs: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss().catch(() => {});
  });
  return { context, page, errors, dialogs, close: () => context.close().catch(() => {}) };
}
