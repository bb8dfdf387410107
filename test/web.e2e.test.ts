/**
 * The web interface end to end, in a real browser (Debian's chromium through playwright-core):
 * register, sign in, create a sandbox instance, see its QR, scan it with the sandbox button, watch
 * it turn CONNECTED, send a text, see SEND_MESSAGE in the live tail, retry a dead letter; send a poll,
 * a location and an uploaded image that arrive at a second sandbox instance; run a backfill that completes and one
 * that fails; create a failover group; a viewer sees Operations and Backfill read-only (and the API
 * refuses their writes); acknowledge an alert that fired for real; sign out.
 * Screenshots of each page land in .test-data/screenshots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS, ensureChromium, ensureWebBuilt } from '../scripts/chromium.mjs';
import {
  connectedInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from './support/gateway.js';
import { makeSamples } from './support/media.js';
import { WebhookReceiver } from './support/receiver.js';

const root = path.resolve(import.meta.dirname, '..');
const shots = path.join(root, '.test-data', 'screenshots');

describe('web interface in chromium', () => {
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  let events: RecordedEvents;
  const receiver = new WebhookReceiver();
  /** The webhook of the second instance: always fails, so its events become dead letters (and an alert fires). */
  const failing = new WebhookReceiver();
  const errors: string[] = [];
  const shot = (name: string, on: Page = page) => on.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  let shopId = '';
  let peer: TestInstance;
  let invitationLink = '';

  beforeAll(async () => {
    ensureWebBuilt(root, () => undefined);
    const executablePath = ensureChromium(() => undefined);
    fs.mkdirSync(shots, { recursive: true });
    receiver.defaultStatus = 500;
    failing.defaultStatus = 500;
    await receiver.start();
    await failing.start();
    // The receivers run on loopback: a self-hoster's setting (SECURITY.md) lets an instance token point its webhook there.
    // Alert rules are evaluated every 200 ms so that an alert fires within the test.
    gw = await startGateway({ env: { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ALERT_EVAL_INTERVAL_MS: '200' } });
    events = recordEvents(gw);
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (error) => errors.push(error.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
    await receiver.stop();
    await failing.stop();
  });

  it('takes a newcomer from registration to a connected sandbox instance, a sent message and a retried dead letter', async () => {
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
    // By keyboard: Enter in the password field submits the form.
    await page.getByLabel('Password').press('Enter');
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
    shopId = (await page.locator('[data-instance="shop-sandbox"]').getAttribute('data-instance-id'))!;
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
    // The health score follows the status (the list is fetched again after CONNECTION events).
    await page.locator('.instance-title [data-health="100"]').waitFor();
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
    await page.getByText(/^Text sent: message id/).waitFor();
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
    // An invitation for a read-only colleague (used by the viewer test below).
    await page.getByRole('form', { name: 'Invite someone' }).getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Create invitation link' }).click();
    invitationLink = (await page.getByTestId('secret-value').textContent())!;
    expect(invitationLink).toContain('/register?invitation=');
    await shot('10-profile');
    expect(errors).toEqual([]);
  }, 120_000);

  it('sends a poll and a location from the Send tab that arrive at another sandbox instance', async () => {
    peer = await connectedInstance(gw, uniqueNumber(), { instanceName: 'peer-sandbox' });
    const webhook = await gw.api('POST', '/api/v1/instance/webhook', { key: peer.token, body: { webhookUrl: failing.url } });
    expect(webhook.status).toBe(200);

    await page.goto(`${gw.url}/instances/${shopId}?tab=send`);
    await page.getByLabel('To (number with country code, or group id)').fill(peer.number!);
    await page.getByLabel('Kind').selectOption('poll');
    await page.getByLabel('Question').fill('Lunch today?');
    await page.getByLabel('Options').fill('Pizza\nSushi\nSalad');
    await page.getByRole('button', { name: 'Send poll' }).click();
    await page.getByText(/^Poll sent: message id/).waitFor();
    await shot('13-send-poll');
    const poll = await events.next(peer.id, 'MESSAGE', (e) => e.data.message.pollCreationMessageV3 !== undefined);
    expect(poll.data.message.pollCreationMessageV3).toMatchObject({ name: 'Lunch today?' });
    expect(poll.data.message.pollCreationMessageV3.options.map((o: { optionName: string }) => o.optionName)).toEqual([
      'Pizza',
      'Sushi',
      'Salad',
    ]);

    await page.getByLabel('Kind').selectOption('location');
    await page.getByLabel('Latitude').fill('-23.5613');
    await page.getByLabel('Longitude').fill('-46.6565');
    await page.getByLabel('Place name').fill('Avenida Paulista');
    await page.getByRole('button', { name: 'Send location' }).click();
    await page.getByText(/^Location sent: message id/).waitFor();
    const location = await events.next(peer.id, 'MESSAGE', (e) => e.data.message.locationMessage !== undefined);
    expect(location.data.message.locationMessage).toMatchObject({
      degreesLatitude: -23.5613,
      degreesLongitude: -46.6565,
      name: 'Avenida Paulista',
    });

    // A file upload: the bytes travel as base64 and arrive as an image with its caption.
    await page.getByLabel('Kind').selectOption('media');
    await page
      .getByLabel('File', { exact: true })
      .setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: (await makeSamples()).png });
    await page.getByLabel('Caption').fill('A photo from the web');
    await page.getByRole('button', { name: /^Send file/ }).click();
    await page.getByText(/^File .* sent: message id/).waitFor();
    const image = await events.next(peer.id, 'MESSAGE', (e) => e.data.message.imageMessage !== undefined);
    expect(image.data.message.imageMessage).toMatchObject({ caption: 'A photo from the web', mimetype: 'image/png' });

    // Every kind of the table has its form; a refused send shows the gateway's message.
    const kinds = await page.getByLabel('Kind').locator('option').allTextContents();
    expect(kinds.length).toBeGreaterThanOrEqual(15);
    await page.getByLabel('Kind').selectOption('list');
    await page.getByRole('button', { name: 'Add row' }).click();
    await page.getByLabel('Row 2').waitFor();
    await page.getByLabel('Kind').selectOption('reaction');
    await page.getByLabel('Message id').fill('no-such-message');
    await page.getByRole('button', { name: 'Send reaction' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /message no-such-message not found/ })
      .waitFor();
    await shot('14-send-error');

    // The peer's side in the page: this tab lacks its token, so paste it; its chat shows what arrived.
    await page.goto(`${gw.url}/instances/${peer.id}?tab=chats`);
    await page.getByText('This section needs the instance token').waitFor();
    await page.getByLabel('Instance token', { exact: true }).fill(peer.token);
    await page.getByRole('button', { name: 'Use this token' }).click();
    await page.getByText('This tab holds the instance token.').waitFor();
    await page.locator('.chat-item').first().click();
    const theirs = page.locator('.messages .theirs');
    await theirs.filter({ hasText: '[poll creation] Lunch today?' }).waitFor();
    await theirs.filter({ hasText: '[location] Avenida Paulista' }).waitFor();
    await theirs.filter({ hasText: '[image] A photo from the web' }).waitFor();
    expect(await theirs.allTextContents()).toEqual([
      expect.stringContaining('[poll creation] Lunch today?'),
      expect.stringContaining('[location] Avenida Paulista'),
      expect.stringContaining('[image] A photo from the web'),
    ]);
    await shot('14b-peer-chat');
    expect(errors).toEqual([]);
  }, 60_000);

  it('runs a backfill to completion, and shows the error of one that fails', async () => {
    await page.getByRole('link', { name: 'Backfill' }).click();
    await page.getByRole('heading', { name: 'Backfill', exact: true }).waitFor();
    await page.getByText('No backfill job yet.').waitFor();
    // The shop instance's webhook answers 200 by now: its SEND_MESSAGE events go again.
    const before = receiver.requests.length;
    await page.getByRole('form', { name: 'Start a backfill' }).getByLabel('Instance').selectOption({ label: 'shop-sandbox' });
    await page.getByLabel('SEND_MESSAGE').check();
    await page.getByRole('button', { name: 'Start backfill' }).click();
    await page.getByText(/^Job .* started: \d+ events/).waitFor();
    await page.locator('li.job[data-status="completed"]').waitFor();
    const redelivered = receiver.requests.slice(before).map((r) => r.json);
    expect(redelivered.length).toBe(4); // the text, the poll, the location and the photo
    expect(redelivered.every((e) => e.redelivered === true && e.event === 'SEND_MESSAGE' && e.instanceId === shopId)).toBe(true);
    const sent = Number((await page.locator('li.job[data-status="completed"] [data-testid="job-count"]').textContent())!.split(' ')[0]);
    expect(sent).toBe(redelivered.length);

    // The peer's webhook always fails: the job ends `failed`, with the error and where it stopped.
    await page.getByRole('form', { name: 'Start a backfill' }).getByLabel('Instance').selectOption({ label: 'peer-sandbox' });
    await page.getByLabel('SEND_MESSAGE').uncheck();
    await page.getByRole('button', { name: 'Start backfill' }).click();
    const failed = page.locator('li.job[data-status="failed"]');
    await failed.waitFor({ timeout: 20_000 });
    await failed.getByRole('alert').waitFor();

    // A slow job (one event per second) is cancelled while it runs; what it delivered stays delivered.
    await page.getByRole('form', { name: 'Start a backfill' }).getByLabel('Instance').selectOption({ label: 'shop-sandbox' });
    await page.getByLabel('Events per second').fill('1');
    await page.getByRole('button', { name: 'Start backfill' }).click();
    const running = page.locator('li.job[data-status="running"], li.job[data-status="queued"]');
    await running.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('li.job[data-status="cancelled"]').waitFor();
    const jobs = await gw.api('GET', '/api/v1/admin/backfill?status=cancelled', { key: gw.adminKey });
    expect(jobs.body.items).toHaveLength(1);
    expect(jobs.body.items[0].delivered).toBeLessThan(jobs.body.items[0].total);
    await shot('15-backfill');
    expect(errors).toEqual([]);
  }, 60_000);

  it('shows the Operations page, a failover group and an alert that fired for real', async () => {
    // Operations: stats, and a failover group of the sandbox instance with its token shown once.
    await page.getByRole('link', { name: 'Operations' }).click();
    await page.getByRole('heading', { name: 'Operations' }).waitFor();
    await page.getByTestId('stats').getByText('CONNECTED: 2').waitFor();
    await page.getByText('No failover group yet.').waitFor();
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

    // A rule on the peer's dead letters, made in the page; the peer's failing webhook has made some,
    // so the rule fires at its next evaluation.
    await page.getByText('No alert rule yet.').waitFor();
    const ruleForm = page.getByRole('form', { name: 'Create an alert rule' });
    await ruleForm.getByLabel('Rule name').fill('peer-dead-letters');
    await ruleForm.getByLabel('Watches').selectOption('dead_letters_above');
    await ruleForm.getByLabel('Dead letters above which it fires').fill('0');
    await ruleForm.getByLabel('For at least (seconds)').fill('0');
    await ruleForm.getByLabel('Scope').selectOption('instance');
    await ruleForm.getByLabel('Instance', { exact: true }).selectOption({ label: 'peer-sandbox' });
    await ruleForm.getByLabel('Notify (webhook URL)').fill(failing.url);
    await ruleForm.getByRole('button', { name: 'Create rule' }).click();
    expect((await ruleForm.getByTestId('secret-value').textContent())!.length).toBeGreaterThanOrEqual(16);
    const rules = await gw.api('GET', '/api/v1/admin/alert-rules', { key: gw.adminKey });
    expect(rules.body.items).toEqual([
      expect.objectContaining({
        name: 'peer-dead-letters',
        kind: 'dead_letters_above',
        threshold: 0,
        scope: 'instance',
        instanceId: peer.id,
      }),
    ]);
    const ruleId = rules.body.items[0].ruleId as string;
    const alertRow = page.locator('[data-alert-rule="peer-dead-letters"]');
    await expect
      .poll(
        async () => {
          if (await alertRow.isVisible()) return true;
          await page.getByRole('button', { name: 'Refresh alerts' }).click();
          return false;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    await alertRow.getByRole('button', { name: 'Acknowledge' }).waitFor();
    await shot('16-operations-alert');

    // Mute the rule for an hour, then unmute it.
    const ruleRow = page.getByRole('row').filter({ hasText: 'peer-dead-letters' });
    await ruleRow.getByRole('button', { name: 'Mute 1 h' }).click();
    await ruleRow.getByRole('button', { name: 'Unmute' }).waitFor();
    expect((await gw.api('GET', `/api/v1/admin/alert-rules/${ruleId}`, { key: gw.adminKey })).body.muted).toBe(true);
    await ruleRow.getByRole('button', { name: 'Unmute' }).click();
    await ruleRow.getByRole('button', { name: 'Mute 1 h' }).waitFor();
    expect((await gw.api('GET', `/api/v1/admin/alert-rules/${ruleId}`, { key: gw.adminKey })).body.muted).toBe(false);
    expect(errors).toEqual([]);
  }, 60_000);

  it('gives a viewer Operations and Backfill read-only, and the API refuses their writes', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const viewer = await context.newPage();
    viewer.setDefaultTimeout(15_000);
    viewer.on('pageerror', (error) => errors.push(`viewer: ${error.message}`));
    await viewer.goto(invitationLink);
    await viewer.getByRole('heading', { name: 'Register' }).waitFor();
    expect(await viewer.getByLabel('Invitation code').inputValue()).not.toBe('');
    await viewer.getByLabel('Email').fill('viewer@example.com');
    await viewer.getByLabel('Name').fill('Vera');
    await viewer.getByLabel('Password').fill('another long password');
    await viewer.getByRole('button', { name: 'Register' }).click();
    await viewer.getByRole('heading', { name: 'Instances' }).waitFor();
    expect(await viewer.getByRole('button', { name: 'Create instance' }).count()).toBe(0);

    await viewer.getByRole('link', { name: 'Operations' }).click();
    await viewer.getByText('Read-only: viewers see the state but cannot change it.').waitFor();
    const alertRow = viewer.locator('[data-alert-rule="peer-dead-letters"]');
    await alertRow.waitFor();
    await viewer.locator('[data-group="shop-group"]').getByTestId('serving').waitFor();
    for (const name of ['Create group', 'Delete', 'Acknowledge', 'Create rule', 'Mute 1 h'])
      expect(await viewer.getByRole('button', { name }).count(), `${name} shown to a viewer`).toBe(0);
    await shot('17-viewer-operations', viewer);

    await viewer.getByRole('link', { name: 'Backfill' }).click();
    await viewer.getByText('Read-only: viewers see the jobs but cannot start or cancel them.').waitFor();
    await viewer.locator('li.job[data-status="completed"]').waitFor();
    expect(await viewer.getByRole('button', { name: 'Start backfill' }).count()).toBe(0);
    await shot('18-viewer-backfill', viewer);

    // Forcing it: the viewer's own access token on the write routes.
    const login = await gw.api('POST', '/api/v1/auth/login', { body: { email: 'viewer@example.com', password: 'another long password' } });
    expect(login.status).toBe(200);
    const bearer = { authorization: `Bearer ${login.body.accessToken as string}` };
    const alerts = await gw.api('GET', '/api/v1/admin/alerts?status=open', { headers: bearer });
    expect(alerts.status).toBe(200);
    const alert = alerts.body.items.find((a: { ruleName: string }) => a.ruleName === 'peer-dead-letters');
    const groups = await gw.api('GET', '/api/v1/admin/failover-groups', { headers: bearer });
    const groupId = groups.body.items[0].groupId as string;
    const forced = [
      await gw.api('POST', `/api/v1/admin/alerts/${alert.alertId as string}/acknowledge`, { headers: bearer }),
      await gw.api('POST', '/api/v1/admin/failover-groups', { headers: bearer, body: { name: 'forced', members: [shopId] } }),
      await gw.api('DELETE', `/api/v1/admin/failover-groups/${groupId}`, { headers: bearer }),
      await gw.api('POST', `/api/v1/admin/alert-rules/${alert.ruleId as string}/mute`, { headers: bearer, body: { seconds: 60 } }),
      await gw.api('POST', '/api/v1/admin/backfill', {
        headers: bearer,
        body: { instanceId: shopId, since: '2020-01-01T00:00:00Z', target: 'webhook' },
      }),
    ];
    for (const response of forced) expect(response.status, JSON.stringify(response.body)).toBe(403);
    expect((await gw.api('GET', `/api/v1/admin/alerts/${alert.alertId as string}`, { key: gw.adminKey })).body.acknowledged).toBe(false);
    await context.close();
    expect(errors).toEqual([]);
  }, 60_000);

  it('acknowledges the alert in the browser, then works at phone width and signs out', async () => {
    await page.getByRole('link', { name: 'Operations' }).click();
    const alertRow = page.locator('[data-alert-rule="peer-dead-letters"]');
    await alertRow.getByRole('button', { name: 'Acknowledge' }).click();
    await alertRow.getByText('acknowledged').waitFor();
    const alertId = (await alertRow.getAttribute('data-alert-id'))!;
    const state = await gw.api('GET', `/api/v1/admin/alerts/${alertId}`, { key: gw.adminKey });
    expect(state.body).toMatchObject({ status: 'open', acknowledged: true });
    expect(state.body.acknowledgedAt).not.toBeNull();
    await shot('19-alert-acknowledged');

    // Phone width: the menu folds, the list stays usable.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(gw.url);
    await page.locator('[data-instance="shop-sandbox"] [data-status="CONNECTED"]').waitFor();
    await shot('11-phone-width');
    await page.goto(`${gw.url}/instances/${shopId}?tab=send`);
    await page.getByLabel('Kind').selectOption('carousel');
    await page.getByRole('button', { name: 'Send carousel' }).waitFor();
    await shot('11b-phone-send-carousel');
    await page.goto(gw.url);
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
