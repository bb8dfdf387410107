/** One signed POST (WebhookSink.postSigned): where it goes, and its deadline over the answer and its body. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookReceiver } from '../../../test/support/receiver.js';
import { WebhookSink } from './webhook.js';

const entry = { body: '{"event":"SEND_MESSAGE"}', eventId: 'e1', type: 'SEND_MESSAGE' };

function sink(timeoutMs: number): WebhookSink {
  return new WebhookSink({ timeoutMs, retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, userAgent: 'test' });
}

describe('a webhook POST', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function server(handler: http.RequestListener): Promise<string> {
    const listening = http.createServer(handler);
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => listening.close(() => resolve())));
    cleanups.push(() => listening.closeAllConnections());
    return `http://127.0.0.1:${(listening.address() as AddressInfo).port}/hook?from=waygate`;
  }

  it('POSTs the body signed, with the event headers', async () => {
    const hook = new WebhookReceiver('s');
    await hook.start();
    cleanups.push(() => hook.stop());
    const webhook = sink(5_000);
    cleanups.push(() => webhook.close());
    for (let i = 0; i < 3; i++) expect(await webhook.postSigned(hook.url, 's', entry)).toEqual({ ok: true, status: 200 });
    expect(hook.requests).toHaveLength(3);
    expect(hook.requests[0]!.signatureValid).toBe(true);
    expect(hook.requests[0]!.json).toEqual({ event: 'SEND_MESSAGE' });
  });

  it('keeps the path and query of the URL', async () => {
    const seen: string[] = [];
    const url = await server((req, res) => {
      seen.push(`${req.method} ${req.url} ${String(req.headers['x-webhook-event-id'])}`);
      req.resume();
      res.end();
    });
    const webhook = sink(5_000);
    cleanups.push(() => webhook.close());
    expect(await webhook.postSigned(url, 's', entry)).toEqual({ ok: true, status: 200 });
    expect(seen).toEqual(['POST /hook?from=waygate e1']);
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    const url = await server((req) => req.resume());
    const webhook = sink(200);
    cleanups.push(() => webhook.close());
    expect(await webhook.postSigned(url, 's', entry)).toEqual({ ok: false, status: null, error: 'no answer within 200 ms' });
  });

  it('ends a POST whose answer never finishes its body at the deadline', async () => {
    const url = await server((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('started, never ended');
    });
    // Long enough for the status to come first on a loaded machine; the body is what the deadline cuts.
    const webhook = sink(1_500);
    cleanups.push(() => webhook.close());
    // The status came in time: the event counts as delivered once the body is cut off.
    expect(await webhook.postSigned(url, 's', entry)).toEqual({ ok: true, status: 200 });
  });
});
