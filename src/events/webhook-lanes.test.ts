/**
 * Webhook lanes with a real HTTP receiver: the per-instance `seq` in every envelope (contiguous, in
 * order, kept across a restart, on both databases) and the opt-in batched webhook (arrays of
 * envelopes in one signed POST, order kept, a failed batch retried whole, then one dead letter per event).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../storage/db.js';
import {
  DIALECTS,
  PG_URL,
  connectedInstance,
  newSchemaName,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestGateway,
} from '../../test/support/gateway.js';
import { WebhookReceiver } from '../../test/support/receiver.js';

const env = { WEBHOOK_RETRY_BASE_MS: '5', WEBHOOK_RETRY_MAX_MS: '20', WEBHOOK_MAX_ATTEMPTS: '3', WEBHOOK_TIMEOUT_MS: '2000' };

/** Every envelope the receiver got, in arrival order (batched or not). */
function envelopes(hook: WebhookReceiver): { event: string; eventId: string; seq: number }[] {
  return hook.requests.flatMap((r) => (Array.isArray(r.json) ? r.json : [r.json]));
}

function expectContiguous(seqs: number[], from = 1): void {
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => from + i));
}

describe.each(DIALECTS)('event seq on %s', (dialect) => {
  it('numbers every envelope of an instance 1, 2, 3, ... with no gap, and goes on after a restart', async () => {
    const hook = new WebhookReceiver();
    await hook.start();
    const schema = newSchemaName();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-seq-'));
    let gw = await startGateway({ dialect, env, dataDir, schema, keepSchema: true });
    try {
      const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url });
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `n${i}` } }),
        ),
      );
      await waitFor(() => (envelopes(hook).filter((e) => e.event === 'SEND_MESSAGE').length === 30 ? true : undefined));
      const before = envelopes(hook).map((e) => e.seq);
      expectContiguous(before);
      await gw.stop();

      gw = await startGateway({ dialect, env, dataDir, schema, keepSchema: true });
      const after = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'after restart' } });
      expect(after.status).toBe(200);
      await waitFor(() => (envelopes(hook).filter((e) => e.event === 'SEND_MESSAGE').length === 31 ? true : undefined));
      // The numbering continues where it stopped (the resumed session's CONNECTION events included).
      expectContiguous(
        envelopes(hook).map((e) => e.seq),
        1,
      );
    } finally {
      await gw.stop();
      await hook.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('batched webhook', () => {
  let gw: TestGateway;
  const receivers: WebhookReceiver[] = [];

  async function receiver(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await r.start();
    receivers.push(r);
    return r;
  }

  beforeAll(async () => {
    gw = await startGateway({ env });
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.stop()));
  });
  afterAll(async () => gw.stop());

  it('POSTs arrays of up to maxEvents envelopes, signed as one body, in seq order with no gap', async () => {
    const hook = await receiver();
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url });
    hook.setSecret(a.webhookSecret);
    const set = await gw.api('POST', '/api/v1/instance/webhook', {
      key: a.token,
      body: { webhookBatch: { maxEvents: 20, maxWaitMs: 100 } },
    });
    expect(set.status).toBe(200);
    expect(set.body.webhookBatch).toEqual({ maxEvents: 20, maxWaitMs: 100 });
    expect((await gw.api('GET', '/api/v1/instance/webhook', { key: a.token })).body.webhookBatch).toEqual({
      maxEvents: 20,
      maxWaitMs: 100,
    });

    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `b${i}` } }),
      ),
    );
    await waitFor(() => (envelopes(hook).filter((e) => e.event === 'SEND_MESSAGE').length === 100 ? true : undefined));
    expectContiguous(envelopes(hook).map((e) => e.seq));
    const batches = hook.requests.filter((r) => Array.isArray(r.json));
    expect(batches.length).toBeGreaterThan(0);
    // Fewer POSTs than events: they were batched.
    expect(hook.requests.length).toBeLessThan(envelopes(hook).length);
    for (const request of batches) {
      expect(request.signatureValid).toBe(true);
      expect(request.json.length).toBeLessThanOrEqual(20);
      expect(request.headers['x-webhook-batch']).toBe(String(request.json.length));
      expect(request.headers['x-webhook-event-id']).toBeUndefined();
    }
    expect(new Set(envelopes(hook).map((e) => e.eventId)).size).toBe(envelopes(hook).length);

    // Turned off again: one POST per event from then on.
    await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookBatch: null } });
    const count = hook.requests.length;
    await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'single' } });
    const single = await waitFor(() => hook.requests.slice(count).find((r) => r.json?.event === 'SEND_MESSAGE'));
    expect(Array.isArray(single.json)).toBe(false);
    expect(single.json.seq).toBe(envelopes(hook).at(-2)!.seq + 1);
  });

  it('retries a failed batch whole, then makes each of its events a dead letter', async () => {
    const hook = await receiver();
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: hook.url });
    await waitFor(() => (envelopes(hook).length >= 3 ? true : undefined));
    await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookBatch: { maxEvents: 10, maxWaitMs: 300 } } });
    const seen = hook.requests.length;

    // One failure, then success: the second POST carries exactly the same events.
    hook.script.push(500);
    await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `r${i}` } }),
      ),
    );
    await waitFor(() => (hook.requests.length >= seen + 2 ? true : undefined));
    const [failed, retried] = hook.requests.slice(seen);
    expect(retried!.body).toBe(failed!.body);
    await waitFor(() => (envelopes(hook).filter((e) => e.event === 'SEND_MESSAGE').length >= 4 ? true : undefined));

    // Every attempt fails (WEBHOOK_MAX_ATTEMPTS=3): one dead letter per event of the batch.
    hook.script.push(500, 500, 500);
    const buried = hook.requests.length;
    await Promise.all(
      Array.from({ length: 3 }, (_, i) =>
        gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `d${i}` } }),
      ),
    );
    const letters = await waitFor(async () => {
      const list = await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: gw.adminKey });
      return list.body.items?.length >= 3 ? (list.body.items as unknown[]) : undefined;
    });
    expect(hook.requests.slice(buried).every((r) => Array.isArray(r.json))).toBe(true);
    expect(letters.length).toBe(3);
  });
});
