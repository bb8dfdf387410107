/** The message store and batches on PostgreSQL: the same behaviour as on SQLite, in one pass. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, recordEvents, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { makeSamples } from '../../test/support/media.js';

describe('messages and batches on PostgreSQL', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ dialect: 'postgres', sleep: () => Promise.resolve() });
  });
  afterAll(async () => gw?.stop());

  it('stores, quotes, forwards and serves media; runs a batch', async () => {
    const events = recordEvents(gw);
    const samples = await makeSamples();
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const send = (route: string, body: unknown) => gw.api('POST', `/api/v1/send/${route}`, { key: a.token, body });

    const image = await send('media', { number: b.number, media: { base64: samples.png.toString('base64') }, caption: 'pg' });
    expect(image.status).toBe(200);
    const reply = await send('text', { number: b.number, text: 'about that', quoted: { id: image.body.key.id } });
    expect(reply.status).toBe(200);
    expect(reply.body.message.extendedTextMessage.contextInfo.stanzaId).toBe(image.body.key.id);
    const forwarded = await send('forward', { number: uniqueNumber(), messageId: image.body.key.id });
    expect(forwarded.body.message.imageMessage.contextInfo.isForwarded).toBe(true);

    const incoming = await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === image.body.key.id);
    const download = await fetch(`${gw.url}${incoming.data.media.downloadUrl}`, { headers: { apikey: b.token } });
    expect(Buffer.from(await download.arrayBuffer()).equals(samples.png)).toBe(true);

    const batch = await send('batch/text', {
      messages: [
        { number: b.number, text: 'b1' },
        { number: b.number, text: 'b2' },
      ],
      intervalMs: 500,
    });
    expect(batch.status).toBe(202);
    const done = await waitFor(async () => {
      const current = await gw.api('GET', `/api/v1/send/batch/${batch.body.batchId}`, { key: a.token });
      return current.body.status === 'completed' ? current.body : undefined;
    });
    expect(done).toMatchObject({ sent: 2, failed: 0, total: 2 });
  });
});
