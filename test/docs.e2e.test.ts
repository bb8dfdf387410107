/**
 * The API reference at /docs, in a real browser (Debian's chromium): titled Waygate, rendered from
 * the served document, and working offline — the page asks nothing of any host but the gateway, and
 * shows none of the docs vendor's cloud buttons.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS, ensureChromium } from '../scripts/chromium.mjs';
import { startGateway, type TestGateway } from './support/gateway.js';

const screenshots = path.resolve(import.meta.dirname, '..', '.test-data', 'screenshots');

describe('the API reference page', () => {
  let gw: TestGateway;
  let browser: Browser;

  beforeAll(async () => {
    gw = await startGateway();
    browser = await chromium.launch({ executablePath: ensureChromium(), args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
  });

  it('renders the operations offline, titled Waygate, without vendor buttons', { timeout: 120_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const origin = new URL(gw.url).origin;
    const elsewhere: string[] = [];
    // Offline for real: anything that is not the gateway is refused, and remembered.
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    await page.goto(`${gw.url}/docs`);
    await page.getByRole('heading', { name: 'Waygate API' }).first().waitFor({ timeout: 60_000 });
    expect(await page.title()).toBe('Waygate API reference');
    await page.waitForLoadState('networkidle');
    fs.mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: path.join(screenshots, 'docs-reference.png') });
    expect(elsewhere).toEqual([]);
    const text = await page.locator('body').innerText();
    expect(text).toContain('Waygate API');
    // The vendor's cloud: its API client, AI agent, MCP generator and registry buttons.
    expect(text).not.toMatch(/Open API Client|Ask AI|Generate MCP|Scalar Registry|Open in Scalar/i);
    await page.close();
  });
});
