/**
 * @waygate/client against a real gateway (sandbox network): generated methods and `request` by
 * route, JSON and multipart bodies, errors, binary answers; the webhook verifier on a real signed
 * delivery; the WebSocket stream with a reconnect and its final refusals. Also: the generated files
 * match the OpenAPI document, and the README's example is the type-checked examples/quickstart.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EVENT_TYPES,
  OPERATIONS,
  WaygateClient,
  WaygateError,
  parseWebhook,
  parseWebhookEvents,
  signWebhookBody,
  verifyWebhookSignature,
  WebhookSignatureError,
  type EventStreamError,
  type WaygateEvent,
} from '@waygate/client';
import { EVENT_TYPES as GATEWAY_EVENT_TYPES } from '../../../src/network/port.js';
import { GENERATED_DIR, fallbackOperationName, generateClient, renderClientFiles } from '../../../scripts/client-gen.js';
import { connectedInstance, startGateway, uniqueName, uniqueNumber, waitFor, type TestGateway } from '../../../test/support/gateway.js';
import { makeSamples, type Samples } from '../../../test/support/media.js';
import { WebhookReceiver } from '../../../test/support/receiver.js';

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The generated method for a route, whatever its operationId is. */
function methodFor(route: string): string {
  const entry = Object.entries(OPERATIONS).find(([, op]) => `${op.method} ${op.path}` === route);
  if (!entry) throw new Error(`no operation for ${route}`);
  return entry[0];
}

describe('the generated files', () => {
  it('match what the generator makes of the current OpenAPI document', async () => {
    const files = await renderClientFiles();
    for (const [name, text] of Object.entries(files)) {
      const onDisk = fs.readFileSync(path.join(GENERATED_DIR, name), 'utf8');
      expect(onDisk === text, `${name} is stale: run npm run client:generate`).toBe(true);
    }
    expect(EVENT_TYPES).toEqual([...GATEWAY_EVENT_TYPES]);
  }, 60_000);

  it('names operations without an operationId after their method and path', () => {
    expect(fallbackOperationName('post', '/instance/rotate-token/{instance_id}')).toBe('postInstanceRotateTokenByInstanceId');
    expect(fallbackOperationName('get', '/instance/all')).toBe('getInstanceAll');
  });

  it('prefer operationIds, follow $refs to shared schemas, read events from webhooks and leave WebSocket upgrades out', () => {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const { 'api.d.ts': api, 'operations.js': table } = generateClient({
      info: { title: 'Waygate API', version: '9' },
      paths: {
        '/api/v1/send/text': {
          post: {
            operationId: 'sendText',
            requestBody: { $ref: '#/components/requestBodies/Text' },
            responses: { '200': { $ref: '#/components/responses/Sent' } },
          },
        },
        '/api/v1/send/sticker': {
          post: {
            requestBody: {
              content: {
                'application/json': { schema: { type: 'object', required: ['media'], properties: { media: ref('Media') } } },
                'multipart/form-data': { schema: { type: 'object', properties: { media: { type: 'string', format: 'binary' } } } },
              },
            },
            responses: { '200': { description: 'ok', content: { 'application/json': { schema: ref('SendReply') } } } },
          },
        },
        '/api/v1/ws': { get: { operationId: 'streamEvents', responses: { '101': { description: 'upgrade' } } } },
      },
      components: {
        schemas: {
          SendReply: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
          Media: { type: 'object', properties: { url: { type: 'string' } } },
          TextBody: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
          MessageEvent: {
            allOf: [
              { type: 'object', properties: { event: { const: 'MESSAGE' } } },
              { type: 'object', properties: { data: ref('MessageData') } },
            ],
          },
          MessageData: { type: 'object', required: ['fromDocument'], properties: { fromDocument: { type: 'boolean' } } },
        },
        requestBodies: { Text: { content: { 'application/json': { schema: ref('TextBody') } } } },
        responses: { Sent: { description: 'sent', content: { 'application/json': { schema: ref('SendReply') } } } },
      },
      webhooks: { onMessage: { post: { requestBody: { content: { 'application/json': { schema: ref('MessageEvent') } } } } } },
    });
    expect(api).toContain('sendText(input: SendTextInput, options?: RequestOptions): Promise<SendTextResponse>;');
    expect(api).toContain('export type SendTextInput = Schemas.TextBody;');
    expect(api).toContain('export type SendTextResponse = Schemas.SendReply;');
    expect(api).toContain('media: Schemas.Media | FileUpload;');
    expect(api).toContain('postSendSticker(input: PostSendStickerInput');
    expect(api).toMatch(/export type MessageData = \{\s*fromDocument: boolean;/);
    expect(api).toContain('MESSAGE: Schemas.MessageData;');
    expect(api).not.toContain('streamEvents');
    expect(table).toContain('"files":["media"]');
  });

  it("keep the README's example identical to examples/quickstart.ts (type-checked by the test command)", () => {
    const readme = fs.readFileSync(path.join(PACKAGE, 'README.md'), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(fs.readFileSync(path.join(PACKAGE, 'examples/quickstart.ts'), 'utf8'));
  });
});

describe('the client against a real gateway', () => {
  let gw: TestGateway;
  let samples: Samples;
  let receiver: WebhookReceiver;
  let admin: WaygateClient;

  beforeAll(async () => {
    samples = await makeSamples();
    receiver = new WebhookReceiver();
    await receiver.start();
    gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
    admin = new WaygateClient({ baseUrl: gw.url, apiKey: gw.adminKey });
  });
  afterAll(async () => {
    await gw?.stop();
    await receiver?.stop();
  });

  it('calls operations by method and by route, with JSON and multipart bodies, and reports refusals', async () => {
    const created = await admin.request('POST /instance/create', { instanceName: uniqueName('client'), network: 'sandbox' });
    expect(created.status).toBe('created');
    // The generated method of the same operation.
    const list = await (admin as any)[methodFor('GET /instance/all')]();
    const byRoute = await admin.request('GET /instance/all');
    expect(byRoute.total).toBe(list.total);
    expect(list.items.some((item: { instanceId: string }) => item.instanceId === created.instanceId)).toBe(true);

    const a = new WaygateClient({ baseUrl: gw.url, apiKey: created.token });
    await a.request('POST /instance/connect');
    const number = uniqueNumber();
    await admin.request('POST /sandbox/scan', { instanceId: created.instanceId, number });
    const status = await a.request('GET /instance/status');
    expect(status).toMatchObject({ status: 'CONNECTED', number });

    const b = await connectedInstance(gw, uniqueNumber());
    const text = await a.request('POST /send/text', { number: b.number!, text: 'typed hello' });
    expect(text.status).toBe('SENT');

    // A file goes as multipart/form-data; the bytes come back from the media store.
    const media = await a.request('POST /send/media', {
      number: b.number!,
      caption: 'uploaded',
      media: { file: samples.pdf, filename: 'report.pdf', mimetype: 'application/pdf' },
    });
    expect(media.message.documentMessage).toMatchObject({ fileName: 'report.pdf', mimetype: 'application/pdf' });
    const bytes = await a.request('GET /message/download/{messageId}', { messageId: media.key.id });
    expect(Buffer.from(bytes).equals(samples.pdf)).toBe(true);

    const card = (text: string, id: string, file: Buffer) => ({
      media: { file: new Blob([file]) },
      text,
      buttons: [{ type: 'reply' as const, id, text: 'Choose' }],
    });
    const carousel = await a.request('POST /send/carousel', {
      number: b.number!,
      text: 'Plans',
      cards: [card('Basic', 'basic', samples.jpeg), card('Pro', 'pro', samples.png)],
    });
    expect(carousel.status).toBe('SENT');

    const refused = await a.request('POST /send/text', { number: 'not-a-number', text: '' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(WaygateError);
    expect(refused).toMatchObject({ status: 400, code: 'validation_failed', route: 'POST /send/text' });
    expect((refused as WaygateError).details!.length).toBeGreaterThan(1);
    const wrongKey = await new WaygateClient({ baseUrl: gw.url, apiKey: 'wgt_nope' }).request('GET /instance/status').catch((e) => e);
    expect(wrongKey).toMatchObject({ status: 401, code: 'invalid_api_key', message: 'GET /instance/status: invalid api key' });
  });

  it('verifies the signature of a real webhook delivery', async () => {
    const created = await admin.request('POST /instance/create', {
      instanceName: uniqueName('hook'),
      network: 'sandbox',
      webhookUrl: receiver.url,
    });
    const client = new WaygateClient({ baseUrl: gw.url, apiKey: created.token });
    await client.request('POST /instance/connect');
    const delivery = await waitFor(() =>
      receiver.requests.find((r) => r.json?.instanceId === created.instanceId && r.json.event === 'QRCODE'),
    );

    const signature = delivery.headers['x-webhook-signature'] as string;
    expect(signWebhookBody(delivery.body, created.webhookSecret)).toBe(signature);
    expect(verifyWebhookSignature(delivery.body, signature, created.webhookSecret)).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(delivery.body), signature, created.webhookSecret)).toBe(true);
    const event = parseWebhook(delivery.body, delivery.headers, created.webhookSecret);
    expect(event.event).toBe('QRCODE');
    // A plain body read as a batch is one event.
    expect(parseWebhookEvents(delivery.body, delivery.headers, created.webhookSecret)).toEqual([event]);
    if (event.event === 'QRCODE') expect(event.data.qrcode).toMatch(/^data:image\/png;base64,/);

    expect(verifyWebhookSignature(delivery.body.replace('QRCODE', 'MESSAGE'), signature, created.webhookSecret)).toBe(false);
    expect(verifyWebhookSignature(delivery.body, signature, 'another-secret')).toBe(false);
    expect(verifyWebhookSignature(delivery.body, undefined, created.webhookSecret)).toBe(false);
    expect(() => parseWebhook(delivery.body, new Headers(), created.webhookSecret)).toThrow(WebhookSignatureError);
    expect(() => parseWebhook(`${delivery.body} `, new Headers({ 'x-webhook-signature': signature }), created.webhookSecret)).toThrow(
      /does not match/,
    );
  });

  it('parses a batched webhook delivery into its events, in seq order', async () => {
    const created = await admin.request('POST /instance/create', {
      instanceName: uniqueName('batch'),
      network: 'sandbox',
      webhookUrl: receiver.url,
      webhookEvents: ['SEND_MESSAGE'],
    });
    const client = new WaygateClient({ baseUrl: gw.url, apiKey: created.token });
    await client.request('POST /instance/webhook', { webhookBatch: { maxEvents: 10, maxWaitMs: 200 } });
    await client.request('POST /instance/connect');
    const scan = await gw.api('POST', '/api/v1/sandbox/scan', {
      key: gw.adminKey,
      body: { instanceId: created.instanceId, number: uniqueNumber() },
    });
    expect(scan.status).toBe(200);
    const sent = await Promise.all([1, 2, 3].map((i) => client.request('POST /send/text', { number: uniqueNumber(), text: `batch ${i}` })));
    const ids = sent.map((reply) => reply.key.id);
    const deliveries = await waitFor(() => {
      const batches = receiver.requests.filter((r) => Array.isArray(r.json) && r.json[0]?.instanceId === created.instanceId);
      const events = batches.flatMap((r) => parseWebhookEvents(r.body, r.headers, created.webhookSecret));
      return ids.every((id) => events.some((e) => e.event === 'SEND_MESSAGE' && e.data.key.id === id)) ? { batches, events } : undefined;
    });
    const seqs = deliveries.events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => Number(x) - Number(y)));
    expect(() => parseWebhook(deliveries.batches[0]!.body, deliveries.batches[0]!.headers, created.webhookSecret)).toThrow(
      /parseWebhookEvents/,
    );
  });

  it('streams typed events over the WebSocket, reconnects after a drop, and stops on a final refusal', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const client = new WaygateClient({ baseUrl: gw.url, apiKey: a.token });
    const stream = client.events({ instanceId: a.id, types: ['MESSAGE'], minDelayMs: 20, maxDelayMs: 200 });
    const seen: WaygateEvent[] = [];
    const reconnects: number[] = [];
    let opens = 0;
    stream.on('event', (event) => seen.push(event));
    stream.on('open', () => (opens += 1));
    stream.on('reconnecting', (info) => reconnects.push(info.code));
    await waitFor(() => (opens === 1 && gw.hub.count(a.id) === 1 ? true : undefined));

    const fromB = new WaygateClient({ baseUrl: gw.url, apiKey: b.token });
    const first = await fromB.request('POST /send/text', { number: a.number!, text: 'before the drop' });
    const got = await waitFor(() => seen.find((e) => e.event === 'MESSAGE' && e.data.key.id === first.key.id));
    if (got.event !== 'MESSAGE') throw new Error('narrowed above');
    expect(got.data.message.conversation).toBe('before the drop');
    expect(got.instanceId).toBe(a.id);

    // The gateway drops the stream (as a restart would): the client comes back by itself.
    gw.hub.disconnect(a.id, 1012, 'service restart');
    await waitFor(() => (opens === 2 && gw.hub.count(a.id) === 1 ? true : undefined));
    expect(reconnects).toEqual([1012]);
    const second = await fromB.request('POST /send/text', { number: a.number!, text: 'after the drop' });
    await waitFor(() => seen.find((e) => e.event === 'MESSAGE' && e.data.key.id === second.key.id));
    expect(seen.every((e) => e.event === 'MESSAGE')).toBe(true);

    // The async iterator yields the same events.
    const iterator = stream[Symbol.asyncIterator]();
    const third = await fromB.request('POST /send/text', { number: a.number!, text: 'iterated' });
    let next: WaygateEvent | undefined;
    do next = (await iterator.next()).value as WaygateEvent;
    while (next && !(next.event === 'MESSAGE' && next.data.key.id === third.key.id));
    expect(next).toBeDefined();

    // Deleting the instance closes the stream with 4404: no reconnect, an error instead.
    const ended = new Promise<EventStreamError>((resolve) => stream.on('error', resolve));
    await admin.request('DELETE /instance/delete/{instance_id}', { instance_id: a.id });
    expect(await ended).toMatchObject({ code: 4404 });
    expect(reconnects).toEqual([1012]);
    expect(stream.connected).toBe(false);

    // A wrong token is refused for good too (close 4401, or 401 before the upgrade).
    const refused = new WaygateClient({ baseUrl: gw.url, apiKey: 'wgt_' + 'x'.repeat(43) }).events({ instanceId: b.id, minDelayMs: 20 });
    const error = await new Promise<EventStreamError>((resolve) => refused.on('error', resolve));
    expect(error.code === 4401 || error.status === 401).toBe(true);
    stream.close();
  });
});
