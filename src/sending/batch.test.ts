/**
 * /send/batch/text: paced with an injected sleep (the test decides when a pause ends, nothing
 * waits for real time), progress and cancel, failed items, validation, and resuming after a restart.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';

/** A sleep that records each pause and ends it only when the test says so. */
class PauseGate {
  readonly requested: number[] = [];
  private readonly waiting: (() => void)[] = [];
  readonly sleep = (ms: number): Promise<void> => {
    this.requested.push(ms);
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  };
  get pending(): number {
    return this.waiting.length;
  }
  release(): void {
    this.waiting.shift()?.();
  }
}

async function progressOf(gw: TestGateway, token: string, batchId: string) {
  const res = await gw.api('GET', `/api/v1/send/batch/${batchId}`, { key: token });
  expect(res.status).toBe(200);
  return res.body;
}

describe('batch text sending', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let gate: PauseGate;
  let a: TestInstance;
  let b: TestInstance;

  beforeAll(async () => {
    gate = new PauseGate();
    gw = await startGateway({ sleep: gate.sleep, env: { SANDBOX_RECONNECT_DELAY_MS: '600000' } });
    events = recordEvents(gw);
    a = await connectedInstance(gw, uniqueNumber());
    b = await connectedInstance(gw, uniqueNumber());
  });
  afterAll(async () => gw?.stop());

  const create = (body: unknown, key = a.token) => gw.api('POST', '/api/v1/send/batch/text', { key, body });

  it('sends items in order with the interval between two sends, never after the last', async () => {
    const virtual = uniqueNumber();
    const res = await create({
      messages: [
        { number: b.number, text: 'one' },
        { number: virtual, text: 'two' },
        { number: b.number, text: 'three' },
      ],
      intervalMs: 1500,
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'queued', total: 3, intervalMs: 1500 });
    const { batchId } = res.body;

    await waitFor(() => (gate.pending === 1 ? true : undefined), 10_000, 'the first pause');
    let progress = await progressOf(gw, a.token, batchId);
    expect(progress).toMatchObject({ status: 'running', total: 3, sent: 1, pending: 2, failed: 0 });
    expect(progress.items[0]).toMatchObject({ index: 0, number: b.number, status: 'sent', error: null });
    expect(progress.items[1]).toMatchObject({ index: 1, status: 'pending', messageId: null });
    expect(gate.requested).toEqual([1500]);

    gate.release();
    await waitFor(() => (gate.pending === 1 && gate.requested.length === 2 ? true : undefined), 10_000, 'the second pause');
    gate.release();
    progress = await waitFor(async () => {
      const current = await progressOf(gw, a.token, batchId);
      return current.status === 'completed' ? current : undefined;
    });
    expect(progress).toMatchObject({ sent: 3, failed: 0, pending: 0, cancelled: 0 });
    expect(progress.finishedAt).not.toBeNull();
    expect(gate.requested).toEqual([1500, 1500]);
    expect(gate.pending).toBe(0);

    // Each item is a real send: SEND_MESSAGE with its id, and the receiver got them in order.
    const ids = progress.items.map((item: any) => item.messageId);
    for (const id of ids) await events.next(a.id, 'SEND_MESSAGE', (e) => e.data.key.id === id);
    const texts = events
      .of(b.id, 'MESSAGE')
      .filter((e) => ids.includes(e.data.key.id))
      .map((e) => e.data.message.conversation);
    expect(texts).toEqual(['one', 'three']);
  });

  it("uses BATCH_INTERVAL_MS by default and runs an instance's batches one after another", async () => {
    const first = await create({
      messages: [
        { number: b.number, text: 'f1' },
        { number: b.number, text: 'f2' },
      ],
    });
    const second = await create({ messages: [{ number: b.number, text: 's1' }] });
    expect(first.body.intervalMs).toBe(2000);
    await waitFor(() => (gate.pending === 1 ? true : undefined), 10_000, 'a pause');
    expect(gate.requested.at(-1)).toBe(2000);
    expect((await progressOf(gw, a.token, second.body.batchId)).status).toBe('queued');
    gate.release();
    const done = await waitFor(async () => {
      const current = await progressOf(gw, a.token, second.body.batchId);
      return current.status === 'completed' ? current : undefined;
    });
    expect(done.sent).toBe(1);
    expect((await progressOf(gw, a.token, first.body.batchId)).status).toBe('completed');
  });

  it('cancels the items not sent yet', async () => {
    const res = await create({
      messages: [
        { number: b.number, text: 'c1' },
        { number: b.number, text: 'c2' },
        { number: b.number, text: 'c3' },
      ],
      intervalMs: 500,
    });
    await waitFor(() => (gate.pending === 1 ? true : undefined), 10_000, 'a pause');
    const cancelled = await gw.api('POST', `/api/v1/send/batch/${res.body.batchId}/cancel`, { key: a.token });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', sent: 1, cancelled: 2, pending: 0 });
    gate.release();
    await waitFor(() => (gate.pending === 0 ? true : undefined));
    const after = await gw.api('POST', `/api/v1/send/batch/${res.body.batchId}/cancel`, { key: a.token });
    expect(after.status).toBe(409);
    expect(after.body.error).toMatch(/already cancelled/);
    expect((await progressOf(gw, a.token, res.body.batchId)).sent).toBe(1);
  });

  it('records a failed item with its error and goes on', async () => {
    const sender = await connectedInstance(gw, uniqueNumber());
    const res = await create(
      {
        messages: [
          { number: b.number, text: 'before' },
          { number: b.number, text: 'during the outage' },
        ],
        intervalMs: 500,
      },
      sender.token,
    );
    await waitFor(() => (gate.pending === 1 ? true : undefined), 10_000, 'a pause');
    const drop = await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: sender.id } });
    expect(drop.status).toBe(200);
    gate.release();
    const done = await waitFor(async () => {
      const current = await progressOf(gw, sender.token, res.body.batchId);
      return current.status === 'completed' ? current : undefined;
    });
    expect(done).toMatchObject({ sent: 1, failed: 1 });
    expect(done.items[1]).toMatchObject({ status: 'failed', messageId: null });
    expect(done.items[1].error).toMatch(/instance is not connected/);
  });

  it('refuses bad batches with precise errors', async () => {
    const item = { number: b.number, text: 'x' };
    const expectError = async (body: unknown, status: number, pattern: RegExp, key = a.token) => {
      const res = await create(body, key);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.error).toMatch(pattern);
    };
    await expectError({ messages: [] }, 400, /body\.messages must NOT have fewer than 1 items/);
    await expectError({ messages: Array.from({ length: 1001 }, () => item) }, 400, /body\.messages must NOT have more than 1000 items/);
    await expectError({ messages: [item, { number: '12ab', text: 'x' }] }, 400, /body\.messages\.1\.number must match pattern/);
    await expectError({ messages: [{ number: b.number }] }, 400, /body\.messages\.0\.text is required/);
    await expectError({ messages: [item], intervalMs: 100 }, 400, /intervalMs must be at least 500 \(BATCH_MIN_INTERVAL_MS\)/);
    await expectError({ messages: [item], pace: 1 }, 400, /body\.pace is not an allowed field/);
    const offline = await connectedInstance(gw, uniqueNumber());
    await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: offline.id } });
    await expectError({ messages: [item] }, 409, /not connected/, offline.token);

    const unknown = await gw.api('GET', '/api/v1/send/batch/no-such-batch', { key: a.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/batch no-such-batch not found/);
    const mine = await create({ messages: [item] });
    await waitFor(async () => ((await progressOf(gw, a.token, mine.body.batchId)).status === 'completed' ? true : undefined));
    expect((await gw.api('GET', `/api/v1/send/batch/${mine.body.batchId}`, { key: b.token })).status).toBe(404);
  });
});

describe('batches across a restart', () => {
  it('resume where they stopped; an item caught mid-send is failed, not sent twice', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-batch-'));
    const gate = new PauseGate();
    const first = await startGateway({ dataDir, sleep: gate.sleep });
    const a = await connectedInstance(first, uniqueNumber());
    const b = await connectedInstance(first, uniqueNumber());
    const messages = ['r1', 'r2', 'r3', 'r4'].map((text) => ({ number: b.number, text }));
    const res = await first.api('POST', '/api/v1/send/batch/text', { key: a.token, body: { messages, intervalMs: 500 } });
    expect(res.status).toBe(202);
    await waitFor(() => (gate.pending === 1 ? true : undefined), 10_000, 'the first pause');
    await first.stop();

    // As if the process died while item 1 was on its way out.
    const db = new SQLite(path.join(dataDir, 'waygate.db'));
    db.prepare("update send_batch_items set status = 'sending' where batch_id = ? and position = 1").run(res.body.batchId);
    db.close();

    const second = await startGateway({ dataDir, sleep: () => Promise.resolve() });
    try {
      const events = recordEvents(second);
      const done = await waitFor(async () => {
        const current = await progressOf(second, a.token, res.body.batchId);
        return current.status === 'completed' ? current : undefined;
      });
      expect(done.items.map((item: any) => item.status)).toEqual(['sent', 'failed', 'sent', 'sent']);
      expect(done.items[1].error).toMatch(/gateway stopped while this item was being sent; not resent/);
      const ids = [done.items[2].messageId, done.items[3].messageId];
      const got = await waitFor(() => {
        const texts = events
          .of(b.id, 'MESSAGE')
          .filter((e) => ids.includes(e.data.key.id))
          .map((e) => e.data.message.conversation);
        return texts.length === 2 ? texts : undefined;
      });
      expect(got).toEqual(['r3', 'r4']);
    } finally {
      await second.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
