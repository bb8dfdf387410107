/**
 * The webhook delivery thread: runs of one signed POST per event, in order, stopping at the first
 * failure, with the same address guard as the main thread; and its point, that a run goes on while
 * the main thread's event loop is held.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Instance } from '../../instance-registry/service.js';
import { WebhookReceiver } from '../../../test/support/receiver.js';
import type { OutboxEntry } from '../envelope.js';
import { WebhookDeliveryThread } from './webhook-delivery-thread.js';
import { WebhookSink } from './webhook.js';

const SECRET = 'thread-secret';

function entries(n: number): OutboxEntry[] {
  return Array.from({ length: n }, (_, i) => {
    const eventId = `e${i + 1}`;
    return {
      seq: i + 1,
      instanceId: 'i1',
      eventId,
      type: 'SEND_MESSAGE',
      body: JSON.stringify({ event: 'SEND_MESSAGE', eventId, seq: i + 1 }),
      createdAt: Date.now(),
    } as OutboxEntry;
  });
}

function instance(url: string, webhookAdminSet = true): Instance {
  return { id: 'i1', webhookUrl: url, webhookSecret: SECRET, webhookAdminSet } as Instance;
}

function sink(): WebhookSink {
  return new WebhookSink({
    timeoutMs: 2000,
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
    userAgent: 'test',
    deliveryThread: true,
  });
}

describe('webhook delivery thread', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function receiver(): Promise<WebhookReceiver> {
    const hook = new WebhookReceiver(SECRET);
    await hook.start();
    cleanups.push(() => hook.stop());
    return hook;
  }

  it('POSTs a run in order, one signed event per POST with its headers', async () => {
    const hook = await receiver();
    const webhook = sink();
    cleanups.push(() => webhook.close());
    const result = await webhook.deliverRun!(entries(20), instance(hook.url));
    expect(result.delivered).toBe(20);
    expect(result.failure).toBeUndefined();
    expect(result.seconds).toHaveLength(20);
    expect(hook.requests.map((r) => r.json.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(hook.requests.every((r) => r.signatureValid)).toBe(true);
    expect(hook.requests[0]!.headers['x-webhook-event-id']).toBe('e1');
    expect(hook.requests[0]!.headers['x-webhook-event']).toBe('SEND_MESSAGE');
    expect(hook.requests[0]!.headers['user-agent']).toBe('test');
  });

  it('stops at the first failure and says which answer stopped it', async () => {
    const hook = await receiver();
    hook.script.push(200, 200, 503);
    const webhook = sink();
    cleanups.push(() => webhook.close());
    const result = await webhook.deliverRun!(entries(6), instance(hook.url));
    expect(result.delivered).toBe(2);
    expect(result.failure?.status).toBe(503);
    expect(result.seconds).toHaveLength(3);
    // Nothing after the failed event was sent: the lane retries it before the next goes.
    expect(hook.requests.map((r) => r.json.seq)).toEqual([1, 2, 3]);
  });

  it('refuses a private target unless the admin key set the URL, as the main thread does', async () => {
    const hook = await receiver();
    const webhook = sink();
    cleanups.push(() => webhook.close());
    const refused = await webhook.deliverRun!(entries(3), instance(hook.url, false));
    expect(refused.delivered).toBe(0);
    expect(refused.failure?.message).toMatch(/^refused: 127\.0\.0\.1 is the non-public address/);
    expect(hook.requests).toHaveLength(0);
    expect((await webhook.deliverRun!(entries(1), instance(hook.url, true))).delivered).toBe(1);
  });

  it('is not used with the test seams for addresses, which cannot cross to a thread', () => {
    const seamed = new WebhookSink({
      timeoutMs: 1000,
      retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      userAgent: 't',
      deliveryThread: true,
      isPublic: () => true,
    });
    expect(seamed.deliverRun).toBeUndefined();
    expect(
      new WebhookSink({ timeoutMs: 1000, retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, userAgent: 't' }).deliverRun,
    ).toBeUndefined();
  });

  it('goes on delivering while the main thread is held', async () => {
    // The receiver is another process writing one line per POST, so this thread can read its count
    // without turning its own event loop.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-thread-'));
    const log = path.join(dir, 'posts.log');
    const child: ChildProcess = spawn(process.execPath, [
      '-e',
      `const http = require('node:http'); const fs = require('node:fs');
       http.createServer((req, res) => { req.resume(); req.on('end', () => { fs.appendFileSync(${JSON.stringify(log)}, 'x\\n'); res.end('ok'); }); })
         .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ]);
    cleanups.push(() => {
      child.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const port = await new Promise<number>((resolve) =>
      child.stdout!.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim()))),
    );
    const webhook = sink();
    cleanups.push(() => webhook.close());
    // Start the thread first (its start-up needs this loop), then hold the loop during a run.
    expect((await webhook.deliverRun!(entries(1), instance(`http://127.0.0.1:${port}/hook`))).delivered).toBe(1);
    const run = webhook.deliverRun!(entries(50), instance(`http://127.0.0.1:${port}/hook`));
    const posts = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').length - 1 : 0);
    const held = new Int32Array(new SharedArrayBuffer(4));
    const until = Date.now() + 30_000;
    // Holds this thread's event loop (no await) until the receiver has every POST, or 30 s.
    while (posts() < 51 && Date.now() < until) Atomics.wait(held, 0, 0, 5);
    expect(posts()).toBe(51);
    expect((await run).delivered).toBe(50);
  });

  it('fails the runs under way when it is closed', async () => {
    const hook = await receiver();
    hook.delayMs = 5_000;
    const thread = new WebhookDeliveryThread({ timeoutMs: 10_000, userAgent: 't', allowPrivate: true });
    const run = thread.deliver({ url: hook.url, secret: SECRET, guarded: false, entries: entries(1) });
    const outcome = run.then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    await new Promise<void>((resolve) => {
      const check = () => (hook.requests.length > 0 ? resolve() : setTimeout(check, 10));
      check();
    });
    await thread.close();
    expect(await outcome).toMatch(/webhook delivery thread exited/);
    await expect(thread.deliver({ url: hook.url, secret: SECRET, guarded: false, entries: entries(1) })).rejects.toThrow(/stopped/);
  });
});
