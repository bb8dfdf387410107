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

const original = (receiver: WebhookReceiver) =>
  receiver.requests.filter((r) => r.json?.event === 'MESSAGE' && r.json.redelivered === undefined);
const redelivered = (receiver: WebhookReceiver) => receiver.requests.filter((r) => r.json?.redelivered === true);

async function incoming(gw: TestGateway, to: TestInstance, receiver: WebhookReceiver, texts: string[]) {
  const contact = uniqueNumber();
  const before = original(receiver).length;
  for (const text of texts) {
    expect(
      (await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from: contact, to: to.number, text } })).status,
    ).toBe(200);
  }
  await waitFor(() => (original(receiver).length === before + texts.length ? true : undefined), 15_000, 'original deliveries');
}

const jobOf = (gw: TestGateway, id: string) => gw.api('GET', `/api/v1/admin/backfill/${id}`, { key: gw.adminKey });

describe.each(DIALECTS)('backfill on %s', (dialect) => {
  let receiver: WebhookReceiver;
  beforeEach(async () => {
    receiver = new WebhookReceiver();
    await receiver.start();
  });
  afterEach(async () => {
    await receiver.stop();
  });

  it('re-delivers exactly the asked range, archived and live, in order, with the original eventIds, across a restart', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-backfill-'));
    const schema = newSchemaName();
    const first = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    const a = await connectedInstance(first, uniqueNumber(), { webhookUrl: receiver.url });
    receiver.setSecret(a.webhookSecret);
    await incoming(first, a, receiver, ['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    // The first six leave the live outbox for the archive; six more stay live.
    await first.dispatcher.whenIdle();
    expect(await first.outbox.prune(Date.now() + 1, true)).toBeGreaterThanOrEqual(6);
    await incoming(first, a, receiver, ['m7', 'm8', 'm9', 'm10', 'm11', 'm12']);
    const sent = original(receiver).map((r) => r.json);
    expect(sent.map((e) => e.data.message.conversation)).toEqual([
      'm1',
      'm2',
      'm3',
      'm4',
      'm5',
      'm6',
      'm7',
      'm8',
      'm9',
      'm10',
      'm11',
      'm12',
    ]);
    const expected = sent.slice(2, 10); // m3 .. m10, both ends included

    const job = await first.api('POST', '/api/v1/admin/backfill', {
      key: first.adminKey,
      body: { instanceId: a.id, since: sent[2].eventId, until: sent[9].eventId, events: ['MESSAGE'], target: 'webhook', ratePerSecond: 4 },
    });
    expect(job.status).toBe(202);
    expect(job.body).toMatchObject({ status: 'queued', total: 8, delivered: 0, target: 'webhook' });
    // Stopped part way: the job resumes in the next process.
    await waitFor(() => (redelivered(receiver).length >= 2 ? true : undefined), 15_000, 'first re-deliveries');
    await first.stop();
    const partial = redelivered(receiver).length;
    expect(partial).toBeLessThan(8);

    const second = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    try {
      const done = await waitFor(
        async () => {
          const view = await jobOf(second, job.body.jobId);
          return view.body.status === 'completed' ? view.body : undefined;
        },
        20_000,
        'job completed',
      );
      expect(done).toMatchObject({ delivered: 8, total: 8, lastEventId: expected[7].eventId, error: null });
      const again = redelivered(receiver);
      expect(again.map((r) => r.json.eventId)).toEqual(expected.map((e) => e.eventId));
      for (const [i, request] of again.entries()) {
        expect(request.signatureValid).toBe(true);
        expect(request.headers['x-webhook-event-id']).toBe(expected[i].eventId);
        // The original envelope, unchanged but for the flag.
        const { redelivered: flag, ...rest } = request.json;
        expect(flag).toBe(true);
        expect(rest).toEqual(expected[i]);
      }
      // EVENT_ARCHIVE_DAYS: the archive is pruned by age too.
      expect(await second.outbox.pruneArchive(Date.now() + 1)).toBeGreaterThanOrEqual(6);
    } finally {
      await second.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('takes a time range, can be cancelled, and refuses what it cannot do', async () => {
    const gw = await startGateway({ dialect });
    try {
      const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: receiver.url });
      const noHook = await connectedInstance(gw, uniqueNumber());
      await incoming(gw, a, receiver, ['t1', 't2', 't3', 't4']);
      const sent = original(receiver).map((r) => r.json);
      const byTime = await gw.api('POST', '/api/v1/admin/backfill', {
        key: gw.adminKey,
        body: {
          instanceId: a.id,
          since: sent[1].timestamp,
          until: sent[2].timestamp,
          events: ['MESSAGE'],
          target: 'webhook',
          ratePerSecond: 1000,
        },
      });
      expect(byTime.status).toBe(202);
      await waitFor(async () => ((await jobOf(gw, byTime.body.jobId)).body.status === 'completed' ? true : undefined), 15_000, 'time job');
      // Both bounds included (events recorded in the same millisecond as a bound too).
      const inRange = sent.filter((e) => e.timestamp >= sent[1].timestamp && e.timestamp <= sent[2].timestamp);
      expect(redelivered(receiver).map((r) => r.json.eventId)).toEqual(inRange.map((e) => e.eventId));

      const slow = await gw.api('POST', '/api/v1/admin/backfill', {
        key: gw.adminKey,
        body: { instanceId: a.id, since: sent[0].eventId, target: 'webhook', ratePerSecond: 1 },
      });
      expect(slow.status).toBe(202);
      const cancelled = await gw.api('POST', `/api/v1/admin/backfill/${slow.body.jobId}/cancel`, { key: gw.adminKey });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.status).toBe('cancelled');
      const count = cancelled.body.delivered;
      expect(count).toBeLessThan(cancelled.body.total);
      expect((await gw.api('POST', `/api/v1/admin/backfill/${slow.body.jobId}/cancel`, { key: gw.adminKey })).status).toBe(409);
      const listed = await gw.api('GET', `/api/v1/admin/backfill?instanceId=${a.id}&status=cancelled`, { key: gw.adminKey });
      expect(listed.body.items.map((j: any) => j.jobId)).toEqual([slow.body.jobId]);

      const refuse = (body: Record<string, unknown>) =>
        gw.api('POST', '/api/v1/admin/backfill', {
          key: gw.adminKey,
          body: { instanceId: a.id, since: sent[0].eventId, target: 'webhook', ...body },
        });
      expect((await refuse({ target: 'carrier-pigeon' })).body).toMatchObject({ error: expect.stringContaining('unknown target') });
      expect((await refuse({ since: '00000000-0000-4000-8000-000000000000' })).status).toBe(400);
      expect((await refuse({ instanceId: noHook.id })).status).toBe(400);
      expect((await refuse({ instanceId: 'nope' })).status).toBe(404);
      expect((await gw.api('GET', '/api/v1/admin/backfill', { key: a.token })).status).toBe(403);
      expect(
        (
          await gw.api('POST', '/api/v1/admin/backfill', {
            key: a.token,
            body: { instanceId: a.id, since: sent[0].eventId, target: 'webhook' },
          })
        ).status,
      ).toBe(403);
    } finally {
      await gw.stop();
    }
  });
});
