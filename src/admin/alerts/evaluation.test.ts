/** Every rule kind, evaluated round by round with a manual clock and stand-in signals. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import type { DeadLetterService } from '../../events/dead-letter-service.js';
import { WebhookSink } from '../../events/sinks/webhook.js';
import { WebhookReceiver } from '../../../test/support/receiver.js';
import { DIALECTS, createInstance, startGateway, type TestGateway } from '../../../test/support/gateway.js';
import { AlertRepo } from './repo.js';
import { AlertService, type NewRuleInput } from './service.js';

describe.each(DIALECTS)('alert rule kinds on %s', (dialect) => {
  let gw: TestGateway;
  let receiver: WebhookReceiver;
  const clock = new ManualClock();
  const health = new Map<string, number>();
  const deadLetters = new Map<string, number>();
  const channels: Record<string, { up: boolean; detail?: string }> = {};
  let alerts: AlertService;

  beforeEach(async () => {
    // Evaluation is driven by the test: the module's own timer never fires.
    gw = await startGateway({ dialect, env: { ALERT_EVAL_INTERVAL_MS: '3600000' } });
    receiver = new WebhookReceiver('kinds-secret-0123456789');
    await receiver.start();
    health.clear();
    deadLetters.clear();
    for (const name of Object.keys(channels)) delete channels[name];
    alerts = new AlertService({
      repo: new AlertRepo(gw.storage.db),
      clock,
      instances: gw.instances,
      outbox: gw.outbox,
      deadLetters: { countByInstance: () => Promise.resolve(Object.fromEntries(deadLetters)) } as unknown as DeadLetterService,
      webhook: new WebhookSink({ timeoutMs: 2000, retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 10 }, userAgent: 'test' }),
      channelHealth: () => channels,
      health: {
        scoreOf: (id) => Promise.resolve({ score: health.get(id) ?? 100, reasons: health.get(id) === undefined ? [] : ['send failures'] }),
      },
      retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 10 },
      log: { warn: () => undefined },
    });
  });
  afterEach(async () => {
    await gw.stop();
    await receiver.stop();
  });

  const rule = (input: Omit<NewRuleInput, 'name' | 'webhookUrl' | 'webhookSecret'>) =>
    alerts.createRule({ name: input.kind, webhookUrl: receiver.url, webhookSecret: 'kinds-secret-0123456789', ...input }, true);
  const events = () =>
    receiver.requests.map((r) => `${r.json.event} ${r.json.alert.kind} ${r.json.alert.instanceId ?? r.json.alert.channel}`);

  it('health below X for N s, dead letters above N, channel down, per subject, each fired and resolved once', async () => {
    const a = await createInstance(gw);
    const b = await createInstance(gw);
    await rule({ kind: 'health_below', threshold: 50, forSeconds: 30 });
    await rule({ kind: 'dead_letters_above', threshold: 2, scope: 'instance', instanceId: b.id });
    await rule({ kind: 'channel_down', forSeconds: 10, channel: 'amqp' });

    health.set(a.id, 40);
    deadLetters.set(a.id, 5);
    deadLetters.set(b.id, 3);
    channels.amqp = { up: false, detail: 'connection refused' };
    channels.redis = { up: false };
    await alerts.evaluate();
    // Health and the channel have not held long enough; b's dead letters fire at once (a is out of scope).
    expect(events()).toEqual([`ALERT_FIRED dead_letters_above ${b.id}`]);

    clock.advance(15_000);
    await alerts.evaluate();
    expect(events().slice(1)).toEqual(['ALERT_FIRED channel_down amqp']);

    clock.advance(15_000);
    await alerts.evaluate();
    await alerts.evaluate();
    expect(events().slice(2)).toEqual([`ALERT_FIRED health_below ${a.id}`]);
    expect(receiver.requests[2]!.json.alert).toMatchObject({ value: 40, message: expect.stringContaining('send failures') });
    expect(receiver.requests.every((r) => r.signatureValid)).toBe(true);

    health.set(a.id, 90);
    deadLetters.set(b.id, 2);
    channels.amqp = { up: true };
    clock.advance(1000);
    await alerts.evaluate();
    await alerts.evaluate();
    expect(events().slice(3).sort()).toEqual(
      [`ALERT_RESOLVED health_below ${a.id}`, `ALERT_RESOLVED dead_letters_above ${b.id}`, 'ALERT_RESOLVED channel_down amqp'].sort(),
    );
    // A condition that comes back starts its wait again.
    health.set(a.id, 10);
    await alerts.evaluate();
    clock.advance(29_000);
    await alerts.evaluate();
    expect(receiver.requests).toHaveLength(6);
    clock.advance(1000);
    await alerts.evaluate();
    expect(events().slice(6)).toEqual([`ALERT_FIRED health_below ${a.id}`]);
  });

  it('a failover-group scope watches the group members as they are at each round', async () => {
    const a = await createInstance(gw);
    const b = await createInstance(gw);
    const outside = await createInstance(gw);
    const group = await gw.api('POST', '/api/v1/admin/failover-groups', {
      key: gw.adminKey,
      body: { name: `g-${a.id.slice(0, 8)}`, members: [a.id, b.id] },
    });
    expect(group.status).toBe(201);
    const created = await rule({ kind: 'dead_letters_above', threshold: 0, scope: 'group', groupId: group.body.groupId });
    expect(created).toMatchObject({ scope: 'group', groupId: group.body.groupId, instanceId: null });
    await expect(rule({ kind: 'dead_letters_above', threshold: 0, scope: 'group', groupId: 'no-such-group' })).rejects.toMatchObject({
      status: 404,
    });
    for (const inst of [a, b, outside]) deadLetters.set(inst.id, 1);
    await alerts.evaluate();
    expect(events().sort()).toEqual([`ALERT_FIRED dead_letters_above ${a.id}`, `ALERT_FIRED dead_letters_above ${b.id}`].sort());
    // b leaves the group: its alert resolves although its dead letters are still there.
    expect(
      (await gw.api('PATCH', `/api/v1/admin/failover-groups/${group.body.groupId}`, { key: gw.adminKey, body: { members: [a.id] } }))
        .status,
    ).toBe(200);
    await alerts.evaluate();
    expect(events().slice(2)).toEqual([`ALERT_RESOLVED dead_letters_above ${b.id}`]);
  });

  it('outbox backlog above N, and an alert whose instance is deleted resolves', async () => {
    const slow = new WebhookReceiver();
    slow.delayMs = 60_000;
    await slow.start();
    try {
      const a = await createInstance(gw, { webhookUrl: slow.url });
      await rule({ kind: 'outbox_backlog_above', threshold: 1, scope: 'instance', instanceId: a.id });
      // Its CONNECTION events wait behind a receiver that does not answer.
      await gw.api('POST', '/api/v1/instance/connect', { key: a.token });
      await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: a.id, number: '5511900001111' } });
      await gw.bus.settled();
      expect(Object.values(await gw.outbox.pendingByInstance())[0]).toBeGreaterThan(1);
      await alerts.evaluate();
      expect(events()).toEqual([`ALERT_FIRED outbox_backlog_above ${a.id}`]);
      expect((await gw.api('DELETE', `/api/v1/instance/delete/${a.id}`, { key: gw.adminKey })).status).toBe(200);
      await alerts.evaluate();
      expect(events()).toEqual([`ALERT_FIRED outbox_backlog_above ${a.id}`, `ALERT_RESOLVED outbox_backlog_above ${a.id}`]);
    } finally {
      await slow.stop();
    }
  });
});
