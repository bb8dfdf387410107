/**
 * The web interface's Send table (web/src/send-kinds.ts) against a real gateway: every POST /send
 * route of the OpenAPI document has a row, and each row's form, filled as a person would, makes a
 * body the gateway accepts and delivers through the sandbox. The browser test drives a few kinds
 * through the page; this one covers all of them without a browser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestBody, SEND_KINDS, sendBody, type Values } from '../web/src/send-kinds.js';
import {
  connectedInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from './support/gateway.js';
import { makeSamples, type Samples } from './support/media.js';

/** What a person types into each kind's form (files as the browser's File objects). */
function filledForms(samples: Samples, peer: string, messageId: string): Record<string, Values> {
  const png = (name: string) => new File([samples.png], name, { type: 'image/png' });
  const reply = (text: string, value: string): Values => ({ type: 'reply', text, value });
  return {
    text: { text: 'Hello from the table', linkPreview: true },
    media: { media: png('photo.png'), type: '', caption: 'A photo', voiceNote: false },
    link: { url: 'https://example.com/page', text: 'Look', title: 'Example', description: 'A page', thumbnail: png('thumb.png') },
    location: { latitude: '-23.5613', longitude: '-46.6565', name: 'Avenida Paulista', address: 'São Paulo' },
    contact: { contacts: [{ fullName: 'Ana Souza', number: '5511999990000', organization: 'Shop', email: 'ana@example.com' }] },
    poll: { name: 'Lunch?', options: 'Pizza\nSushi\n', selectableCount: '1' },
    reaction: { messageId, emoji: '👍' },
    sticker: { media: new File([samples.webp], 'sticker.webp', { type: 'image/webp' }) },
    buttons: {
      text: 'Pick one',
      title: 'Menu',
      footer: 'Thanks',
      buttons: [reply('Yes', 'yes'), { type: 'url', text: 'Site', value: 'https://example.com' }],
    },
    list: {
      text: 'Our menu',
      buttonText: 'Open',
      sections: [
        {
          title: 'Food',
          rows: [
            { id: 'pizza', title: 'Pizza', description: 'With cheese' },
            { id: 'salad', title: 'Salad' },
          ],
        },
      ],
    },
    carousel: {
      text: 'Products',
      cards: [
        { media: png('a.png'), text: 'Card A', buttons: [reply('Buy A', 'buy-a')] },
        { media: png('b.png'), text: 'Card B', buttons: [reply('Buy B', 'buy-b')] },
      ],
    },
    pix: { merchantName: 'Shop', keyType: 'EVP', key: '123e4567-e89b-42d3-a456-426614174000', amount: '10.50', text: 'Pay here' },
    forward: { messageId },
    'status-text': { text: 'Open today', backgroundColor: '#25d366', font: 'SYSTEM', audience: peer },
    'status-media': { media: png('status.png'), caption: 'New', audience: peer },
    batch: { messages: `${peer} first\n${peer} second` },
  };
}

function containsFile(value: unknown): boolean {
  if (value instanceof File) return true;
  if (Array.isArray(value)) return value.some(containsFile);
  return typeof value === 'object' && value !== null && Object.values(value).some(containsFile);
}

describe('web Send table', () => {
  let gw: TestGateway;
  let sender: TestInstance;
  let peer: TestInstance;
  let events: RecordedEvents;
  let samples: Samples;

  beforeAll(async () => {
    gw = await startGateway({ env: { BATCH_INTERVAL_MS: '500' } });
    events = recordEvents(gw);
    samples = await makeSamples();
    sender = await connectedInstance(gw, uniqueNumber());
    peer = await connectedInstance(gw, uniqueNumber());
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it('has a row for every POST /send route of the API, and for reactions', async () => {
    const openapi = await gw.api('GET', '/api/v1/openapi.json');
    const sendRoutes = Object.entries(openapi.body.paths as Record<string, Record<string, unknown>>)
      .filter(([route, methods]) => route.startsWith('/api/v1/send/') && !route.includes('{') && 'post' in methods)
      .map(([route]) => route.replace('/api/v1', ''));
    expect(sendRoutes.length).toBeGreaterThanOrEqual(15);
    const rows = SEND_KINDS.map((kind) => kind.path);
    expect(rows.filter((path) => path.startsWith('/send/')).sort()).toEqual([...sendRoutes].sort());
    expect(rows).toContain('/message/react');
  });

  it('turns each filled form into a body the gateway accepts', async () => {
    const first = await gw.api('POST', '/api/v1/send/text', { key: sender.token, body: { number: peer.number, text: 'to react to' } });
    expect(first.status).toBe(200);
    const forms = filledForms(samples, peer.number!, first.body.key.id as string);
    expect(Object.keys(forms).sort()).toEqual(SEND_KINDS.map((kind) => kind.key).sort());

    for (const kind of SEND_KINDS) {
      const options: Values = kind.key === 'text' ? { quoted: first.body.key.id as string, mentions: peer.number!, delayMs: '0' } : {};
      const body = sendBody(kind, forms[kind.key]!, options, peer.number!);
      const payload = requestBody(body);
      // A form with a file goes as multipart/form-data (the bytes as they are), the others as JSON.
      expect(payload instanceof FormData, kind.key).toBe(containsFile(body));
      const response =
        payload instanceof FormData
          ? await fetch(`${gw.url}/api/v1${kind.path}`, { method: 'POST', headers: { apikey: sender.token }, body: payload }).then(
              async (r) => ({ status: r.status, body: (await r.json()) as any }),
            )
          : await gw.api('POST', `/api/v1${kind.path}`, { key: sender.token, body: payload });
      expect(response.status, `${kind.key}: ${JSON.stringify(response.body)}`).toBe(kind.key === 'batch' ? 202 : 200);
      if (kind.recipient === 'none') continue;
      const id = response.body.key.id as string;
      await events.next(sender.id, 'SEND_MESSAGE', (e) => e.data.key.id === id);
    }
    // What the peer got, in the network's shape: a few kinds the forms reshape.
    const received = events.of(peer.id, 'MESSAGE').map((e) => e.data.message as Record<string, any>);
    expect(received.find((m) => m.contactMessage)?.contactMessage.vcard).toContain('waid=5511999990000');
    expect(received.find((m) => m.extendedTextMessage?.contextInfo?.quotedMessage)).toBeDefined();
    expect(received.some((m) => m.reactionMessage?.text === '👍')).toBe(true);
    expect(received.some((m) => m.imageMessage?.caption === 'A photo')).toBe(true);
    const carousel = received.find((m) => m.viewOnceMessage?.message?.interactiveMessage?.carouselMessage);
    expect(carousel?.viewOnceMessage.message.interactiveMessage.carouselMessage.cards).toHaveLength(2);
  });

  it('refuses a batch line that is not “number text” before sending', () => {
    const batch = SEND_KINDS.find((kind) => kind.key === 'batch')!;
    expect(() => sendBody(batch, { messages: 'not a number line' }, {}, '')).toThrow('not “number text”: not a number line');
  });
});
