import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dropSchema } from '../../storage/db.js';
import { WebhookReceiver } from '../../../test/support/receiver.js';
import {
  DIALECTS,
  PG_URL,
  connectedInstance,
  newSchemaName,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestGateway,
  type TestInstance,
} from '../../../test/support/gateway.js';
import { checkWebhookUrl } from './service.js';

const SECRET = 'alert-secret-0123456789abcdef';
// Drops last until the test brings the instance back; rules are evaluated every 50 ms.
const ENV = { ALERT_EVAL_INTERVAL_MS: '50', SANDBOX_RECONNECT_DELAY_MS: '600000', WEBHOOK_RETRY_BASE_MS: '20', WEBHOOK_RETRY_MAX_MS: '50' };

const notices = (receiver: WebhookReceiver, event: string) => receiver.requests.filter((r) => r.json?.event === event);

async function disconnectedRule(gw: TestGateway, instance: TestInstance, url: string) {
  const res = await gw.api('POST', '/api/v1/admin/alert-rules', {
    key: gw.adminKey,
    body: {
      name: 'down',
      kind: 'instance_disconnected',
      forSeconds: 0.2,
      scope: 'instance',
      instanceId: instance.id,
      webhookUrl: url,
      webhookSecret: SECRET,
    },
  });
  expect(res.status).toBe(201);
  return res.body;
}

/** Several evaluation rounds pass (used only to show that nothing more is sent). */
async function someRounds(gw: TestGateway) {
  const before = Date.now();
  await waitFor(() => (Date.now() - before > 8 * Number(gw.config.admin.alertEvalIntervalMs) ? true : undefined));
}

describe.each(DIALECTS)('alerts on %s', (dialect) => {
  let receiver: WebhookReceiver;
  beforeEach(async () => {
    receiver = new WebhookReceiver(SECRET);
    await receiver.start();
  });
  afterEach(async () => {
    await receiver.stop();
  });

  it('fires once when an instance drops, resolves once when it is back; acknowledge; the instance sees its alert', async () => {
    const gw = await startGateway({ dialect, env: ENV });
    try {
      const a = await connectedInstance(gw, uniqueNumber());
      const other = await connectedInstance(gw, uniqueNumber());
      const rule = await disconnectedRule(gw, a, receiver.url);
      expect(rule).toMatchObject({
        kind: 'instance_disconnected',
        scope: 'instance',
        instanceId: a.id,
        muted: false,
        webhookSecret: SECRET,
      });

      expect((await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } })).status).toBe(200);
      const fired = await waitFor(() => notices(receiver, 'ALERT_FIRED')[0], 10_000, 'fired notice');
      expect(fired.signatureValid).toBe(true);
      expect(fired.json.alert).toMatchObject({ status: 'open', instanceId: a.id, ruleId: rule.ruleId, kind: 'instance_disconnected' });
      await someRounds(gw);
      expect(notices(receiver, 'ALERT_FIRED')).toHaveLength(1);

      expect((await gw.api('GET', '/metrics')).body).toMatch(/^waygate_alerts_open 1$/m);
      const mine = await gw.api('GET', '/api/v1/instance/alerts', { key: a.token });
      expect(mine.status).toBe(200);
      expect(mine.body.items.map((x: any) => x.alertId)).toEqual([fired.json.alert.alertId]);
      expect((await gw.api('GET', '/api/v1/instance/alerts', { key: other.token })).body.items).toEqual([]);

      const ack = await gw.api('POST', `/api/v1/admin/alerts/${fired.json.alert.alertId}/acknowledge`, { key: gw.adminKey });
      expect(ack.status).toBe(200);
      expect(ack.body).toMatchObject({
        acknowledged: true,
        status: 'open',
        notices: [{ kind: 'fired', status: 'delivered', attempts: 1 }],
      });

      // Back: the bulk reconnect route connects it again.
      const back = await gw.api('POST', '/api/v1/admin/instances/reconnect', { key: gw.adminKey, body: { ids: [a.id] } });
      expect(back.body).toMatchObject({ matched: 1, done: 1 });
      const resolved = await waitFor(() => notices(receiver, 'ALERT_RESOLVED')[0], 10_000, 'resolved notice');
      expect(resolved.signatureValid).toBe(true);
      expect(resolved.json.alert).toMatchObject({ alertId: fired.json.alert.alertId, status: 'resolved', acknowledged: true });
      await someRounds(gw);
      expect(notices(receiver, 'ALERT_FIRED')).toHaveLength(1);
      expect(notices(receiver, 'ALERT_RESOLVED')).toHaveLength(1);

      const list = await gw.api('GET', '/api/v1/admin/alerts?status=resolved', { key: gw.adminKey });
      expect(list.body).toMatchObject({ total: 1, items: [{ alertId: fired.json.alert.alertId, status: 'resolved' }] });
      expect((await gw.api('GET', '/api/v1/admin/alerts?status=open', { key: gw.adminKey })).body.total).toBe(0);
      expect((await gw.api('GET', '/api/v1/instance/alerts', { key: a.token })).body.items).toEqual([]);
      expect((await gw.api('GET', '/metrics')).body).toMatch(/^waygate_alerts_open 0$/m);
    } finally {
      await gw.stop();
    }
  });

  it('notices of a rule not created by the admin key never reach a private address (checked at connect time)', async () => {
    const gw = await startGateway({ dialect, env: ENV });
    try {
      const a = await connectedInstance(gw, uniqueNumber());
      const rule = await disconnectedRule(gw, a, receiver.url);
      // As if an operator had set a name that resolved to a public address then and to loopback now.
      await gw.storage.db.updateTable('alert_rules').set({ webhook_admin_set: 0 }).where('id', '=', rule.ruleId).execute();
      await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } });
      const refused = await waitFor(
        async () => {
          const row = await gw.storage.db.selectFrom('alert_notices').select(['last_error']).executeTakeFirst();
          return row?.last_error?.startsWith('refused:') ? row.last_error : undefined;
        },
        10_000,
        'refused notice',
      );
      expect(refused).toMatch(/127\.0\.0\.1 is the non-public address/);
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await gw.stop();
    }
  });

  it('a muted rule records the alert but sends nothing', async () => {
    const gw = await startGateway({ dialect, env: ENV });
    try {
      const a = await connectedInstance(gw, uniqueNumber());
      const rule = await disconnectedRule(gw, a, receiver.url);
      const muted = await gw.api('POST', `/api/v1/admin/alert-rules/${rule.ruleId}/mute`, { key: gw.adminKey, body: { seconds: 3600 } });
      expect(muted.body).toMatchObject({ muted: true });
      expect(muted.body.mutedUntil).toEqual(expect.any(String));

      await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } });
      const open = await waitFor(
        async () => (await gw.api('GET', '/api/v1/admin/alerts?status=open', { key: gw.adminKey })).body.items[0],
        10_000,
        'open alert',
      );
      expect(open).toMatchObject({ instanceId: a.id, notified: false });
      expect((await gw.api('POST', '/api/v1/instance/connect', { key: a.token })).status).toBe(200);
      await waitFor(
        async () => (await gw.api('GET', '/api/v1/admin/alerts?status=resolved', { key: gw.adminKey })).body.items[0],
        10_000,
        'resolved alert',
      );
      await someRounds(gw);
      expect(receiver.requests).toHaveLength(0);

      // Unmuted, the next drop is announced.
      expect(
        (await gw.api('POST', `/api/v1/admin/alert-rules/${rule.ruleId}/mute`, { key: gw.adminKey, body: { seconds: 0 } })).body.muted,
      ).toBe(false);
      await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } });
      await waitFor(() => notices(receiver, 'ALERT_FIRED')[0], 10_000, 'fired notice after unmute');
    } finally {
      await gw.stop();
    }
  });

  it('an open alert survives a restart: no second notice while it holds, one resolved notice after', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-alerts-'));
    const schema = newSchemaName();
    const first = await startGateway({ dialect, dataDir, schema, keepSchema: true, env: ENV });
    const a = await connectedInstance(first, uniqueNumber());
    await disconnectedRule(first, a, receiver.url);
    // Logged out from the phone: a restart does not bring it back by itself.
    expect((await first.api('POST', '/api/v1/sandbox/logout', { key: first.adminKey, body: { instanceId: a.id } })).status).toBe(200);
    const fired = await waitFor(() => notices(receiver, 'ALERT_FIRED')[0], 10_000, 'fired notice');
    await first.stop();

    const second = await startGateway({ dialect, dataDir, schema, keepSchema: true, env: ENV });
    try {
      await someRounds(second);
      expect(notices(receiver, 'ALERT_FIRED')).toHaveLength(1);
      const open = await second.api('GET', '/api/v1/admin/alerts?status=open', { key: second.adminKey });
      expect(open.body.items.map((x: any) => x.alertId)).toEqual([fired.json.alert.alertId]);

      expect((await second.api('POST', '/api/v1/instance/connect', { key: a.token })).status).toBe(200);
      expect(
        (await second.api('POST', '/api/v1/sandbox/scan', { key: second.adminKey, body: { instanceId: a.id, number: a.number } })).status,
      ).toBe(200);
      const resolved = await waitFor(() => notices(receiver, 'ALERT_RESOLVED')[0], 10_000, 'resolved notice');
      expect(resolved.json.alert.alertId).toBe(fired.json.alert.alertId);
      await someRounds(second);
      expect(notices(receiver, 'ALERT_FIRED')).toHaveLength(1);
      expect(notices(receiver, 'ALERT_RESOLVED')).toHaveLength(1);
    } finally {
      await second.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a notice the receiver refuses is retried until it is taken, still once', async () => {
    const gw = await startGateway({ dialect, env: ENV });
    try {
      const a = await connectedInstance(gw, uniqueNumber());
      await disconnectedRule(gw, a, receiver.url);
      receiver.script.push(500, 503);
      await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } });
      await waitFor(() => (receiver.requests.length >= 3 ? true : undefined), 10_000, 'three attempts');
      await someRounds(gw);
      const fired = notices(receiver, 'ALERT_FIRED');
      expect(fired).toHaveLength(3);
      // The same notice each time (one eventId), accepted on the third attempt.
      expect(new Set(fired.map((r) => r.json.eventId)).size).toBe(1);
    } finally {
      await gw.stop();
    }
  });

  it('refuses bad rules, and instance keys on admin routes', async () => {
    const gw = await startGateway({ dialect, env: ENV });
    try {
      const a = await connectedInstance(gw, uniqueNumber());
      const post = (body: unknown, key = gw.adminKey) => gw.api('POST', '/api/v1/admin/alert-rules', { key, body });
      expect((await post({ name: 'x', kind: 'dead_letters_above', webhookUrl: receiver.url })).status).toBe(400);
      expect((await post({ name: 'x', kind: 'instance_disconnected', scope: 'instance', webhookUrl: receiver.url })).status).toBe(400);
      expect(
        (await post({ name: 'x', kind: 'instance_disconnected', scope: 'instance', instanceId: 'nope', webhookUrl: receiver.url })).status,
      ).toBe(404);
      expect((await post({ name: 'x', kind: 'instance_disconnected', webhookUrl: 'ftp://example.com/x' })).status).toBe(400);
      expect((await post({ name: 'x', kind: 'health_below', threshold: 101, webhookUrl: receiver.url })).status).toBe(400);
      const healthRule = await post({ name: 'h', kind: 'health_below', threshold: 50, forSeconds: 60, webhookUrl: receiver.url });
      expect(healthRule.status).toBe(201);
      expect((await gw.api('DELETE', `/api/v1/admin/alert-rules/${healthRule.body.ruleId}`, { key: gw.adminKey })).status).toBe(200);
      expect((await post({ name: 'x', kind: 'instance_disconnected', webhookUrl: receiver.url }, a.token)).status).toBe(403);
      for (const [method, route] of [
        ['GET', '/api/v1/admin/alert-rules'],
        ['GET', '/api/v1/admin/alerts'],
        ['POST', '/api/v1/admin/alerts/x/acknowledge'],
        ['POST', '/api/v1/admin/alert-rules/x/mute'],
      ] as const) {
        expect((await gw.api(method, route, { key: a.token, ...(method === 'POST' ? { body: { seconds: 1 } } : {}) })).status).toBe(403);
      }
      const created = await post({ name: 'dl', kind: 'dead_letters_above', threshold: 3, webhookUrl: receiver.url });
      expect(created.status).toBe(201);
      const listed = await gw.api('GET', '/api/v1/admin/alert-rules', { key: gw.adminKey });
      expect(listed.body.items).toHaveLength(1);
      expect(listed.body.items[0].webhookSecret).toBeUndefined();
      expect((await gw.api('DELETE', `/api/v1/admin/alert-rules/${created.body.ruleId}`, { key: gw.adminKey })).status).toBe(200);
      expect((await gw.api('GET', `/api/v1/admin/alert-rules/${created.body.ruleId}`, { key: gw.adminKey })).status).toBe(404);
    } finally {
      await gw.stop();
    }
  });
});

describe('alert webhook URLs', () => {
  it('refuses private and loopback addresses unless allowed', async () => {
    await expect(checkWebhookUrl('http://127.0.0.1:9/x', false)).rejects.toMatchObject({ code: 'webhook_url_refused', status: 422 });
    await expect(checkWebhookUrl('http://10.1.2.3/x', false)).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(checkWebhookUrl('http://[::1]/x', false)).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(checkWebhookUrl('http://localhost/x', false)).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(checkWebhookUrl('http://8.8.8.8/x', false)).resolves.toBeUndefined();
    await expect(checkWebhookUrl('http://127.0.0.1:9/x', true)).resolves.toBeUndefined();
  });
});
