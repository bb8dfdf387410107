import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebhookReceiver } from '../../../test/support/receiver.js';
import {
  DIALECTS,
  connectedInstance,
  createInstance,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestGateway,
  type TestInstance,
} from '../../../test/support/gateway.js';

async function incoming(gw: TestGateway, to: TestInstance, count: number) {
  const contact = uniqueNumber();
  for (let i = 0; i < count; i += 1) {
    expect(
      (await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from: contact, to: to.number, text: `hello ${i}` } }))
        .status,
    ).toBe(200);
  }
}

const admin = (gw: TestGateway, method: string, route: string, body?: unknown) =>
  gw.api(method, `/api/v1${route}`, { key: gw.adminKey, ...(body === undefined ? {} : { body }) });

describe.each(DIALECTS)('/admin overview and bulk operations on %s', (dialect) => {
  let failing: WebhookReceiver;
  let slow: WebhookReceiver;
  let gw: TestGateway;
  beforeEach(async () => {
    failing = new WebhookReceiver();
    failing.defaultStatus = 500;
    slow = new WebhookReceiver();
    await failing.start();
    await slow.start();
    // One attempt: every refused event becomes a dead letter at once.
    gw = await startGateway({ dialect, env: { WEBHOOK_MAX_ATTEMPTS: '1', SANDBOX_RECONNECT_DELAY_MS: '100' } });
  });
  afterEach(async () => {
    await gw.stop();
    await failing.stop();
    await slow.stop();
  });

  it('stats, dead letters across instances with bulk retry and purge, the outbox backlog, many reconnects', async () => {
    const hook = { webhookUrl: failing.url, webhookEvents: ['MESSAGE'] };
    const a = await connectedInstance(gw, uniqueNumber(), hook);
    const b = await connectedInstance(gw, uniqueNumber(), hook);
    const unlinked = await createInstance(gw);
    await incoming(gw, a, 3);
    await incoming(gw, b, 2);
    // Three sends from a to b: sends per minute, and three more MESSAGE events (dead letters) for b.
    for (let i = 0; i < 3; i += 1) {
      expect((await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: b.number, text: `to b ${i}` } })).status).toBe(200);
    }
    await waitFor(
      async () => ((await admin(gw, 'GET', '/admin/dead-letters')).body.total === 8 ? true : undefined),
      15_000,
      'eight dead letters',
    );

    const stats = await admin(gw, 'GET', '/admin/stats');
    expect(stats.status).toBe(200);
    expect(stats.body).toMatchObject({
      instances: { total: 3, byStatus: { CONNECTED: 2, created: 1 }, byNetwork: { sandbox: 3 } },
      sendsPerMinute: 3,
      deadLetters: { total: 8, byChannel: { webhook: 8 } },
      channels: {},
    });

    const ofA = await admin(gw, 'GET', `/admin/dead-letters?instanceId=${a.id}&channel=webhook&event=MESSAGE`);
    expect(ofA.body.total).toBe(3);
    expect(ofA.body.items.every((d: any) => d.instanceId === a.id && d.channel === 'webhook' && d.event === 'MESSAGE')).toBe(true);
    expect((await admin(gw, 'GET', `/admin/dead-letters?instanceId=${a.id}&since=2999-01-01T00:00:00Z`)).body.total).toBe(0);

    // Bulk retry with a filter: a's three go out once the receiver accepts; b's stay.
    failing.defaultStatus = 200;
    expect((await admin(gw, 'POST', '/admin/dead-letters/retry', {})).body).toMatchObject({
      error: expect.stringContaining('needs at least one filter'),
    });
    const retried = await admin(gw, 'POST', '/admin/dead-letters/retry', { instanceId: a.id });
    expect(retried.body).toMatchObject({ matched: 3, delivered: 3, failed: 0 });
    const accepted = failing.requests.filter((r) => r.json?.instanceId === a.id);
    expect(accepted.slice(-3).map((r) => r.json.eventId)).toEqual(ofA.body.items.map((d: any) => d.eventId));
    expect((await admin(gw, 'GET', '/admin/stats')).body.deadLetters.total).toBe(5);

    // Bulk purge with a filter: one by id, then the rest of b's.
    const ofB = await admin(gw, 'GET', `/admin/dead-letters?instanceId=${b.id}`);
    expect((await admin(gw, 'POST', '/admin/dead-letters/purge', { ids: [ofB.body.items[0].id] })).body).toEqual({ purged: 1 });
    expect((await admin(gw, 'POST', '/admin/dead-letters/purge', { instanceId: a.id })).body).toEqual({ purged: 0 });
    expect((await admin(gw, 'POST', '/admin/dead-letters/purge', { instanceId: b.id })).body).toEqual({ purged: 4 });
    expect((await admin(gw, 'GET', '/admin/dead-letters')).body.total).toBe(0);

    // A receiver that takes its time: its events wait in the outbox meanwhile.
    slow.delayMs = 1500;
    const c = await connectedInstance(gw, uniqueNumber(), { webhookUrl: slow.url, webhookEvents: ['MESSAGE'] });
    await incoming(gw, c, 3);
    const backlog = await waitFor(
      async () => {
        const res = await admin(gw, 'GET', `/admin/outbox?channel=webhook&instanceId=${c.id}`);
        return res.body.items[0]?.pending === 3 ? res.body : undefined;
      },
      10_000,
      'backlog of three',
    );
    expect(backlog).toMatchObject({ total: 1, items: [{ channel: 'webhook', instanceId: c.id, pending: 3, maxAttempts: 0 }] });
    expect((await admin(gw, 'GET', '/admin/stats')).body.pendingByChannel.webhook).toBeGreaterThanOrEqual(1);
    slow.delayMs = 0;
    await waitFor(async () => ((await admin(gw, 'GET', '/admin/outbox')).body.total === 0 ? true : undefined), 15_000, 'outbox drained');

    // Many reconnects by filter: the unlinked instance is skipped, unknown ids reported.
    expect((await admin(gw, 'POST', '/admin/instances/reconnect', {})).status).toBe(400);
    const all = await admin(gw, 'POST', '/admin/instances/reconnect', { all: true });
    expect(all.body).toMatchObject({ matched: 4, done: 3, skipped: 1, failed: 0 });
    expect(all.body.results.find((r: any) => r.instanceId === unlinked.id)).toMatchObject({ outcome: 'skipped' });
    for (const inst of [a, b, c]) {
      await waitFor(
        async () => ((await gw.api('GET', '/api/v1/instance/status', { key: inst.token })).body.status === 'CONNECTED' ? true : undefined),
        10_000,
        'back connected',
      );
    }
    const restarted = await admin(gw, 'POST', '/admin/instances/reconnect', {
      ids: [a.id, 'missing'],
      network: 'sandbox',
      mode: 'restart',
    });
    expect(restarted.body).toMatchObject({ matched: 2, done: 1, skipped: 1 });
    await waitFor(
      async () => ((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).body.status === 'CONNECTED' ? true : undefined),
      10_000,
      'a connected after restart',
    );
    const filtered = await admin(gw, 'POST', '/admin/instances/reconnect', { status: ['LOGGED_OUT'] });
    expect(filtered.body).toMatchObject({ matched: 0 });
  });

  it('instance keys on /admin routes answer 403', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    for (const [method, route] of [
      ['GET', '/admin/stats'],
      ['GET', '/admin/outbox'],
      ['GET', '/admin/dead-letters'],
      ['POST', '/admin/dead-letters/retry'],
      ['POST', '/admin/dead-letters/purge'],
      ['POST', '/admin/instances/reconnect'],
    ]) {
      const res = await gw.api(method!, `/api/v1${route}`, { key: a.token, ...(method === 'POST' ? { body: { all: true } } : {}) });
      expect(res.status, `${method} ${route}`).toBe(403);
      expect(res.body).toMatchObject({ error: 'this route needs the admin key' });
    }
    expect((await gw.api('GET', '/api/v1/admin/stats')).status).toBe(401);
  });
});
