/**
 * Headless Chromium for the app's browser tests (playwright-core drives the system's Chromium; no
 * browser download). Where Chromium is missing the suites skip with `browserSkip` as the reason.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { jsonLine, nameText } from '../../src/domain/summary.ts';

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
  options: {
    width?: number;
    height?: number;
    baseURL?: string;
    deviceScaleFactor?: number;
    /** The reader's time zone (UTC unless given). */
    timezoneId?: string;
    /** A touch screen, for `locator.tap()`. */
    hasTouch?: boolean;
  } = {},
): Promise<TestPage> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1200, height: options.height ?? 900 },
    deviceScaleFactor: options.deviceScaleFactor ?? 1,
    baseURL: options.baseURL,
    locale: 'en-US',
    timezoneId: options.timezoneId ?? 'UTC',
    hasTouch: options.hasTouch ?? false,
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

/** How the arguments tree (src/app/views/arguments.ts) reads each value, at every depth: `note: "<b>hi</b>"`. */
export function argumentLines(args: Record<string, unknown> | unknown[]): string[] {
  return Object.entries(args).flatMap(([key, value]) => {
    if (value === null || typeof value !== 'object') return [`${nameText(key)}: ${jsonLine(value)}`];
    const size = Object.keys(value).length;
    if (size === 0) return [`${nameText(key)}: ${Array.isArray(value) ? '[]' : '{}'}`];
    const count = Array.isArray(value)
      ? `[${size} item${size === 1 ? '' : 's'}]`
      : `{${size} field${size === 1 ? '' : 's'}}`;
    return [`${nameText(key)}: ${count}`, ...argumentLines(value as Record<string, unknown>)];
  });
}

/** Asserts that every argument is shown whole in `text` (a page's or a card's innerText). */
export function assertArgumentsShown(text: string, args: Record<string, unknown>) {
  for (const line of argumentLines(args)) assert.ok(text.includes(line), `${line} in ${text}`);
}
