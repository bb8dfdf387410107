/**
 * The web interface end to end, in a real browser (Debian's chromium through playwright-core):
 * register, sign in, create a sandbox instance, see its QR, scan it with the sandbox button, watch
 * it turn CONNECTED, send a text, see SEND_MESSAGE in the live tail, retry a dead letter, create a failover group, sign out.
 * Screenshots of each page land in .test-data/screenshots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS, ensureChromium, ensureWebBuilt } from '../scripts/chromium.mjs';
import { startGateway, uniqueNumber, type TestGateway } from './support/gateway.js';
import { WebhookReceiver } from './support/receiver.js';

const root = path.resolve(import.meta.dirname, '..');
const shots = path.join(root, '.test-data', 'screenshots');

describe('web interface in chromium', () => {
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  const receiver = new WebhookReceiver();
  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    ensureWebBuilt(root, () => undefined);
    const executablePath = ensureChromium(() => undefined);
    fs.mkdirSync(shots, { recursive: true });
    receiver.defaultStatus = 500;
    await receiver.start();
    // The receiver runs on loopback: a self-hoster's setting (SECURITY.md) lets an instance token point its webhook there.
    gw = await startGateway({ env: { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(15_000);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
    await receiver.stop();
  });

  it('takes a newcomer from registration to a connected sandbox instance, a sent message and a retried dead letter', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));

    // First run: the owner registers.
    await page.goto(gw.url);
    await expect.poll(() => page.getByRole('heading', { name: 'Create the owner account' }).isVisible()).toBe(true);
    await page.getByLabel('Email').fill('owner@example.com');
    await page.getByLabel('Name').fill('Olivia');
    await page.getByLabel('Password').fill('a long enough password');
    await shot('01-register');
    await page.getByRole('button', { name: 'Create owner account' }).click();
    await page.getByRole('heading', { name: 'Instances' }).waitFor();
    await page.getByText('No instance yet').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();

    // Sign in.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('Email').fill('owner@example.com');
    await page.getByLabel('Password').fill('a wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'wrong email or password' }).waitFor();
    await page.getByLabel('Password').fill('a long enough password');
    await shot('02-sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Instances' }).waitFor();
    await page.locator('.live-open').waitFor();

    // Create a sandbox instance: its token is shown once.
    await page.getByLabel('Name').fill('shop-sandbox');
    await page.getByLabel('Network').selectOption('sandbox');
    await page.getByRole('button', { name: 'Create instance' }).click();
    const token = await page.getByTestId('secret-value').textContent();
    expect(token).toMatch(/^wgt_/);
    await page.locator('[data-instance="shop-sandbox"]').waitFor();
    await shot('03-instances');

    // Connect: the QR arrives over the admin WebSocket; the sandbox phone scans it.
    await page.getByRole('link', { name: 'shop-sandbox' }).click();
    await page.getByRole('button', { name: 'Connect' }).click();
    const qr = page.getByTestId('qr');
    await qr.waitFor();
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    await page.locator('[data-status="QRCODE"]').first().waitFor();
    await shot('04-qr');
    const phone = uniqueNumber();
    await page.getByLabel('Phone number', { exact: true }).fill(phone);
    await page.getByRole('button', { name: 'Scan as phone' }).click();
    await page.getByTestId('connected').waitFor();
    await page.locator('.instance-title [data-status="CONNECTED"]').waitFor();
    await page.getByText(`Linked to +${phone}`).waitFor();
    await shot('05-connected');

    // A webhook that fails: the first event becomes a dead letter (WEBHOOK_MAX_ATTEMPTS=1).
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved.').waitFor();

    // Send a text and see it in the live tail.
    await page.getByRole('link', { name: 'Send' }).click();
    await page.getByLabel('To (number with country code, or group id)').fill(uniqueNumber());
    await page.getByLabel('Text', { exact: true }).fill('Hello from the web interface');
    await page.getByRole('button', { name: 'Send text' }).click();
    await page.getByText(/^Text sent/).waitFor();
    await page.getByRole('link', { name: 'Live events' }).click();
    const sendEvent = page.locator('li[data-event="SEND_MESSAGE"]').first();
    await sendEvent.waitFor();
    await sendEvent.locator('summary').click();
    await page.getByText('Hello from the web interface').first().waitFor();
    await shot('06-live-events');

    // The dead letter, retried once the receiver answers 200.
    await expect.poll(() => receiver.requests.length, { timeout: 10_000 }).toBeGreaterThan(0);
    await page.getByRole('link', { name: 'Dead letters' }).click();
    const retry = page.getByRole('button', { name: 'Retry' }).first();
    await expect
      .poll(
        async () => {
          if (await retry.isVisible()) return true;
          await page.getByRole('button', { name: 'Refresh' }).click();
          return false;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    await shot('07-dead-letters');
    receiver.defaultStatus = 200;
    const before = receiver.requests.length;
    await retry.click();
    await page.getByText(/delivered \(HTTP 200\)/).waitFor();
    expect(receiver.requests.length).toBe(before + 1);
    await shot('08-dead-letter-retried');

    // Chats with the message just sent, and the profile page.
    await page.getByRole('link', { name: 'Chats' }).click();
    await page.locator('.chat-item').first().click();
    await page.locator('.messages .mine').filter({ hasText: 'Hello from the web interface' }).waitFor();
    await shot('09-chats');
    await page.getByRole('link', { name: /Profile/ }).click();
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    await shot('10-profile');

    // Operations: stats, and a failover group of the sandbox instance with its token shown once.
    await page.getByRole('link', { name: 'Operations' }).click();
    await page.getByRole('heading', { name: 'Operations' }).waitFor();
    await page.getByTestId('stats').getByText('CONNECTED: 1').waitFor();
    await page.getByText('No failover group yet.').waitFor();
    await page.getByText('No open alert.').waitFor();
    await page.getByLabel('Group name').fill('shop-group');
    await page.getByLabel('Policy').selectOption('round-robin');
    await page.getByLabel('shop-sandbox').check();
    await page.getByRole('button', { name: 'Create group' }).click();
    expect(await page.getByTestId('secret-value').textContent()).toMatch(/^wgg_/);
    const group = page.locator('[data-group="shop-group"]');
    await group.getByText('shop-sandbox').waitFor();
    await group.getByTestId('serving').waitFor();
    await shot('10b-operations');
    await page.reload();
    await group.waitFor();
    expect(await page.getByTestId('secret-value').count()).toBe(0);

    // Phone width: the menu folds, the list stays usable.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(gw.url);
    await page.locator('[data-instance="shop-sandbox"] [data-status="CONNECTED"]').waitFor();
    await shot('11-phone-width');
    await page.getByRole('button', { name: 'Menu' }).click();

    // Sign out ends the session: a reload shows the sign-in page.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await shot('12-signed-out');
    expect(errors).toEqual([]);
  }, 120_000);
});
