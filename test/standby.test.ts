/**
 * Two gateway processes on one PostgreSQL database: one is active (sessions, deliveries), the other
 * stands by and takes over when the active one stops, resuming its connected instances and
 * delivering what was still pending.
 */
import { describe, expect, it } from 'vitest';
import { dropSchema } from '../src/storage/db.js';
import { PG_URL, connectedInstance, newSchemaName, startGateway, uniqueNumber, waitFor } from './support/gateway.js';
import { WebhookReceiver } from './support/receiver.js';

describe('active and standby processes on one PostgreSQL database', () => {
  it('only the active one holds sessions; the standby takes over and delivers what was pending', async () => {
    const schema = newSchemaName();
    const env = { STANDBY_POLL_MS: '100', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_RETRY_MAX_MS: '200', WEBHOOK_MAX_ATTEMPTS: '100' };
    const receiver = new WebhookReceiver();
    await receiver.start();
    receiver.defaultStatus = 503;
    const first = await startGateway({ dialect: 'postgres', schema, keepSchema: true, env });
    const second = await startGateway({ dialect: 'postgres', schema, keepSchema: true, env });
    let secondStopped = false;
    try {
      expect((await first.api('GET', '/api/v1/server/ok')).body.role).toBe('active');
      expect((await second.api('GET', '/api/v1/server/ok')).body.role).toBe('standby');
      expect(await (await fetch(`${second.url}/metrics`)).text()).toMatch(/^waygate_active 0$/m);
      expect(await (await fetch(`${first.url}/metrics`)).text()).toMatch(/^waygate_active 1$/m);

      const a = await connectedInstance(first, uniqueNumber(), { webhookUrl: receiver.url, webhookEvents: ['SEND_MESSAGE'] });
      // The standby opens no session and changes nothing the active process caches: every keyed route is 503.
      const refused = await second.api('POST', '/api/v1/send/text', {
        key: a.token,
        body: { number: uniqueNumber(), text: 'via standby' },
      });
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatch(/standby/);
      const webhook = await second.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookUrl: null } });
      expect(webhook.status).toBe(503);
      expect((await second.api('GET', '/api/v1/instance/all', { key: second.adminKey })).status).toBe(503);

      // The receiver is failing: the event stays pending in the outbox when the active process stops.
      const sent = await first.api('POST', '/api/v1/send/text', {
        key: a.token,
        body: { number: uniqueNumber(), text: 'before the handover' },
      });
      expect(sent.status).toBe(200);
      await waitFor(() => (receiver.requests.length > 0 ? true : undefined), 10_000, 'a failed attempt');
      await first.stop();

      receiver.defaultStatus = 200;
      await waitFor(
        async () => ((await second.api('GET', '/api/v1/server/ok')).body.role === 'active' ? true : undefined),
        10_000,
        'the standby taking over',
      );
      const delivered = await waitFor(
        () => receiver.requests.find((r) => r.json?.data?.key?.id === sent.body.key.id && receiver.requests.indexOf(r) > 0),
        15_000,
        'the pending event delivered by the new active process',
      );
      expect(delivered.json.event).toBe('SEND_MESSAGE');
      // The instance came back connected on the new active process and sends from there.
      const after = await waitFor(
        async () => {
          const res = await second.api('POST', '/api/v1/send/text', {
            key: a.token,
            body: { number: uniqueNumber(), text: 'after the handover' },
          });
          return res.status === 200 ? res : undefined;
        },
        10_000,
        'a send on the new active process',
      );
      expect(after.body.key.fromMe).toBe(true);
      await second.stop();
      secondStopped = true;
    } finally {
      await first.stop();
      if (!secondStopped) await second.stop();
      await receiver.stop();
      await dropSchema(PG_URL, schema);
    }
  });

  it('a SQLite gateway is always active', async () => {
    const gw = await startGateway();
    try {
      expect((await gw.api('GET', '/api/v1/server/ok')).body.role).toBe('active');
    } finally {
      await gw.stop();
    }
  });
});
