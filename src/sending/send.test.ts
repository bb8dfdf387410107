/**
 * Every /send endpoint end to end over real HTTP on the sandbox: the reply, the sender's
 * SEND_MESSAGE, and the receiving instance's MESSAGE with the kind's content in the network's
 * payload shape; then the invalid bodies of each, with their precise 4xx.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  createInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';
import { MediaServer, makeSamples, type Samples } from '../../test/support/media.js';

const LIMIT = 256 * 1024;

describe('sending every kind through the sandbox', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let server: MediaServer;
  let samples: Samples;
  let a: TestInstance;
  let b: TestInstance;

  const send = (route: string, body: unknown, key = a.token) => gw.api('POST', `/api/v1/send/${route}`, { key, body });
  const b64 = (data: Buffer) => data.toString('base64');
  const received = (id: string, who = b) => events.next(who.id, 'MESSAGE', (e) => e.data.key.id === id);
  const confirmed = (id: string) => events.next(a.id, 'SEND_MESSAGE', (e) => e.data.key.id === id);

  /** Sends, checks the reply and the SEND_MESSAGE, and returns the MESSAGE the receiver got. */
  async function roundTrip(route: string, body: Record<string, unknown>, who = b) {
    const res = await send(route, { number: who.number, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.key).toMatchObject({ remoteJid: `${who.number}@s.whatsapp.net`, fromMe: true });
    expect(res.body.status).toBe('SENT');
    const sent = await confirmed(res.body.key.id);
    expect(sent.data.message).toEqual(res.body.message);
    const incoming = await received(res.body.key.id, who);
    expect(incoming.data.key).toEqual({ remoteJid: `${a.number}@s.whatsapp.net`, fromMe: false, id: res.body.key.id });
    expect(incoming.data.message).toEqual(res.body.message);
    return { reply: res.body, incoming: incoming.data, sent: sent.data };
  }

  async function expectError(route: string, body: unknown, status: number, pattern: RegExp) {
    const res = await send(route, body);
    expect(res.status, `${route} ${JSON.stringify(body).slice(0, 200)} -> ${JSON.stringify(res.body)}`).toBe(status);
    expect(res.body.error).toMatch(pattern);
  }

  beforeAll(async () => {
    samples = await makeSamples();
    server = new MediaServer();
    await server.start();
    gw = await startGateway({
      env: {
        MEDIA_ALLOW_PRIVATE_URLS: 'true',
        MEDIA_ALLOW_HTTP_URLS: 'true',
        MEDIA_MAX_IMAGE_BYTES: String(LIMIT),
        MEDIA_MAX_STICKER_BYTES: String(LIMIT),
        MEDIA_FETCH_TIMEOUT_MS: '400',
      },
    });
    events = recordEvents(gw);
    a = await connectedInstance(gw, uniqueNumber());
    b = await connectedInstance(gw, uniqueNumber());
  });
  afterAll(async () => {
    await gw?.stop();
    await server?.stop();
  });

  describe('/send/text', () => {
    it('sends plain text as conversation', async () => {
      const { incoming } = await roundTrip('text', { text: 'hello there' });
      expect(incoming.message).toEqual({ conversation: 'hello there' });
      expect(incoming.pushName).toBe(a.name);
    });

    it('quotes a stored message and mentions numbers in contextInfo; marks a link', async () => {
      const first = await roundTrip('text', { text: 'first' });
      const { incoming } = await roundTrip('text', {
        text: `@${b.number} see https://example.com/page`,
        quoted: { id: first.reply.key.id },
        mentions: [b.number],
      });
      const ext = incoming.message.extendedTextMessage;
      expect(ext.text).toBe(`@${b.number} see https://example.com/page`);
      expect(ext.matchedText).toBe('https://example.com/page');
      expect(ext.contextInfo).toEqual({
        stanzaId: first.reply.key.id,
        participant: `${a.number}@s.whatsapp.net`,
        quotedMessage: { conversation: 'first' },
        mentionedJid: [`${b.number}@s.whatsapp.net`],
      });
    });

    it('replies to a received message, naming its sender; linkPreview false keeps a plain text', async () => {
      const fromB = await send('text', { number: a.number, text: 'question?' }, b.token);
      const got = await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === fromB.body.key.id);
      expect(got.data.message).toEqual({ conversation: 'question?' });
      const { incoming } = await roundTrip('text', {
        text: 'answer https://x.example',
        linkPreview: false,
        quoted: { id: fromB.body.key.id },
      });
      expect(incoming.message.extendedTextMessage.matchedText).toBeUndefined();
      expect(incoming.message.extendedTextMessage.contextInfo.participant).toBe(`${b.number}@s.whatsapp.net`);
    });

    it('shows "typing…" to the recipient before the message when delayMs is given', async () => {
      const { reply } = await roundTrip('text', { text: 'typed', delayMs: 30 });
      const presences = events.of(b.id, 'CHAT_PRESENCE').filter((e) => e.data.remoteJid === `${a.number}@s.whatsapp.net`);
      const composing = presences.find((e) => e.data.presence === 'composing');
      const paused = presences.find((e) => e.data.presence === 'paused');
      expect(composing && paused).toBeTruthy();
      const all = events.of(b.id);
      const messageAt = all.findIndex((e) => e.event === 'MESSAGE' && e.data.key.id === reply.key.id);
      expect(all.indexOf(composing)).toBeLessThan(all.indexOf(paused));
      expect(all.indexOf(paused)).toBeLessThan(messageAt);
    });

    it('refuses bad bodies with precise errors', async () => {
      await expectError('text', { number: b.number }, 400, /body\.text is required/);
      await expectError('text', { number: b.number, text: 5 }, 400, /body\.text must be string/);
      await expectError('text', { number: '+55 11', text: 'x' }, 400, /body\.number must match pattern/);
      await expectError('text', { number: b.number, text: '' }, 400, /body\.text must NOT have fewer than 1 characters/);
      await expectError('text', { number: b.number, text: 'x', colour: 'red' }, 400, /body\.colour is not an allowed field/);
      await expectError('text', { number: b.number, text: 'x', delayMs: 20_001 }, 400, /body\.delayMs must be <= 20000/);
      await expectError('text', { number: b.number, text: 'x', mentions: ['12'] }, 400, /body\.mentions\.0 must match pattern/);
      await expectError('text', { number: b.number, text: 'x', quoted: { id: 'NOPE' } }, 404, /quoted message NOPE not found/);
    });

    it('answers 409 for an instance that is not connected', async () => {
      const idle = await createInstance(gw);
      const res = await send('text', { number: b.number, text: 'x' }, idle.token);
      expect(res.status).toBe(409);
      expect(res.body.error).toMatch(/not connected/);
    });
  });

  describe('/send/media', () => {
    it('sends an image from a URL; the receiver can download the same bytes', async () => {
      const url = server.file('/photo.png', samples.png, 'image/png');
      const { incoming, sent } = await roundTrip('media', { media: { url }, caption: 'a photo' });
      const image = incoming.message.imageMessage;
      expect(image).toMatchObject({ mimetype: 'image/png', caption: 'a photo', width: 64, height: 48, fileLength: samples.png.length });
      expect(image.fileSha256).toBe(createHash('sha256').update(samples.png).digest('base64'));
      expect(incoming.media).toMatchObject({
        mimetype: 'image/png',
        fileLength: samples.png.length,
        downloadUrl: `/api/v1/message/download/${incoming.key.id}`,
      });
      expect(incoming.media.base64).toBeUndefined();
      expect(sent.media.downloadUrl).toBe(incoming.media.downloadUrl);

      const download = await fetch(`${gw.url}${incoming.media.downloadUrl}`, { headers: { apikey: b.token } });
      expect(download.status).toBe(200);
      expect(download.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await download.arrayBuffer()).equals(samples.png)).toBe(true);
      const asJson = await gw.api('GET', `${incoming.media.downloadUrl}/base64`, { key: b.token });
      expect(asJson.body).toMatchObject({ mimetype: 'image/png', fileLength: samples.png.length, base64: b64(samples.png) });
      // The sender can download what it sent; another instance cannot see either.
      expect((await fetch(`${gw.url}${incoming.media.downloadUrl}`, { headers: { apikey: a.token } })).status).toBe(200);
      const other = await createInstance(gw);
      expect((await gw.api('GET', incoming.media.downloadUrl, { key: other.token })).status).toBe(404);
    });

    it('sends a document from base64 with its file name, its type sniffed', async () => {
      const { incoming } = await roundTrip('media', {
        media: { base64: b64(samples.pdf), filename: 'report.pdf', mimetype: 'text/plain' },
        caption: 'Q3',
      });
      expect(incoming.message.documentMessage).toMatchObject({
        mimetype: 'application/pdf',
        fileName: 'report.pdf',
        caption: 'Q3',
      });
      const res = await fetch(`${gw.url}${incoming.media.downloadUrl}`, { headers: { apikey: b.token } });
      expect(res.headers.get('content-disposition')).toContain('filename="report.pdf"');
    });

    it("takes the caller's type for documents without a signature, and a data: URL as base64", async () => {
      const { incoming } = await roundTrip('media', {
        type: 'document',
        media: { base64: `data:text/csv;base64,${b64(samples.csv)}`, filename: 'sales.csv' },
      });
      expect(incoming.message.documentMessage).toMatchObject({ mimetype: 'text/csv', fileName: 'sales.csv' });
    });

    it('sends a voice note (OGG/Opus, ptt) and a video, the kind inferred from the bytes', async () => {
      const voice = await roundTrip('media', { type: 'audio', voiceNote: true, media: { base64: b64(samples.opus) } });
      expect(voice.incoming.message.audioMessage).toMatchObject({ mimetype: 'audio/ogg; codecs=opus', ptt: true });
      const video = await roundTrip('media', { media: { base64: b64(samples.mp4) }, caption: 'clip' });
      expect(video.incoming.message.videoMessage).toMatchObject({ mimetype: 'video/mp4', caption: 'clip' });
    });

    it('takes base64 bodies beyond BODY_LIMIT_BYTES on media routes only', async () => {
      const document = Buffer.concat([samples.pdf, Buffer.alloc(1_200_000, 0x20)]);
      const { incoming } = await roundTrip('media', { type: 'document', media: { base64: b64(document), filename: 'big.pdf' } });
      expect(incoming.message.documentMessage.fileLength).toBe(document.length);
      const text = await send('text', { number: b.number, text: 'x'.repeat(1_200_000) });
      expect(text.status).toBe(413);
    });

    it('refuses bad media with precise errors', async () => {
      const number = b.number;
      await expectError('media', { number }, 400, /body\.media is required/);
      await expectError('media', { number, media: {} }, 400, /media must have exactly one of url or base64/);
      await expectError(
        'media',
        { number, media: { url: 'https://x.example/a.png', base64: 'AAAA' } },
        400,
        /exactly one of url or base64/,
      );
      await expectError('media', { number, media: { base64: 'not base64!' } }, 400, /media\.base64 is not valid base64/);
      await expectError(
        'media',
        { number, media: { base64: b64(samples.png) }, type: 'sticker' },
        400,
        /body\.type must be equal to one of the allowed values/,
      );
      await expectError(
        'media',
        { number, type: 'image', media: { base64: b64(samples.gif) } },
        415,
        /media must be JPEG or PNG for an image; the bytes are image\/gif/,
      );
      await expectError(
        'media',
        { number, type: 'image', media: { base64: b64(Buffer.from('just text, not a picture')) } },
        415,
        /the bytes are of an unknown type/,
      );
      await expectError(
        'media',
        { number, type: 'video', media: { base64: b64(samples.png) } },
        415,
        /MP4 or 3GP for a video; the bytes are image\/png/,
      );
      await expectError(
        'media',
        { number, type: 'audio', voiceNote: true, media: { base64: b64(samples.vorbis) } },
        415,
        /OGG\/Opus for a voice note; the bytes are audio\/ogg/,
      );
      await expectError(
        'media',
        { number, type: 'image', voiceNote: true, media: { base64: b64(samples.png) } },
        400,
        /voiceNote applies to type audio only/,
      );
      await expectError(
        'media',
        { number, type: 'audio', caption: 'x', media: { base64: b64(samples.opus) } },
        400,
        /caption is not shown on audio/,
      );
      const big = Buffer.concat([samples.png, Buffer.alloc(LIMIT)]);
      await expectError(
        'media',
        { number, type: 'image', media: { base64: b64(big) } },
        413,
        new RegExp(`limit for image is ${LIMIT} bytes \\(MEDIA_MAX_IMAGE_BYTES\\)`),
      );
      const bigUrl = server.file('/big.png', big, 'image/png');
      await expectError(
        'media',
        { number, type: 'image', media: { url: bigUrl } },
        413,
        /media is \d+ bytes; the limit is 262144 bytes \(MEDIA_MAX_IMAGE_BYTES\)/,
      );
      const streamed = server.unannounced('/stream.png', LIMIT + 50_000);
      await expectError('media', { number, type: 'image', media: { url: streamed } }, 413, /larger than 262144 bytes/);
      await expectError('media', { number, media: { url: server.status('/gone.png', 404) } }, 422, /media\.url answered HTTP 404/);
      await expectError('media', { number, media: { url: server.hang('/slow.png') } }, 422, /did not answer within 400 ms/);
      await expectError('media', { number, media: { url: 'ftp://x.example/a.png' } }, 400, /media\.url must be an http\(s\) URL/);
      await expectError('media', { number, media: { url: 'not a url' } }, 400, /media\.url is not a valid URL/);
    });
  });

  describe('/send/link', () => {
    it('sends a link with the given preview and a JPEG thumbnail', async () => {
      const { incoming } = await roundTrip('link', {
        url: 'https://waygate.example/docs',
        text: 'Read this',
        title: 'Waygate docs',
        description: 'How to send',
        thumbnail: { base64: b64(samples.png) },
      });
      const ext = incoming.message.extendedTextMessage;
      expect(ext).toMatchObject({
        text: 'Read this\nhttps://waygate.example/docs',
        matchedText: 'https://waygate.example/docs',
        title: 'Waygate docs',
        description: 'How to send',
      });
      const thumb = Buffer.from(ext.jpegThumbnail, 'base64');
      expect((await sharp(thumb).metadata()).format).toBe('jpeg');
    });

    it('refuses bad links', async () => {
      await expectError('link', { number: b.number }, 400, /body\.url is required/);
      await expectError('link', { number: b.number, url: 'javascript:alert(1)' }, 400, /body\.url must match pattern/);
      await expectError(
        'link',
        { number: b.number, url: 'https://x.example', thumbnail: { base64: b64(samples.pdf) } },
        415,
        /thumbnail must be a JPEG, PNG, WebP or GIF image/,
      );
    });
  });

  describe('/send/location', () => {
    it('sends a location', async () => {
      const { incoming } = await roundTrip('location', {
        latitude: -23.5505,
        longitude: -46.6333,
        name: 'Praça da Sé',
        address: 'São Paulo',
      });
      expect(incoming.message).toEqual({
        locationMessage: { degreesLatitude: -23.5505, degreesLongitude: -46.6333, name: 'Praça da Sé', address: 'São Paulo' },
      });
    });

    it('refuses coordinates out of range or missing', async () => {
      await expectError('location', { number: b.number, latitude: 91, longitude: 0 }, 400, /body\.latitude must be <= 90/);
      await expectError('location', { number: b.number, latitude: 0, longitude: -180.5 }, 400, /body\.longitude must be >= -180/);
      await expectError('location', { number: b.number, latitude: 0 }, 400, /body\.longitude is required/);
      await expectError('location', { number: b.number, latitude: '10', longitude: 0 }, 400, /body\.latitude must be number/);
    });
  });

  describe('/send/contact', () => {
    it('sends one contact as an escaped vCard linked to WhatsApp', async () => {
      const { incoming } = await roundTrip('contact', {
        contacts: [
          {
            fullName: 'Ana; Maria,\nSilva',
            organization: 'ACME',
            phones: [{ number: '5511987654321', label: 'WORK' }],
            emails: ['ana@example.com'],
          },
        ],
      });
      const card = incoming.message.contactMessage;
      expect(card.displayName).toBe('Ana; Maria,\nSilva');
      expect(card.vcard.split('\n')).toEqual([
        'BEGIN:VCARD',
        'VERSION:3.0',
        'N:;Ana\\; Maria\\,\\nSilva;;;',
        'FN:Ana\\; Maria\\,\\nSilva',
        'ORG:ACME',
        'TEL;type=WORK;type=VOICE;waid=5511987654321:+5511987654321',
        'EMAIL;type=INTERNET:ana@example.com',
        'END:VCARD',
      ]);
    });

    it('sends several contacts as contactsArrayMessage', async () => {
      const { incoming } = await roundTrip('contact', {
        contacts: [
          { fullName: 'One', phones: [{ number: '5511900000001' }] },
          { fullName: 'Two', phones: [{ number: '5511900000002' }] },
        ],
      });
      expect(incoming.message.contactsArrayMessage.displayName).toBe('2 contacts');
      expect(incoming.message.contactsArrayMessage.contacts.map((c: any) => c.displayName)).toEqual(['One', 'Two']);
    });

    it('refuses cards without numbers or too many cards', async () => {
      await expectError('contact', { number: b.number, contacts: [] }, 400, /body\.contacts must NOT have fewer than 1 items/);
      await expectError(
        'contact',
        { number: b.number, contacts: [{ fullName: 'X', phones: [] }] },
        400,
        /body\.contacts\.0\.phones must NOT have fewer than 1 items/,
      );
      const many = Array.from({ length: 21 }, (_, i) => ({ fullName: `C${i}`, phones: [{ number: '5511900000001' }] }));
      await expectError('contact', { number: b.number, contacts: many }, 400, /body\.contacts must NOT have more than 20 items/);
      await expectError(
        'contact',
        { number: b.number, contacts: [{ fullName: 'X', phones: [{ number: 'abc' }] }] },
        400,
        /phones\.0\.number must match pattern/,
      );
    });
  });

  describe('/send/button', () => {
    it('sends reply, url, call and copy buttons as native-flow buttons, with an image header', async () => {
      const { incoming } = await roundTrip('button', {
        text: 'Pick one',
        footer: 'Waygate',
        media: { base64: b64(samples.jpeg) },
        buttons: [
          { type: 'reply', id: 'yes', text: 'Yes' },
          { type: 'url', text: 'Site', url: 'https://waygate.example' },
          { type: 'copy', text: 'Copy code', code: 'ABC-123' },
        ],
      });
      const interactive = incoming.message.viewOnceMessage.message.interactiveMessage;
      expect(interactive.body).toEqual({ text: 'Pick one' });
      expect(interactive.footer).toEqual({ text: 'Waygate' });
      expect(interactive.header).toMatchObject({ hasMediaAttachment: true, imageMessage: { mimetype: 'image/jpeg' } });
      const buttons = interactive.nativeFlowMessage.buttons;
      expect(buttons.map((x: any) => x.name)).toEqual(['quick_reply', 'cta_url', 'cta_copy']);
      expect(JSON.parse(buttons[0].buttonParamsJson)).toEqual({ display_text: 'Yes', id: 'yes' });
      expect(JSON.parse(buttons[1].buttonParamsJson)).toMatchObject({ display_text: 'Site', url: 'https://waygate.example' });
      expect(JSON.parse(buttons[2].buttonParamsJson)).toMatchObject({ copy_code: 'ABC-123' });
      expect(incoming.media.mimetype).toBe('image/jpeg');
      const call = await roundTrip('button', { text: 'Call us', buttons: [{ type: 'call', text: 'Call', phoneNumber: '5511987654321' }] });
      expect(
        JSON.parse(call.incoming.message.viewOnceMessage.message.interactiveMessage.nativeFlowMessage.buttons[0].buttonParamsJson),
      ).toEqual({
        display_text: 'Call',
        phone_number: '+5511987654321',
      });
    });

    it('enforces the button limits and fields', async () => {
      const reply = (id: string) => ({ type: 'reply', id, text: id });
      await expectError(
        'button',
        { number: b.number, text: 'x', buttons: [reply('a'), reply('b'), reply('c'), reply('d')] },
        400,
        /body\.buttons must NOT have more than 3 items/,
      );
      await expectError('button', { number: b.number, text: 'x', buttons: [] }, 400, /body\.buttons must NOT have fewer than 1 items/);
      await expectError(
        'button',
        { number: b.number, text: 'x', buttons: [{ type: 'reply', text: 'No id' }] },
        400,
        /buttons\[0\]\.id is required for a reply button/,
      );
      await expectError(
        'button',
        { number: b.number, text: 'x', buttons: [reply('a'), reply('a')] },
        400,
        /buttons\[1\]\.id "a" is used twice/,
      );
      await expectError(
        'button',
        { number: b.number, text: 'x', buttons: [{ type: 'reply', id: 'a', text: 'A', url: 'https://x.example' }] },
        400,
        /buttons\[0\]\.url is not allowed on a reply button/,
      );
      await expectError(
        'button',
        { number: b.number, text: 'x', buttons: [{ type: 'reply', id: 'a', text: 'x'.repeat(21) }] },
        400,
        /body\.buttons\.0\.text must NOT have more than 20 characters/,
      );
      await expectError(
        'button',
        { number: b.number, text: 'x', buttons: [{ type: 'vote', text: 'A' }] },
        400,
        /body\.buttons\.0\.type must be equal to one of the allowed values/,
      );
      await expectError(
        'button',
        { number: b.number, text: 'x', media: { base64: b64(samples.pdf) }, buttons: [reply('a')] },
        415,
        /media must be an image \(JPEG, PNG\) or a video/,
      );
    });
  });

  describe('/send/list', () => {
    const sections = [
      {
        title: 'Pizzas',
        rows: [
          { id: 'p1', title: 'Margherita', description: 'Tomato, mozzarella' },
          { id: 'p2', title: 'Calabresa' },
        ],
      },
      { title: 'Drinks', rows: [{ id: 'd1', title: 'Water' }] },
    ];

    it('sends a list menu as a native-flow single_select button', async () => {
      const { incoming } = await roundTrip('list', {
        title: 'Menu',
        text: 'What will it be?',
        footer: 'Open till 11',
        buttonText: 'See menu',
        sections,
      });
      const interactive = incoming.message.viewOnceMessage.message.interactiveMessage;
      expect(interactive.header).toEqual({ title: 'Menu', hasMediaAttachment: false });
      expect(interactive.body).toEqual({ text: 'What will it be?' });
      expect(interactive.footer).toEqual({ text: 'Open till 11' });
      const [button] = interactive.nativeFlowMessage.buttons;
      expect(button.name).toBe('single_select');
      expect(JSON.parse(button.buttonParamsJson)).toEqual({
        title: 'See menu',
        sections: [
          {
            title: 'Pizzas',
            rows: [
              { id: 'p1', title: 'Margherita', description: 'Tomato, mozzarella' },
              { id: 'p2', title: 'Calabresa' },
            ],
          },
          { title: 'Drinks', rows: [{ id: 'd1', title: 'Water' }] },
        ],
      });
    });

    it('enforces sections, rows and ids', async () => {
      const rows = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, title: `Row ${i}` }));
      await expectError(
        'list',
        {
          number: b.number,
          text: 'x',
          buttonText: 'Open',
          sections: [
            { title: 'A', rows: rows('a', 6) },
            { title: 'B', rows: rows('b', 5) },
          ],
        },
        400,
        /sections hold 11 rows; a list has at most 10 rows in all/,
      );
      await expectError(
        'list',
        {
          number: b.number,
          text: 'x',
          buttonText: 'Open',
          sections: [
            { title: 'A', rows: [{ id: 'same', title: '1' }] },
            { title: 'B', rows: [{ id: 'same', title: '2' }] },
          ],
        },
        400,
        /sections\[1\]\.rows\[0\]\.id "same" is used twice/,
      );
      const eleven = Array.from({ length: 11 }, (_, i) => ({ title: `S${i}`, rows: [{ id: `r${i}`, title: 'x' }] }));
      await expectError(
        'list',
        { number: b.number, text: 'x', buttonText: 'Open', sections: eleven },
        400,
        /body\.sections must NOT have more than 10 items/,
      );
      await expectError('list', { number: b.number, text: 'x', sections }, 400, /body\.buttonText is required/);
      await expectError(
        'list',
        { number: b.number, text: 'x', buttonText: 'Open', sections: [{ title: 'A', rows: [{ id: 'r', title: 'x'.repeat(25) }] }] },
        400,
        /rows\.0\.title must NOT have more than 24 characters/,
      );
    });
  });

  describe('/send/poll', () => {
    it("sends single- and multiple-choice polls; a contact's vote comes back as an event", async () => {
      const single = await roundTrip('poll', { name: 'Lunch?', options: ['Yes', 'No'] });
      expect(single.incoming.message.pollCreationMessageV3).toEqual({
        name: 'Lunch?',
        options: [{ optionName: 'Yes' }, { optionName: 'No' }],
        selectableOptionsCount: 1,
      });
      expect(single.incoming.message.messageContextInfo.messageSecret).toMatch(/^[A-Za-z0-9+/]{43}=$/);
      const multi = await roundTrip('poll', { name: 'Toppings', options: ['Cheese', 'Ham', 'Olives'], selectableCount: 2 });
      expect(multi.incoming.message.pollCreationMessage.selectableOptionsCount).toBe(2);

      const voter = uniqueNumber();
      const pollTo = await send('poll', { number: voter, name: 'Coffee?', options: ['Yes', 'No'] });
      expect(pollTo.status).toBe(200);
      const vote = await gw.api('POST', '/api/v1/sandbox/poll-votes', {
        key: gw.adminKey,
        body: { from: voter, to: a.number, pollMessageId: pollTo.body.key.id, selectedOptions: ['Yes'] },
      });
      expect(vote.status, JSON.stringify(vote.body)).toBe(200);
      const event = await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === vote.body.key.id);
      expect(event.data.pollVote).toEqual({ pollMessageId: pollTo.body.key.id, selectedOptions: ['Yes'] });
      expect(event.data.message.pollUpdateMessage.pollCreationMessageKey).toEqual({
        remoteJid: `${voter}@s.whatsapp.net`,
        fromMe: true,
        id: pollTo.body.key.id,
      });
      expect(event.data.message.pollUpdateMessage.vote.selectedOptions).toEqual([createHash('sha256').update('Yes').digest('base64')]);
      const wrong = await gw.api('POST', '/api/v1/sandbox/poll-votes', {
        key: gw.adminKey,
        body: { from: voter, to: a.number, pollMessageId: pollTo.body.key.id, selectedOptions: ['Tea'] },
      });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toMatch(/"Tea" is not an option/);
      const stranger = await gw.api('POST', '/api/v1/sandbox/poll-votes', {
        key: gw.adminKey,
        body: { from: uniqueNumber(), to: a.number, pollMessageId: pollTo.body.key.id, selectedOptions: ['Yes'] },
      });
      expect(stranger.status).toBe(409);
    });

    it('enforces 2 to 12 distinct options and a possible selectableCount', async () => {
      await expectError('poll', { number: b.number, name: 'Q', options: ['only'] }, 400, /body\.options must NOT have fewer than 2 items/);
      await expectError(
        'poll',
        { number: b.number, name: 'Q', options: Array.from({ length: 13 }, (_, i) => `o${i}`) },
        400,
        /body\.options must NOT have more than 12 items/,
      );
      await expectError('poll', { number: b.number, name: 'Q', options: ['a', 'a'] }, 400, /body\.options must NOT have duplicate items/);
      await expectError(
        'poll',
        { number: b.number, name: 'Q', options: ['a', 'b'], selectableCount: 3 },
        400,
        /selectableCount \(3\) is more than the 2 options/,
      );
      await expectError('poll', { number: b.number, options: ['a', 'b'] }, 400, /body\.name is required/);
    });
  });

  describe('/send/sticker', () => {
    it('sends a WebP as it is and converts a PNG to a 512x512 WebP', async () => {
      const webp = await roundTrip('sticker', { media: { base64: b64(samples.webp) } });
      expect(webp.incoming.message.stickerMessage).toMatchObject({
        mimetype: 'image/webp',
        width: 512,
        height: 512,
        isAnimated: false,
        fileLength: samples.webp.length,
      });
      const url = server.file('/sticker.png', samples.png, 'image/png');
      const converted = await roundTrip('sticker', { media: { url } });
      expect(converted.incoming.message.stickerMessage).toMatchObject({ mimetype: 'image/webp', width: 512, height: 512 });
      const bytes = await gw.api('GET', `${converted.incoming.media.downloadUrl}/base64`, { key: b.token });
      expect((await sharp(Buffer.from(bytes.body.base64, 'base64')).metadata()).format).toBe('webp');
    });

    it('refuses what cannot become a sticker', async () => {
      await expectError(
        'sticker',
        { number: b.number, media: { base64: b64(samples.pdf) } },
        415,
        /media must be WebP, or PNG, JPEG or GIF to convert; the bytes are application\/pdf/,
      );
      await expectError(
        'sticker',
        { number: b.number, media: { base64: b64(Buffer.concat([samples.webp, Buffer.alloc(LIMIT)])) } },
        413,
        /limit for sticker is 262144 bytes \(MEDIA_MAX_STICKER_BYTES\)/,
      );
    });
  });

  describe('/send/pix', () => {
    const pixParams = (incoming: any) =>
      JSON.parse(incoming.message.viewOnceMessage.message.interactiveMessage.nativeFlowMessage.buttons[0].buttonParamsJson);

    it('sends a Pix key as a payment_info button, normalised, with an amount', async () => {
      const { incoming } = await roundTrip('pix', {
        merchantName: 'Padaria Central',
        keyType: 'CPF',
        key: '529.982.247-25',
        amount: 10.5,
        text: 'Pão e café',
      });
      const button = incoming.message.viewOnceMessage.message.interactiveMessage.nativeFlowMessage.buttons[0];
      expect(button.name).toBe('payment_info');
      const params = pixParams(incoming);
      expect(params.payment_settings).toEqual([
        { type: 'pix_static_code', pix_static_code: { merchant_name: 'Padaria Central', key: '52998224725', key_type: 'CPF' } },
      ]);
      expect(params.total_amount).toEqual({ value: 1050, offset: 100 });
      expect(params.currency).toBe('BRL');
      expect(incoming.message.viewOnceMessage.message.interactiveMessage.body).toEqual({ text: 'Pão e café' });
    });

    it('accepts every key type in its normal form', async () => {
      const cases: [string, string, string][] = [
        ['CNPJ', '11.222.333/0001-81', '11222333000181'],
        ['CNPJ', '12.ABC.345/01DE-35', '12ABC34501DE35'],
        ['PHONE', '+55 (11) 98765-4321', '+5511987654321'],
        ['EMAIL', 'Pagamentos@Example.com', 'pagamentos@example.com'],
        ['EVP', '123E4567-E89B-42D3-A456-426614174000', '123e4567-e89b-42d3-a456-426614174000'],
      ];
      for (const [keyType, key, normal] of cases) {
        const { incoming } = await roundTrip('pix', { merchantName: 'Loja', keyType, key });
        expect(pixParams(incoming).payment_settings[0].pix_static_code).toEqual({ merchant_name: 'Loja', key: normal, key_type: keyType });
      }
    });

    it('refuses invalid keys, amounts and names', async () => {
      const pix = (over: Record<string, unknown>) => ({
        number: b.number,
        merchantName: 'Loja',
        keyType: 'CPF',
        key: '52998224725',
        ...over,
      });
      await expectError('pix', pix({ key: '529.982.247-26' }), 400, /not a valid CPF \(check digits do not match\)/);
      await expectError('pix', pix({ key: '111.111.111-11' }), 400, /not a valid CPF/);
      await expectError('pix', pix({ key: '1234' }), 400, /a CPF has 11 digits/);
      await expectError('pix', pix({ keyType: 'CNPJ', key: '11.222.333/0001-82' }), 400, /not a valid CNPJ/);
      await expectError('pix', pix({ keyType: 'PHONE', key: '+1 415 555 0100' }), 400, /a phone key is \+55/);
      await expectError('pix', pix({ keyType: 'EMAIL', key: 'not-an-email' }), 400, /not a valid e-mail/);
      await expectError('pix', pix({ keyType: 'EVP', key: 'abc' }), 400, /a random \(EVP\) key is a UUID/);
      await expectError('pix', pix({ keyType: 'IBAN' }), 400, /body\.keyType must be equal to one of the allowed values/);
      await expectError('pix', pix({ amount: 1.234 }), 400, /at most 2 decimal places/);
      await expectError('pix', pix({ amount: 0 }), 400, /body\.amount must be > 0/);
      await expectError('pix', pix({ merchantName: 'x'.repeat(26) }), 400, /body\.merchantName must NOT have more than 25 characters/);
    });
  });

  describe('/send/carousel', () => {
    const card = (media: Record<string, unknown>, text: string, id: string) => ({
      media,
      text,
      buttons: [{ type: 'reply', id, text: 'Choose' }],
    });

    it('sends cards with image headers and buttons', async () => {
      const url = server.file('/card.jpg', samples.jpeg, 'image/jpeg');
      const { incoming } = await roundTrip('carousel', {
        text: 'Our plans',
        cards: [card({ url }, 'Basic', 'basic'), card({ base64: b64(samples.png) }, 'Pro', 'pro')],
      });
      const interactive = incoming.message.viewOnceMessage.message.interactiveMessage;
      expect(interactive.body).toEqual({ text: 'Our plans' });
      expect(interactive.carouselMessage.cards).toHaveLength(2);
      expect(interactive.carouselMessage.cards[0]).toMatchObject({
        header: { hasMediaAttachment: true, imageMessage: { mimetype: 'image/jpeg' } },
        body: { text: 'Basic' },
      });
      expect(JSON.parse(interactive.carouselMessage.cards[1].nativeFlowMessage.buttons[0].buttonParamsJson)).toEqual({
        display_text: 'Choose',
        id: 'pro',
      });
    });

    it('enforces card count and consistency', async () => {
      const png = { base64: b64(samples.png) };
      await expectError(
        'carousel',
        { number: b.number, text: 'x', cards: [card(png, 'one', 'a')] },
        400,
        /body\.cards must NOT have fewer than 2 items/,
      );
      await expectError(
        'carousel',
        { number: b.number, text: 'x', cards: Array.from({ length: 11 }, (_, i) => card(png, `c${i}`, `id${i}`)) },
        400,
        /body\.cards must NOT have more than 10 items/,
      );
      const two = {
        ...card(png, 'two', 'b'),
        buttons: [
          { type: 'reply', id: 'b1', text: 'One' },
          { type: 'reply', id: 'b2', text: 'Two' },
        ],
      };
      await expectError(
        'carousel',
        { number: b.number, text: 'x', cards: [card(png, 'one', 'a'), two] },
        400,
        /cards\[1\] has 2 buttons and cards\[0\] 1; every card needs the same number/,
      );
      await expectError(
        'carousel',
        { number: b.number, text: 'x', cards: [card(png, 'one', 'a'), card({ base64: b64(samples.mp4) }, 'two', 'b')] },
        415,
        /cards\[1\]\.media is a video and cards\[0\]\.media an image/,
      );
      await expectError(
        'carousel',
        { number: b.number, text: 'x', cards: [card(png, 'one', 'a'), { media: png, text: 'no buttons', buttons: [] }] },
        400,
        /body\.cards\.1\.buttons must NOT have fewer than 1 items/,
      );
    });
  });

  describe('/send/forward', () => {
    it('forwards a received image to a third instance with its media and the forwarded mark', async () => {
      const c = await connectedInstance(gw, uniqueNumber());
      const fromB = await send('media', { number: a.number, media: { base64: b64(samples.png) }, caption: 'look' }, b.token);
      expect(fromB.status).toBe(200);
      await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === fromB.body.key.id);
      const { incoming } = await roundTrip('forward', { messageId: fromB.body.key.id }, c);
      expect(incoming.message.imageMessage).toMatchObject({
        mimetype: 'image/png',
        caption: 'look',
        contextInfo: { isForwarded: true, forwardingScore: 1 },
      });
      const bytes = await fetch(`${gw.url}${incoming.media.downloadUrl}`, { headers: { apikey: c.token } });
      expect(Buffer.from(await bytes.arrayBuffer()).equals(samples.png)).toBe(true);
      const text = await roundTrip('text', { text: 'pass it on' });
      const again = await roundTrip('forward', { messageId: text.reply.key.id }, c);
      expect(again.incoming.message.extendedTextMessage).toEqual({
        text: 'pass it on',
        contextInfo: { isForwarded: true, forwardingScore: 1 },
      });
    });

    it('refuses unknown messages and bad bodies', async () => {
      await expectError(
        'forward',
        { number: b.number, messageId: 'UNKNOWN1' },
        404,
        /message UNKNOWN1 not found in this instance's message store/,
      );
      await expectError('forward', { number: b.number }, 400, /body\.messageId is required/);
      await expectError('forward', { number: b.number, messageId: 'X', quoted: { id: 'Y' } }, 400, /body\.quoted is not an allowed field/);
    });
  });

  describe('/send/status', () => {
    it('posts a text status that the audience receives in status@broadcast', async () => {
      const res = await send('status/text', {
        text: 'Open today!',
        backgroundColor: '#ff0000',
        font: 'SYSTEM_BOLD',
        audience: [b.number, uniqueNumber()],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.key).toMatchObject({ remoteJid: 'status@broadcast', fromMe: true });
      await confirmed(res.body.key.id);
      const story = await received(res.body.key.id);
      expect(story.data.key).toEqual({ remoteJid: 'status@broadcast', fromMe: false, id: res.body.key.id });
      expect(story.data.participant).toBe(`${a.number}@s.whatsapp.net`);
      expect(story.data.message.extendedTextMessage).toEqual({
        text: 'Open today!',
        backgroundArgb: 0xffff0000,
        font: 'SYSTEM_BOLD',
      });
    });

    it('posts an image status with a caption', async () => {
      const res = await send('status/media', { media: { base64: b64(samples.jpeg) }, caption: 'New menu', audience: [b.number] });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const story = await received(res.body.key.id);
      expect(story.data.message.imageMessage).toMatchObject({ mimetype: 'image/jpeg', caption: 'New menu' });
      expect(story.data.media.downloadUrl).toBe(`/api/v1/message/download/${res.body.key.id}`);
    });

    it('refuses bad status posts', async () => {
      await expectError(
        'status/text',
        { text: 'x', backgroundColor: 'red', audience: [b.number] },
        400,
        /body\.backgroundColor must match pattern/,
      );
      await expectError('status/text', { text: 'x', audience: [] }, 400, /body\.audience must NOT have fewer than 1 items/);
      await expectError(
        'status/text',
        { text: 'x', font: 'COMIC_SANS', audience: [b.number] },
        400,
        /body\.font must be equal to one of the allowed values/,
      );
      await expectError(
        'status/text',
        { text: 'x'.repeat(701), audience: [b.number] },
        400,
        /body\.text must NOT have more than 700 characters/,
      );
      await expectError(
        'status/media',
        { media: { base64: b64(samples.pdf) }, audience: [b.number] },
        415,
        /media must be an image \(JPEG, PNG\), a video \(MP4, 3GP\) or audio/,
      );
      await expectError('status/media', { media: { base64: b64(samples.png) } }, 400, /body\.audience is required/);
    });
  });

  it('documents every /send route with a strict body and the message key reply', async () => {
    const doc = await gw.api('GET', '/api/v1/openapi.json');
    expect(doc.status).toBe(200);
    const kinds = [
      'text',
      'media',
      'link',
      'location',
      'contact',
      'button',
      'list',
      'poll',
      'sticker',
      'pix',
      'carousel',
      'forward',
      'batch/text',
      'status/text',
      'status/media',
    ];
    for (const kind of kinds) {
      const operation = doc.body.paths[`/api/v1/send/${kind}`]?.post;
      expect(operation, kind).toBeDefined();
      expect(operation.requestBody.content['application/json'].schema.additionalProperties, kind).toBe(false);
      const success = operation.responses['200'] ?? operation.responses['202'];
      // Shared schemas are $refs into components.schemas: read them inlined.
      const inlined = JSON.stringify(success.content['application/json'].schema, (_key, value) =>
        typeof value?.$ref === 'string' ? doc.body.components.schemas[value.$ref.split('/').pop()] : value,
      );
      expect(inlined, kind).toMatch(kind === 'batch/text' ? /batchId/ : /remoteJid/);
    }
    const download = doc.body.paths['/api/v1/message/download/{messageId}'].get;
    expect(download.responses['200'].content['application/octet-stream'].schema).toEqual({ type: 'string', format: 'binary' });
  });

  describe('received media', () => {
    it('inlines media as base64 in MESSAGE events when the instance asks for it', async () => {
      const settings = await gw.api('POST', '/api/v1/message/media-settings', { key: b.token, body: { mediaBase64InEvents: true } });
      expect(settings.body).toEqual({ mediaBase64InEvents: true });
      expect((await gw.api('GET', '/api/v1/message/media-settings', { key: b.token })).body).toEqual({ mediaBase64InEvents: true });
      const { incoming, sent } = await roundTrip('media', { media: { base64: b64(samples.jpeg) } });
      expect(incoming.media.base64).toBe(b64(samples.jpeg));
      expect(sent.media.base64).toBeUndefined();
      await gw.api('POST', '/api/v1/message/media-settings', { key: b.token, body: { mediaBase64InEvents: false } });
    });

    it('answers 404 for unknown messages and messages without media', async () => {
      const unknown = await gw.api('GET', '/api/v1/message/download/NOPE', { key: b.token });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toMatch(/message NOPE not found/);
      const text = await roundTrip('text', { text: 'no media here' });
      const none = await gw.api('GET', `/api/v1/message/download/${text.reply.key.id}`, { key: b.token });
      expect(none.status).toBe(404);
      expect(none.body.error).toMatch(/has no media/);
    });
  });
});
