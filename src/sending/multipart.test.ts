/**
 * multipart/form-data uploads on every route that takes media, over real HTTP (undici's FormData,
 * as `fetch` sends it) on SQLite and PostgreSQL: the file reaches the recipient and the media store
 * byte for byte; caps, malformed forms and the in-flight bound answer clear 4xx/503.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  DIALECTS,
  recordEvents,
  startGateway,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';
import { makeSamples, type Samples } from '../../test/support/media.js';

const STICKER_CAP = 64 * 1024;
const BODY_LIMIT = 1024 * 1024;

type FormValue = string | { file: Buffer; name?: string; type?: string };

function form(fields: Record<string, FormValue | FormValue[]>): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item === 'string') data.append(name, item);
      else data.append(name, new Blob([item.file], { type: item.type ?? 'application/octet-stream' }), item.name ?? 'upload.bin');
    }
  }
  return data;
}

async function post(gw: TestGateway, route: string, key: string, body: FormData | string, headers: Record<string, string> = {}) {
  const response = await fetch(`${gw.url}/api/v1/send/${route}`, { method: 'POST', headers: { apikey: key, ...headers }, body });
  return { status: response.status, body: (await response.json()) as any };
}

describe.each(DIALECTS)('multipart uploads on %s', (dialect) => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let samples: Samples;
  let a: TestInstance;
  let b: TestInstance;

  const upload = (route: string, fields: Record<string, FormValue | FormValue[]>) => post(gw, route, a.token, form(fields));
  const received = (id: string) => events.next(b.id, 'MESSAGE', (e) => e.data.key.id === id);
  const stored = async (downloadUrl: string, key: string) =>
    Buffer.from(await (await fetch(`${gw.url}${downloadUrl}`, { headers: { apikey: key } })).arrayBuffer());

  beforeAll(async () => {
    samples = await makeSamples();
    gw = await startGateway({
      dialect,
      env: {
        MEDIA_MAX_STICKER_BYTES: String(STICKER_CAP),
        MEDIA_BODY_LIMIT_BYTES: String(BODY_LIMIT),
        MEDIA_INFLIGHT_MAX_BYTES: String(BODY_LIMIT + BODY_LIMIT / 2),
      },
    });
    events = recordEvents(gw);
    a = await connectedInstance(gw, uniqueNumber());
    b = await connectedInstance(gw, uniqueNumber());
  });
  afterAll(async () => gw?.stop());

  it('sends an uploaded image, document and voice note with /send/media; the bytes reach the media store', async () => {
    const image = await upload('media', { number: b.number!, caption: 'from a form', media: { file: samples.png, name: 'photo.png' } });
    expect(image.status, JSON.stringify(image.body)).toBe(200);
    const incoming = await received(image.body.key.id);
    expect(incoming.data.message.imageMessage).toMatchObject({ mimetype: 'image/png', caption: 'from a form', width: 64, height: 48 });
    expect((await stored(incoming.data.media.downloadUrl, b.token)).equals(samples.png)).toBe(true);

    // The part's file name and type act as filename and mimetype (a CSV has no signature to sniff).
    const csv = await upload('media', { number: b.number!, media: { file: samples.csv, name: 'sales.csv', type: 'text/csv' } });
    expect(csv.status, JSON.stringify(csv.body)).toBe(200);
    expect((await received(csv.body.key.id)).data.message.documentMessage).toMatchObject({
      mimetype: 'text/csv',
      fileName: 'sales.csv',
      fileLength: samples.csv.length,
    });

    // Non-string fields are read as what the schema says they are.
    const voice = await upload('media', {
      number: b.number!,
      type: 'audio',
      voiceNote: 'true',
      delayMs: '0',
      media: { file: samples.opus },
    });
    expect(voice.status, JSON.stringify(voice.body)).toBe(200);
    expect((await received(voice.body.key.id)).data.message.audioMessage).toMatchObject({ ptt: true, mimetype: 'audio/ogg; codecs=opus' });
  });

  it('takes files on /send/sticker, /send/status/media, /send/button, /send/link and every card of /send/carousel', async () => {
    const sticker = await upload('sticker', { number: b.number!, media: { file: samples.webp, name: 's.webp' } });
    expect(sticker.status, JSON.stringify(sticker.body)).toBe(200);
    expect((await received(sticker.body.key.id)).data.message.stickerMessage).toMatchObject({ mimetype: 'image/webp' });

    // A list of strings as the field repeated.
    const story = await upload('status/media', { audience: [b.number!], caption: 'menu', media: { file: samples.jpeg } });
    expect(story.status, JSON.stringify(story.body)).toBe(200);
    expect((await received(story.body.key.id)).data.message.imageMessage).toMatchObject({ mimetype: 'image/jpeg', caption: 'menu' });

    const buttons = await upload('button', {
      number: b.number!,
      text: 'Pick one',
      buttons: JSON.stringify([{ type: 'reply', id: 'yes', text: 'Yes' }]),
      media: { file: samples.jpeg, name: 'header.jpg' },
    });
    expect(buttons.status, JSON.stringify(buttons.body)).toBe(200);
    const interactive = (await received(buttons.body.key.id)).data.message.viewOnceMessage.message.interactiveMessage;
    expect(interactive.header).toMatchObject({ hasMediaAttachment: true, imageMessage: { mimetype: 'image/jpeg' } });

    const link = await upload('link', {
      number: b.number!,
      url: 'https://waygate.example/post',
      title: 'Post',
      thumbnail: { file: samples.png },
    });
    expect(link.status, JSON.stringify(link.body)).toBe(200);
    expect((await received(link.body.key.id)).data.message.extendedTextMessage).toMatchObject({ title: 'Post' });
    expect(link.body.message.extendedTextMessage.jpegThumbnail).toBeTruthy();

    const card = (text: string, id: string) => ({ text, buttons: [{ type: 'reply', id, text: 'Choose' }] });
    // Files may come before the JSON field that holds their cards.
    const carousel = await upload('carousel', {
      'cards[1].media': { file: samples.png },
      number: b.number!,
      text: 'Our plans',
      cards: JSON.stringify([card('Basic', 'basic'), card('Pro', 'pro')]),
      'cards[0].media': { file: samples.jpeg },
    });
    expect(carousel.status, JSON.stringify(carousel.body)).toBe(200);
    const cards = (await received(carousel.body.key.id)).data.message.viewOnceMessage.message.interactiveMessage.carouselMessage.cards;
    expect(cards.map((c: any) => c.header.imageMessage.mimetype)).toEqual(['image/jpeg', 'image/png']);
  });

  it('refuses what a form cannot carry, with clear 4xx', async () => {
    const expectError = async (res: { status: number; body: any }, status: number, code: string, pattern: RegExp) => {
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.code).toBe(code);
      expect(res.body.error).toMatch(pattern);
    };
    // Past the field's cap: reading stops with 413.
    await expectError(
      await upload('sticker', { number: b.number!, media: { file: Buffer.alloc(STICKER_CAP + 10, 1) } }),
      413,
      'media_too_large',
      /media is larger than 65536 bytes/,
    );
    await expectError(
      await upload('media', { number: b.number!, picture: { file: samples.png } }),
      400,
      'invalid_multipart',
      /file field picture is not taken here; file fields: media/,
    );
    await expectError(
      await upload('carousel', { number: b.number!, text: 'x', cards: '[{"text": "a"', 'cards[0].media': { file: samples.png } }),
      400,
      'invalid_multipart',
      /field cards must be JSON/,
    );
    await expectError(
      await upload('carousel', { number: b.number!, text: 'x', 'cards[3].media': { file: samples.png } }),
      400,
      'invalid_multipart',
      /cards is not in the form/,
    );
    await expectError(
      await upload('media', { number: [b.number!, b.number!], media: { file: samples.png } }),
      400,
      'invalid_multipart',
      /field number is given 2 times/,
    );
    await expectError(
      await upload('media', { number: b.number!, media: [{ file: samples.png }, { file: samples.png }] }),
      400,
      'invalid_multipart',
      /too many files/,
    );
    // The JSON schema still validates the form's fields.
    const invalid = await upload('media', { caption: 'no number', media: { file: samples.png } });
    await expectError(invalid, 400, 'validation_failed', /body\.number is required/);
    await expectError(await upload('media', { number: b.number! }), 400, 'validation_failed', /body\.media is required/);
    await expectError(
      await upload('media', { number: b.number!, media: { file: samples.pdf }, type: 'image' }),
      415,
      'unsupported_media_type',
      /media must be JPEG or PNG for an image/,
    );
    await expectError(
      await post(gw, 'media', a.token, '--x\r\nContent-Disposition: form-data; name="number"\r\n\r\n5511', {
        'content-type': 'multipart/form-data; boundary=x',
      }),
      400,
      'invalid_multipart',
      /cannot be read/,
    );
    // Routes without media take JSON only.
    await expectError(await upload('text', { number: b.number!, text: 'hi' }), 415, 'unsupported_content_type', /routes with media/);
    expect(gw.mediaAdmission.bytes).toBe(0);
  });

  it('counts an upload in flight against MEDIA_INFLIGHT_MAX_BYTES and documents both content types', async () => {
    // An upload whose body is still arriving holds its share; a second one past the bound gets 503.
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const boundary = 'waygate-test-boundary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="number"\r\n\r\n${b.number}\r\n--${boundary}\r\nContent-Disposition: form-data; name="media"; filename="p.png"\r\nContent-Type: image/png\r\n\r\n`;
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode(head));
        await held;
        controller.enqueue(samples.png);
        controller.enqueue(new TextEncoder().encode(`\r\n--${boundary}--\r\n`));
        controller.close();
      },
    });
    const slow = fetch(`${gw.url}/api/v1/send/media`, {
      method: 'POST',
      headers: { apikey: a.token, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: stream,
      duplex: 'half',
    });
    await waitFor(() => (gw.mediaAdmission.bytes >= BODY_LIMIT ? true : undefined), 10_000, 'the first upload admitted');
    const busy = await fetch(`${gw.url}/api/v1/send/media`, {
      method: 'POST',
      headers: { apikey: a.token, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(head));
          controller.close();
        },
      }),
      duplex: 'half',
    });
    expect(busy.status).toBe(503);
    expect(await busy.json()).toMatchObject({ code: 'media_busy' });
    finish();
    const first = await slow;
    expect(first.status).toBe(200);
    await waitFor(() => (gw.mediaAdmission.bytes === 0 ? true : undefined), 5000, 'admission released');

    const doc = (await gw.api('GET', '/api/v1/openapi.json')).body;
    for (const [route, file] of [
      ['media', 'media'],
      ['sticker', 'media'],
      ['status/media', 'media'],
      ['button', 'media'],
      ['link', 'thumbnail'],
      ['carousel', 'cards[0].media'],
    ] as const) {
      const content = doc.paths[`/api/v1/send/${route}`].post.requestBody.content;
      expect(Object.keys(content), route).toEqual(['application/json', 'multipart/form-data']);
      expect(content['multipart/form-data'].schema.properties[file], route).toMatchObject({ type: 'string', format: 'binary' });
    }
    expect(Object.keys(doc.paths['/api/v1/send/text'].post.requestBody.content)).toEqual(['application/json']);
  });
});
