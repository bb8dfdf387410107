import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  createInstance,
  DIALECTS,
  newSchemaName,
  PG_URL,
  recordEvents,
  startGateway,
  uniqueName,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../../test/support/gateway.js';
import { WebhookReceiver } from '../../../test/support/receiver.js';
import { dropSchema } from '../../storage/db.js';

async function createGroup(gw: TestGateway, members: TestInstance[], extra: Record<string, unknown> = {}) {
  const res = await gw.api('POST', '/api/v1/admin/failover-groups', {
    key: gw.adminKey,
    body: { name: uniqueName('group'), members: members.map((m) => m.id), policy: 'priority', minHealth: 50, sticky: true, ...extra },
  });
  if (res.status !== 201) throw new Error(`group create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { groupId: string; token: string; webhookSecret: string; name: string };
}

describe.each(DIALECTS)('failover groups (%s)', (dialect) => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ dialect, env: { SANDBOX_RECONNECT_DELAY_MS: '60000', TOKEN_GRACE_SECONDS: '3600' } });
  });
  afterAll(async () => gw.stop());

  it('creates, lists, reads, changes and deletes a group; the token is shown once', async () => {
    const [a, b] = [await connectedInstance(gw, uniqueNumber()), await createInstance(gw)];
    const created = await gw.api('POST', '/api/v1/admin/failover-groups', {
      key: gw.adminKey,
      body: { name: uniqueName('group'), members: [a.id, b.id], policy: 'round-robin', minHealth: 60, sticky: false },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ members: [a.id, b.id], policy: 'round-robin', minHealth: 60, sticky: false, webhookUrl: null });
    expect(created.body.token).toMatch(/^wgg_[A-Za-z0-9_-]{43}$/);
    const { groupId, token } = created.body;

    const one = await gw.api('GET', `/api/v1/admin/failover-groups/${groupId}`, { key: gw.adminKey });
    expect(one.status).toBe(200);
    expect(one.body.serving).toBe(a.id);
    expect(one.body.members).toEqual([
      expect.objectContaining({
        instanceId: a.id,
        status: 'CONNECTED',
        eligible: true,
        serving: true,
        health: { score: 100, reasons: [] },
      }),
      expect.objectContaining({ instanceId: b.id, status: 'created', eligible: false, serving: false }),
    ]);
    expect(one.body.members[1].health.score).toBe(0);

    const list = await gw.api('GET', '/api/v1/admin/failover-groups', { key: gw.adminKey });
    expect(list.body.items.map((g: any) => g.groupId)).toContain(groupId);
    expect(JSON.stringify(list.body)).not.toContain(token);
    expect(JSON.stringify(list.body)).not.toContain(created.body.webhookSecret);

    const patched = await gw.api('PATCH', `/api/v1/admin/failover-groups/${groupId}`, {
      key: gw.adminKey,
      body: { members: [b.id, a.id], policy: 'priority' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.members.map((m: any) => m.instanceId)).toEqual([b.id, a.id]);
    expect(patched.body.policy).toBe('priority');

    expect(
      (await gw.api('PATCH', `/api/v1/admin/failover-groups/${groupId}`, { key: gw.adminKey, body: { members: ['nope'] } })).body,
    ).toMatchObject({ error: expect.stringContaining('nope') });
    const dup = await gw.api('POST', '/api/v1/admin/failover-groups', {
      key: gw.adminKey,
      body: { name: created.body.name, members: [a.id] },
    });
    expect(dup.status).toBe(409);

    expect((await gw.api('DELETE', `/api/v1/admin/failover-groups/${groupId}`, { key: gw.adminKey })).status).toBe(200);
    expect((await gw.api('GET', `/api/v1/admin/failover-groups/${groupId}`, { key: gw.adminKey })).status).toBe(404);
    expect((await gw.api('POST', '/api/v1/send/text', { key: token, body: { number: uniqueNumber(), text: 'x' } })).status).toBe(401);
  });

  it('keeps admin routes for the admin key and group tokens for /send/*', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const group = await createGroup(gw, [a]);
    for (const [method, route] of [
      ['GET', '/api/v1/admin/failover-groups'],
      ['POST', '/api/v1/admin/failover-groups'],
      ['GET', `/api/v1/admin/failover-groups/${group.groupId}`],
      ['PATCH', `/api/v1/admin/failover-groups/${group.groupId}`],
      ['DELETE', `/api/v1/admin/failover-groups/${group.groupId}`],
      ['POST', `/api/v1/admin/failover-groups/${group.groupId}/rotate-token`],
    ] as const) {
      const res = await gw.api(method, route, {
        key: a.token,
        ...(method === 'POST' || method === 'PATCH' ? { body: { name: 'x', members: [a.id] } } : {}),
      });
      expect(res.status, `${method} ${route}`).toBe(403);
      expect((await gw.api(method, route, { key: group.token })).status, `${method} ${route} with a group token`).toBe(401);
    }

    for (const route of ['/api/v1/instance/status', '/api/v1/chat/list', '/api/v1/instance/health']) {
      const res = await gw.api('GET', route, { key: group.token });
      expect(res.status, route).toBe(403);
      expect(res.body).toMatchObject({ error: expect.stringContaining('/send/') });
    }
    const sent = await gw.api('POST', '/api/v1/send/text', {
      key: group.token,
      body: { number: uniqueNumber(), text: 'through the group' },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.instanceId).toBe(a.id);
    // The unprefixed (deprecated) route takes the group token too.
    expect((await gw.api('POST', '/send/text', { key: group.token, body: { number: uniqueNumber(), text: 'old path' } })).status).toBe(200);
    expect(
      (await gw.api('POST', '/api/v1/send/text', { key: `wgg_${'A'.repeat(43)}`, body: { number: uniqueNumber(), text: 'x' } })).status,
    ).toBe(401);
    expect((await gw.api('POST', '/api/v1/send/text', { key: 'wgg_short', body: { number: uniqueNumber(), text: 'x' } })).status).toBe(401);
  });

  it('rotates the group token with a grace period', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const group = await createGroup(gw, [a]);
    const rotated = await gw.api('POST', `/api/v1/admin/failover-groups/${group.groupId}/rotate-token`, { key: gw.adminKey });
    expect(rotated.status).toBe(200);
    expect(rotated.body.newToken).toMatch(/^wgg_/);
    expect(Date.parse(rotated.body.oldTokenValidUntil)).toBeGreaterThan(Date.now() + 3500_000);
    for (const key of [group.token, rotated.body.newToken]) {
      expect((await gw.api('POST', '/api/v1/send/text', { key, body: { number: uniqueNumber(), text: 'x' } })).status).toBe(200);
    }
  });

  it('answers 503 when no member is eligible', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await createInstance(gw);
    const group = await createGroup(gw, [a, b]);
    expect((await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } })).status).toBe(200);
    const res = await gw.api('POST', '/api/v1/send/text', { key: group.token, body: { number: uniqueNumber(), text: 'nobody' } });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: expect.stringContaining(group.name) });
    const view = await gw.api('GET', `/api/v1/admin/failover-groups/${group.groupId}`, { key: gw.adminKey });
    expect(view.body.serving).toBeNull();
  });
});

describe('sending through a failover group on the sandbox', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    gw = await startGateway({
      env: { SANDBOX_RECONNECT_DELAY_MS: '60000', WEBHOOK_RETRY_BASE_MS: '10', WEBHOOK_RETRY_MAX_MS: '20', WEBHOOK_MAX_ATTEMPTS: '3' },
    });
    events = recordEvents(gw);
  });
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.stop();
  });
  afterAll(async () => gw.stop());

  it('moves traffic off a dropped member at once; every accepted send arrives exactly once', async () => {
    const members = [
      await connectedInstance(gw, uniqueNumber()),
      await connectedInstance(gw, uniqueNumber()),
      await connectedInstance(gw, uniqueNumber()),
    ];
    const recipients = [await connectedInstance(gw, uniqueNumber()), await connectedInstance(gw, uniqueNumber())];
    const group = await createGroup(gw, members, { policy: 'priority', sticky: true });

    const accepted = new Map<string, { instanceId: string; messageId: string; startedAfterDrop: boolean }>();
    const refused: string[] = [];
    let droppedAt: number | undefined;
    let next = 0;
    const total = 90;
    // Three senders in parallel: a steady load through the group token.
    const sender = async () => {
      while (next < total) {
        const i = next++;
        const text = `load-${i}`;
        const startedAfterDrop = droppedAt !== undefined;
        const to = recipients[i % recipients.length]!;
        const res = await gw.api('POST', '/api/v1/send/text', { key: group.token, body: { number: to.number, text } });
        if (res.status === 200) accepted.set(text, { instanceId: res.body.instanceId, messageId: res.body.key.id, startedAfterDrop });
        else refused.push(`${res.status} ${JSON.stringify(res.body)}`);
        if (i === 30) {
          const drop = await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: members[0]!.id } });
          expect(drop.status).toBe(200);
          droppedAt = Date.now();
        }
      }
    };
    await Promise.all([sender(), sender(), sender()]);

    expect(refused).toEqual([]);
    expect(accepted.size).toBe(total);
    const before = [...accepted.values()].filter((s) => !s.startedAfterDrop);
    const after = [...accepted.values()].filter((s) => s.startedAfterDrop);
    // Priority: the first member served until it dropped; every send begun after the drop went elsewhere.
    expect(before.some((s) => s.instanceId === members[0]!.id)).toBe(true);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((s) => s.instanceId !== members[0]!.id)).toBe(true);
    expect(after.every((s) => members.some((m) => m.id === s.instanceId))).toBe(true);

    // Count on the recipients: each accepted text arrived exactly once, with the id the reply gave.
    const arrived = () =>
      recipients.flatMap((r) => events.of(r.id, 'MESSAGE')).filter((e) => String(e.data.message?.conversation ?? '').startsWith('load-'));
    await waitFor(() => (arrived().length >= total ? true : undefined), 10_000, 'every message at the recipients');
    const texts = arrived().map((e) => e.data.message.conversation as string);
    expect(texts.length).toBe(total);
    expect(new Set(texts).size).toBe(total);
    for (const event of arrived()) expect(accepted.get(event.data.message.conversation)?.messageId).toBe(event.data.key.id);

    const view = await gw.api('GET', `/api/v1/admin/failover-groups/${group.groupId}`, { key: gw.adminKey });
    expect(view.body.members[0]).toMatchObject({ instanceId: members[0]!.id, eligible: false, serving: false });
    expect(view.body.members[0].health.score).toBeLessThan(50);
    expect(view.body.serving).toBe(members[1]!.id);
  });

  it('round-robin spreads sends; sticky keeps a recipient on its member; least-loaded uses every member', async () => {
    const members = [
      await connectedInstance(gw, uniqueNumber()),
      await connectedInstance(gw, uniqueNumber()),
      await connectedInstance(gw, uniqueNumber()),
    ];
    const spread = await createGroup(gw, members, { policy: 'round-robin', sticky: false });
    const served: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await gw.api('POST', '/api/v1/send/text', { key: spread.token, body: { number: uniqueNumber(), text: `rr-${i}` } });
      served.push(res.body.instanceId);
    }
    expect(new Set(served).size).toBe(3);
    expect(served.slice(0, 3)).toEqual(served.slice(3));

    const sticky = await createGroup(gw, members, { policy: 'round-robin', sticky: true });
    const recipient = uniqueNumber();
    const first = await gw.api('POST', '/api/v1/send/text', { key: sticky.token, body: { number: recipient, text: 's0' } });
    for (let i = 1; i < 4; i++) {
      expect(
        (await gw.api('POST', '/api/v1/send/text', { key: sticky.token, body: { number: recipient, text: `s${i}` } })).body.instanceId,
      ).toBe(first.body.instanceId);
    }

    const least = await createGroup(gw, members, { policy: 'least-loaded', sticky: false });
    const parallel = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        gw.api('POST', '/api/v1/send/text', { key: least.token, body: { number: uniqueNumber(), text: `ll-${i}` } }),
      ),
    );
    expect(parallel.every((r) => r.status === 200)).toBe(true);
    expect(new Set(parallel.map((r) => r.body.instanceId)).size).toBeGreaterThan(1);
  });

  it("posts every member's events to the group webhook, signed with the group's secret, with retries", async () => {
    const members = [await connectedInstance(gw, uniqueNumber()), await connectedInstance(gw, uniqueNumber())];
    const receiver = new WebhookReceiver();
    receivers.push(receiver);
    await receiver.start();
    receiver.script.push(500);
    const group = await createGroup(gw, members, { webhookUrl: receiver.url });
    receiver.setSecret(group.webhookSecret);

    const sent = await gw.api('POST', '/api/v1/send/text', {
      key: group.token,
      body: { number: uniqueNumber(), text: 'to the group hook' },
    });
    expect(sent.status).toBe(200);
    const contact = uniqueNumber();
    await gw.api('POST', '/api/v1/sandbox/messages', {
      key: gw.adminKey,
      body: { from: contact, to: members[1]!.number, text: 'hello second member' },
    });

    // Both events, and the one answered 500 a second time.
    await waitFor(
      () =>
        receiver.events('SEND_MESSAGE').length >= 1 && receiver.events('MESSAGE').length >= 1 && receiver.requests.length >= 3
          ? true
          : undefined,
      10_000,
      'group webhook events',
    );
    const send = receiver.events('SEND_MESSAGE')[0];
    expect(send.instanceId).toBe(sent.body.instanceId);
    expect(send.data.key.id).toBe(sent.body.key.id);
    expect(receiver.events('MESSAGE')[0]).toMatchObject({
      instanceId: members[1]!.id,
      data: { message: { conversation: 'hello second member' } },
    });
    // The first answer was 500: the same event came again (same eventId), and every request was signed with the group secret.
    expect(receiver.requests.length).toBeGreaterThanOrEqual(3);
    expect(receiver.requests.every((r) => r.signatureValid)).toBe(true);
    expect(new Set(receiver.requests.map((r) => r.json.eventId)).size).toBe(receiver.requests.length - 1);
  });

  it("keeps a group webhook's failed events as dead letters and resends them to the group", async () => {
    const own = new WebhookReceiver();
    const receiver = new WebhookReceiver();
    receivers.push(receiver, own);
    await own.start();
    await receiver.start();
    // Set by the admin key at creation: a receiver on this host is allowed (an instance token could not set it).
    const member = await connectedInstance(gw, uniqueNumber(), { webhookUrl: own.url });
    own.setSecret(member.webhookSecret);
    receiver.defaultStatus = 503;
    const group = await createGroup(gw, [member], { webhookUrl: receiver.url });
    receiver.setSecret(group.webhookSecret);
    const sent = await gw.api('POST', '/api/v1/send/text', {
      key: group.token,
      body: { number: uniqueNumber(), text: 'will be a dead letter' },
    });
    expect(sent.status).toBe(200);

    const letter = await waitFor(
      async () => {
        const list = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${member.id}`, { key: gw.adminKey });
        return list.body.items.find((l: any) => l.eventId && l.payload.data.key?.id === sent.body.key.id);
      },
      10_000,
      'the dead letter',
    );
    expect(receiver.requests.length).toBe(3);
    receiver.defaultStatus = 200;
    // The member's own webhook had the event once, by its own lane.
    await waitFor(
      () => (own.requests.some((r) => r.json?.eventId === letter.eventId) ? true : undefined),
      10_000,
      'the own webhook delivery',
    );
    const retried = await gw.api('POST', `/api/v1/instance/webhook-dead-letters/retry/${letter.id}`, { key: gw.adminKey });
    expect(retried.body).toMatchObject({ delivered: true });
    const last = receiver.requests.at(-1)!;
    expect(last.json.eventId).toBe(letter.eventId);
    expect(last.signatureValid).toBe(true);
    // Resent to the group's webhook, not to the member's own.
    expect(own.requests.filter((r) => r.json?.eventId === letter.eventId)).toHaveLength(1);
  });

  it('keeps groups, tokens and sticky recipients across a restart', async () => {
    const dataDir = gw.dataDir;
    const [first, second] = [await connectedInstance(gw, uniqueNumber()), await connectedInstance(gw, uniqueNumber())];
    const group = await createGroup(gw, [first, second], { policy: 'priority', sticky: true });
    // The first member is down for a while: the recipient gets the second one, and keeps it.
    await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: first.id } });
    const recipient = uniqueNumber();
    const before = await gw.api('POST', '/api/v1/send/text', { key: group.token, body: { number: recipient, text: 'before' } });
    expect(before.body.instanceId).toBe(second.id);
    await gw.close();

    gw = await startGateway({ dataDir, env: { SANDBOX_RECONNECT_DELAY_MS: '60000' } });
    // The first member came back with the restart; the recipient stays with the second.
    await waitFor(async () =>
      (await gw.api('GET', '/api/v1/instance/status', { key: first.token })).body.status === 'CONNECTED' ? true : undefined,
    );
    const again = await gw.api('POST', '/api/v1/send/text', { key: group.token, body: { number: recipient, text: 'after' } });
    expect(again.status).toBe(200);
    expect(again.body.instanceId).toBe(second.id);
    const other = await gw.api('POST', '/api/v1/send/text', { key: group.token, body: { number: uniqueNumber(), text: 'new recipient' } });
    expect(other.body.instanceId).toBe(first.id);
    expect((await gw.api('GET', `/api/v1/admin/failover-groups/${group.groupId}`, { key: gw.adminKey })).body.name).toBe(group.name);
  });
});

describe('failover groups across an active/standby handover (PostgreSQL)', () => {
  it('the process taking over knows the groups created meanwhile and delivers their waiting webhook events', async () => {
    const schema = newSchemaName();
    const env = { STANDBY_POLL_MS: '100', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_RETRY_MAX_MS: '200', WEBHOOK_MAX_ATTEMPTS: '100' };
    const receiver = new WebhookReceiver();
    await receiver.start();
    receiver.defaultStatus = 503;
    const first = await startGateway({ dialect: 'postgres', schema, keepSchema: true, env });
    const second = await startGateway({ dialect: 'postgres', schema, keepSchema: true, env });
    try {
      const member = await connectedInstance(first, uniqueNumber());
      // Created after the standby started: it has never read this group.
      const group = await createGroup(first, [member], { webhookUrl: receiver.url });
      receiver.setSecret(group.webhookSecret);
      const sent = await first.api('POST', '/api/v1/send/text', {
        key: group.token,
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
        () => receiver.requests.find((r, i) => i > 0 && r.json?.data?.key?.id === sent.body.key.id),
        15_000,
        'the waiting group webhook event delivered by the new active process',
      );
      expect(delivered.signatureValid).toBe(true);
      const after = await waitFor(
        async () => {
          const res = await second.api('POST', '/api/v1/send/text', {
            key: group.token,
            body: { number: uniqueNumber(), text: 'after the handover' },
          });
          return res.status === 200 ? res : undefined;
        },
        10_000,
        'a group send on the new active process',
      );
      expect(after.body.instanceId).toBe(member.id);
    } finally {
      await first.stop();
      await second.stop();
      await receiver.stop();
      await dropSchema(PG_URL, schema);
    }
  });
});
