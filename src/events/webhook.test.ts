import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, createInstance, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { WebhookReceiver } from '../../test/support/receiver.js';
import { WebhookSink } from './sinks/webhook.js';

describe('webhook delivery', () => {
  let gw: TestGateway;
  let open: TestGateway;
  const receivers: WebhookReceiver[] = [];

  async function receiver(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await r.start();
    receivers.push(r);
    return r;
  }

  beforeAll(async () => {
    const env = { WEBHOOK_RETRY_BASE_MS: '5', WEBHOOK_RETRY_MAX_MS: '20', WEBHOOK_MAX_ATTEMPTS: '3', WEBHOOK_TIMEOUT_MS: '500' };
    gw = await startGateway({ env });
    open = await startGateway({ env: { ...env, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.stop()));
  });
  afterAll(async () => {
    await gw.stop();
    await open.stop();
  });

  it('POSTs the envelope signed with the instance secret (constant-time check on the receiver)', async () => {
    const hook = await receiver();
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url });
    hook.setSecret(a.webhookSecret);
    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'signed' } });
    const request = await waitFor(() => hook.requests.find((r) => r.json?.event === 'SEND_MESSAGE'));
    expect(request.signatureValid).toBe(true);
    expect(request.headers['x-webhook-signature']).toMatch(/^[0-9a-f]{64}$/);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['x-webhook-event']).toBe('SEND_MESSAGE');
    expect(request.headers['x-webhook-event-id']).toBe(request.json.eventId);
    expect(request.json).toMatchObject({ event: 'SEND_MESSAGE', instanceId: a.id, instanceName: a.name, data: { key: sent.body.key } });
    // Every event of the instance went out, all signed, in order.
    const types = hook.events().map((e) => e.event);
    expect(types.slice(0, 3)).toEqual(['CONNECTION', 'CONNECTION', 'QRCODE']);
    expect(hook.requests.every((r) => r.signatureValid)).toBe(true);
  });

  it('uses a replaced secret and a wrong secret fails the receiver check', async () => {
    const hook = await receiver();
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url });
    const secret = 'a-brand-new-secret-123456';
    await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookSecret: secret } });
    hook.setSecret(secret);
    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'x' } });
    const request = await waitFor(() => hook.requests.find((r) => r.json?.data?.key?.id === sent.body.key.id));
    expect(request.signatureValid).toBe(true);
    // Checked with the old secret, the new signature fails.
    hook.setSecret(a.webhookSecret);
    expect(request.signatureValid).toBe(false);
  });

  it('applies the event filter', async () => {
    const hook = await receiver();
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url, webhookEvents: ['SEND_MESSAGE'] });
    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'only this' } });
    await waitFor(() => hook.requests.find((r) => r.json?.data?.key?.id === sent.body.key.id));
    expect(hook.events().map((e) => e.event)).toEqual(['SEND_MESSAGE']);
  });

  it('retries after a 500 and keeps the order of the instance events', async () => {
    const hook = await receiver();
    hook.script.push(500, 503);
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url, webhookEvents: ['SEND_MESSAGE'] });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push((await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `m${i}` } })).body.key.id);
    }
    await waitFor(() => (hook.requests.filter((r) => r.json).length >= 12 ? true : undefined));
    const statuses = hook.requests.length;
    expect(statuses).toBe(12);
    // The first event was answered 500, 503, then 200; the others follow it in order.
    expect(hook.requests[0]!.json.data.key.id).toBe(ids[0]);
    expect(hook.requests[1]!.json.eventId).toBe(hook.requests[0]!.json.eventId);
    expect(hook.requests[2]!.json.eventId).toBe(hook.requests[0]!.json.eventId);
    expect(hook.requests.slice(2).map((r) => r.json.data.key.id)).toEqual(ids);
  });

  it('stores a dead letter after the last attempt; lists and retries it', async () => {
    const hook = await receiver();
    hook.defaultStatus = 500;
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url, webhookEvents: ['SEND_MESSAGE'] });
    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'doomed' } });
    const list = await waitFor(async () => {
      const res = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: gw.adminKey });
      return res.body.items?.length === 1 ? res.body : undefined;
    });
    expect(hook.requests).toHaveLength(3);
    const letter = list.items[0];
    expect(letter).toMatchObject({ event: 'SEND_MESSAGE', attempts: 3, lastStatus: 500, lastError: 'receiver answered 500' });
    expect(letter.payload.data.key.id).toBe(sent.body.key.id);
    expect(letter.eventId).toBe(letter.payload.eventId);
    expect(list.total).toBe(1);

    // Still failing: the letter stays and its attempts grow.
    const failed = await gw.api('POST', `/api/v1/instance/webhook-dead-letters/retry/${letter.id}`, { key: gw.adminKey });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ id: letter.id, delivered: false, status: 500, attempts: 4 });
    const after = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: gw.adminKey });
    expect(after.body.items[0].attempts).toBe(4);

    hook.defaultStatus = 200;
    const delivered = await gw.api('POST', `/api/v1/instance/webhook-dead-letters/retry/${letter.id}`, { key: gw.adminKey });
    expect(delivered.body).toMatchObject({ id: letter.id, delivered: true, status: 200, attempts: 5 });
    const last = hook.requests[hook.requests.length - 1]!;
    expect(last.json.eventId).toBe(letter.eventId);
    hook.setSecret(a.webhookSecret);
    expect(last.signatureValid).toBe(true);
    expect((await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: gw.adminKey })).body.items).toEqual([]);
    expect((await gw.api('POST', `/api/v1/instance/webhook-dead-letters/retry/${letter.id}`, { key: gw.adminKey })).status).toBe(404);
    expect((await gw.api('GET', `/api/v1/instance/webhook-dead-letters/nope`, { key: gw.adminKey })).status).toBe(404);
    expect((await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: a.token })).status).toBe(403);
  });

  it('counts a slow answer as failed (timeout) and never follows a redirect', async () => {
    const deadLetter = async (instanceId: string) =>
      waitFor(async () => {
        const res = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${instanceId}`, { key: gw.adminKey });
        return res.body.items?.[0];
      }, 15_000);

    const slow = await receiver();
    slow.delayMs = 1500; // WEBHOOK_TIMEOUT_MS is 500 here
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: slow.url, webhookEvents: ['SEND_MESSAGE'] });
    await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'too slow' } });
    expect(await deadLetter(a.id)).toMatchObject({ attempts: 3, lastStatus: null, lastError: 'no answer within 500 ms' });

    const target = await receiver();
    const redirecting = http.createServer((_req, res) => res.writeHead(302, { location: target.url }).end());
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    try {
      const port = (redirecting.address() as AddressInfo).port;
      const b = await connectedInstance(gw, uniqueNumber(), {
        webhookUrl: `http://127.0.0.1:${port}/hook`,
        webhookEvents: ['SEND_MESSAGE'],
      });
      await gw.api('POST', '/api/v1/send/text', { key: b.token, body: { number: uniqueNumber(), text: 'elsewhere' } });
      expect(await deadLetter(b.id)).toMatchObject({ attempts: 3, lastStatus: 302, lastError: 'receiver answered 302' });
      expect(target.requests).toEqual([]);
    } finally {
      redirecting.close();
    }
  });

  it('dead-letters events when the receiver is down, and delivers them on retry once it is up', async () => {
    // The instance token moves the URL to a receiver on this host: allowed only with WEBHOOK_ALLOW_PRIVATE_URLS.
    const gw = open;
    const hook = await receiver();
    const url = hook.url;
    await hook.stop();
    receivers.splice(receivers.indexOf(hook), 1);
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: url, webhookEvents: ['SEND_MESSAGE'] });
    await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'nobody home' } });
    const letter = await waitFor(async () => {
      const res = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: gw.adminKey });
      return res.body.items?.[0];
    });
    expect(letter.lastStatus).toBeNull();
    expect(letter.lastError).toMatch(/could not reach receiver/);

    const up = await receiver();
    await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookUrl: up.url } });
    const res = await gw.api('POST', `/api/v1/instance/webhook-dead-letters/retry/${letter.id}`, { key: gw.adminKey });
    expect(res.body.delivered).toBe(true);
    expect(up.requests[0]!.json.eventId).toBe(letter.eventId);
  });

  it('does not block the request that caused the event while the receiver is slow', async () => {
    const hook = await receiver();
    hook.defaultStatus = 500;
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url });
    const res = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'fast' } });
    expect(res.status).toBe(200);
  });

  it('deleting an instance removes its pending deliveries and dead letters', async () => {
    const hook = await receiver();
    hook.defaultStatus = 500;
    const a = await createInstance(gw, { webhookUrl: hook.url });
    await gw.api('POST', '/api/v1/instance/connect', { key: a.token });
    await waitFor(async () => {
      const res = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: gw.adminKey });
      return res.body.items?.length > 0 ? true : undefined;
    });
    await gw.api('DELETE', `/api/v1/instance/delete/${a.id}`, { key: gw.adminKey });
    const letters = await gw.storage.db.selectFrom('dead_letters').selectAll().where('instance_id', '=', a.id).execute();
    const pending = await gw.storage.db.selectFrom('outbox_pending').selectAll().where('instance_id', '=', a.id).execute();
    expect(letters).toEqual([]);
    expect(pending).toEqual([]);
  });

  it('refuses private and loopback webhook URLs set with an instance token, in every spelling', async () => {
    const hook = await receiver();
    const port = new URL(hook.url).port;
    const a = await createInstance(gw);
    for (const target of [
      `http://127.0.0.1:${port}/`,
      `http://0x7f000001:${port}/`,
      `http://2130706433:${port}/`,
      `http://017700000001:${port}/`,
      `http://127.1:${port}/`,
      `http://[::1]:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[::127.0.0.1]:${port}/`,
      `http://localhost:${port}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[::169.254.169.254]/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://[fd00::1]/',
    ]) {
      const res = await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookUrl: target } });
      expect(res.status, target).toBe(422);
      expect(res.body.error, target).toMatch(/non-public address .*WEBHOOK_ALLOW_PRIVATE_URLS/);
    }
    expect((await gw.api('GET', '/api/v1/instance/webhook', { key: a.token })).body.webhookUrl).toBeNull();
    // The admin key may point an instance at a receiver on this host: it is delivered to.
    const b = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url, webhookEvents: ['SEND_MESSAGE'] });
    const sent = await gw.api('POST', '/api/v1/send/text', { key: b.token, body: { number: uniqueNumber(), text: 'admin-set' } });
    await waitFor(() => hook.requests.find((r) => r.json?.data?.key?.id === sent.body.key.id));
    // Once the instance token changes the URL, it is no longer admin-set.
    expect((await gw.api('POST', '/api/v1/instance/webhook', { key: b.token, body: { webhookUrl: hook.url } })).status).toBe(422);
  });

  it('WEBHOOK_ALLOW_PRIVATE_URLS lets an instance token set a receiver on this host', async () => {
    const hook = await receiver();
    const a = await connectedInstance(open, uniqueNumber(), { webhookEvents: ['SEND_MESSAGE'] });
    const set = await open.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookUrl: hook.url } });
    expect(set.status).toBe(200);
    const sent = await open.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'allowed' } });
    await waitFor(() => hook.requests.find((r) => r.json?.data?.key?.id === sent.body.key.id));
  });

  it('checks the resolved address at connect time (no DNS rebinding) and literal addresses before connecting', async () => {
    const hook = await receiver();
    const port = new URL(hook.url).port;
    const entry = { body: '{"event":"MESSAGE"}', eventId: 'e1', type: 'MESSAGE' as const };
    const base = {
      id: 'i1',
      name: 'n',
      network: 'sandbox' as const,
      status: 'created' as const,
      number: null,
      webhookSecret: 's',
      webhookEvents: 'ALL' as const,
      webhookBatch: null,
      settings: {},
      proxyUrl: null,
      createdAt: 0,
      updatedAt: 0,
    };
    const options = { timeoutMs: 2000, retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, userAgent: 't' };
    // The name answered a public address when it was set; now it resolves to loopback.
    const rebound = new WebhookSink({ ...options, resolve: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]) });
    try {
      const url = `http://rebind.example:${port}/hook`;
      const refused = await rebound.post(entry, { ...base, webhookUrl: url, webhookAdminSet: false });
      expect(refused).toMatchObject({ ok: false, status: null });
      expect(refused.error).toMatch(/rebind\.example resolves to the non-public address 127\.0\.0\.1/);
      const literal = await rebound.post(entry, { ...base, webhookUrl: `http://[::127.0.0.1]:${port}/`, webhookAdminSet: false });
      expect(literal.error).toMatch(/non-public address/);
      expect(hook.requests).toEqual([]);
      // Admin-set: the same name is delivered to.
      expect(await rebound.post(entry, { ...base, webhookUrl: `http://127.0.0.1:${port}/`, webhookAdminSet: true })).toMatchObject({
        ok: true,
        status: 200,
      });
    } finally {
      await rebound.close();
    }
    // The connection goes to the very addresses that were checked.
    const checked = new WebhookSink({
      ...options,
      isPublic: (address) => address === '127.0.0.1',
      resolve: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]),
    });
    try {
      expect(await checked.post(entry, { ...base, webhookUrl: `http://public.example:${port}/`, webhookAdminSet: false })).toMatchObject({
        ok: true,
      });
      expect(hook.requests).toHaveLength(2);
    } finally {
      await checked.close();
    }
  });

  it('shows a password in a webhook URL as ***', async () => {
    const a = await createInstance(gw, { webhookUrl: 'https://user:hunter2-secret@hooks.example.com/in' });
    const own = await gw.api('GET', '/api/v1/instance/webhook', { key: a.token });
    expect(own.body.webhookUrl).toBe('https://user:***@hooks.example.com/in');
    const all = await gw.api('GET', '/api/v1/instance/all?limit=500', { key: gw.adminKey });
    const listed = all.body.items.find((item: { instanceId: string }) => item.instanceId === a.id);
    expect(listed.webhookUrl).toBe('https://user:***@hooks.example.com/in');
    expect(JSON.stringify(all.body)).not.toContain('hunter2-secret');
  });
});

describe('shutdown with deliveries under way', () => {
  it('waits for an in-flight webhook delivery and acknowledges it before closing storage and the lease', async () => {
    const hook = new WebhookReceiver();
    await hook.start();
    hook.delayMs = 800;
    const gw = await startGateway({ env: { WEBHOOK_TIMEOUT_MS: '5000' } });
    try {
      const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url, webhookEvents: ['SEND_MESSAGE'] });
      const sent = await gw.api('POST', '/api/v1/send/text', {
        key: a.token,
        body: { number: uniqueNumber(), text: 'in flight at shutdown' },
      });
      await waitFor(() => hook.requests.find((r) => r.json?.data?.key?.id === sent.body.key.id));
      // The receiver holds its answer; close now.
      await gw.close();
      const db = new Database(path.join(gw.dataDir, 'waygate.db'), { readonly: true });
      try {
        const pending = db.prepare("SELECT count(*) AS n FROM outbox_pending WHERE sink = 'webhook'").get() as { n: number };
        expect(pending.n).toBe(0);
      } finally {
        db.close();
      }
    } finally {
      await hook.stop();
      fs.rmSync(gw.dataDir, { recursive: true, force: true });
    }
  });
});

describe('the webhook delivery thread in the gateway', () => {
  it('delivers every event through it, in order, and buries a failed one mid-run while the rest go on', async () => {
    const hook = new WebhookReceiver();
    await hook.start();
    const logs = { level: 'warn' as const, lines: [] as string[] };
    const gw = await startGateway({ env: { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_TIMEOUT_MS: '2000' }, logs });
    try {
      const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url, webhookEvents: ['SEND_MESSAGE'] });
      hook.setSecret(a.webhookSecret);
      const first = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `t${i}` } }),
        ),
      );
      await waitFor(() => (hook.requests.length === 20 ? true : undefined));
      const seqs = hook.requests.map((r) => r.json.seq as number);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect(new Set(hook.requests.map((r) => r.json.data.key.id))).toEqual(new Set(first.map((res) => res.body.key.id)));
      expect(hook.requests.every((r) => r.signatureValid)).toBe(true);

      // One attempt only: the second event of the next run fails and becomes a dead letter; the others follow.
      hook.script.push(200, 500);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          (await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `u${i}` } })).body.key.id,
        );
      }
      await waitFor(() => (hook.requests.length === 25 ? true : undefined));
      expect(hook.requests.slice(20).map((r) => r.json.data.key.id)).toEqual(ids);
      const letters = await waitFor(async () => {
        const res = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: gw.adminKey });
        return res.body.items.length === 1 ? res.body.items : undefined;
      });
      expect(letters[0]).toMatchObject({ eventId: hook.requests[21]!.json.eventId, attempts: 1, lastStatus: 500 });
      // Nothing fell back to the main thread's one-at-a-time delivery.
      expect(logs.lines.filter((line) => line.includes('delivery run failed'))).toEqual([]);
    } finally {
      await gw.stop();
      await hook.stop();
    }
  });
});
