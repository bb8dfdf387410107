/**
 * The port's contract for outgoing messages: for every canonical kind, the payload a sandbox
 * recipient gets equals the payload the WhatsApp driver puts on the wire (built by Baileys'
 * generateWAMessage exactly as sendMessage builds it, or the raw interactive message it relays),
 * apart from what is per-send by nature (media keys and upload paths, secrets, thumbnails, ids);
 * and the events both emit have the same fields. So an integration tested on the sandbox meets the
 * same shapes on the real network.
 */
import { createHash, randomBytes } from 'node:crypto';
import { generateWAMessage, type WAMediaUploadFunction } from 'baileys';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import type { MediaPayload, OutgoingMessage } from './port.js';
import { buildOutgoing } from './sandbox/outgoing.js';
import { connectedInstance, recordEvents, startGateway, uniqueNumber } from '../../test/support/gateway.js';
import * as F from './whatsapp/fixtures/baileys-payloads.js';
import { callEvents, messageToJson, presenceEvents, updateEvents, upsertEvents, type InboundContext } from './whatsapp/translate-in.js';
import { planOutgoing } from './whatsapp/translate-out.js';

const ME = '5511999999999';
const TO = '5511988887777';

function png(): Buffer {
  const image = new PNG({ width: 4, height: 4 });
  image.data.fill(200);
  return PNG.sync.write(image);
}

function media(data: Buffer, mimetype: string, extra: Partial<MediaPayload> = {}): MediaPayload {
  return { data, mimetype, sha256: createHash('sha256').update(data).digest('hex'), ...extra };
}

const uploadFn: WAMediaUploadFunction = (_path, { mediaType }) =>
  Promise.resolve({ mediaUrl: `https://mmg.example/${mediaType}`, directPath: `/v/${mediaType}/${randomBytes(4).toString('hex')}` });

const image = media(png(), 'image/png', { width: 4, height: 4 });
const quoted = { key: { remoteJid: `${TO}@s.whatsapp.net`, fromMe: false, id: '3EB0QUOTED01' }, message: { conversation: 'the question' } };
const ownQuoted = {
  key: { remoteJid: `${TO}@s.whatsapp.net`, fromMe: true, id: '3EB0OWN00001' },
  participant: `${ME}@s.whatsapp.net`,
  message: { conversation: 'mine' },
};

const KINDS: [string, OutgoingMessage][] = [
  ['text', { kind: 'text', to: TO, text: 'hello', linkPreview: false }],
  ['text with a link preview', { kind: 'text', to: TO, text: 'read https://example.com/a now', linkPreview: true }],
  [
    'text with quote and mention',
    { kind: 'text', to: TO, text: 'hi @5511977776666', linkPreview: false, mentions: ['5511977776666'], quoted },
  ],
  ['text quoting an own message', { kind: 'text', to: TO, text: 'as I said', linkPreview: false, quoted: ownQuoted }],
  ['image', { kind: 'media', to: TO, mediaType: 'image', media: image, caption: 'pic' }],
  ['video', { kind: 'media', to: TO, mediaType: 'video', media: media(randomBytes(64), 'video/mp4'), caption: 'clip' }],
  ['voice note', { kind: 'media', to: TO, mediaType: 'audio', media: media(randomBytes(64), 'audio/ogg; codecs=opus'), voiceNote: true }],
  ['audio', { kind: 'media', to: TO, mediaType: 'audio', media: media(randomBytes(64), 'audio/mpeg') }],
  [
    'document',
    {
      kind: 'media',
      to: TO,
      mediaType: 'document',
      media: media(randomBytes(64), 'application/pdf', { fileName: 'a.pdf' }),
      caption: 'doc',
    },
  ],
  [
    'link',
    { kind: 'link', to: TO, text: 'see https://example.com', url: 'https://example.com', title: 'Example', description: 'An example' },
  ],
  ['location', { kind: 'location', to: TO, latitude: -23.5, longitude: -46.6, name: 'Office', address: 'Av. Paulista' }],
  ['one contact', { kind: 'contact', to: TO, contacts: [{ displayName: 'Ana', vcard: 'BEGIN:VCARD\nVERSION:3.0\nFN:Ana\nEND:VCARD' }] }],
  [
    'two contacts',
    {
      kind: 'contact',
      to: TO,
      contacts: [
        { displayName: 'Ana', vcard: 'BEGIN:VCARD\nVERSION:3.0\nFN:Ana\nEND:VCARD' },
        { displayName: 'Bia', vcard: 'BEGIN:VCARD\nVERSION:3.0\nFN:Bia\nEND:VCARD' },
      ],
    },
  ],
  [
    'buttons',
    {
      kind: 'buttons',
      to: TO,
      text: 'Pick',
      footer: 'f',
      quoted,
      buttons: [
        { type: 'reply', id: 'yes', text: 'Yes' },
        { type: 'url', text: 'Site', url: 'https://example.com' },
        { type: 'call', text: 'Call', phoneNumber: '5511900000000' },
        { type: 'copy', text: 'Copy', code: 'ABC' },
      ],
    },
  ],
  [
    'buttons with image header',
    {
      kind: 'buttons',
      to: TO,
      text: 'Look',
      title: 'T',
      header: { mediaType: 'image', media: image },
      buttons: [{ type: 'reply', id: 'ok', text: 'OK' }],
    },
  ],
  [
    'list',
    {
      kind: 'list',
      to: TO,
      text: 'Menu',
      title: 'T',
      footer: 'f',
      buttonText: 'Open',
      sections: [{ title: 'S', rows: [{ id: 'r1', title: 'Row', description: 'd' }] }],
    },
  ],
  ['single-choice poll', { kind: 'poll', to: TO, name: 'Lunch?', options: ['A', 'B'], selectableCount: 1 }],
  ['multiple-choice poll', { kind: 'poll', to: TO, name: 'Toppings', options: ['A', 'B', 'C'], selectableCount: 2 }],
  ['sticker', { kind: 'sticker', to: TO, media: media(randomBytes(64), 'image/webp') }],
  ['pix', { kind: 'pix', to: TO, merchantName: 'Shop', key: 'a@b.com', keyType: 'EMAIL', amountCents: 1234, text: 'pay' }],
  [
    'carousel',
    {
      kind: 'carousel',
      to: TO,
      text: 'Cards',
      cards: [
        { mediaType: 'image', media: image, text: 'c1', buttons: [{ type: 'reply', id: 'a', text: 'A' }] },
        { mediaType: 'image', media: image, text: 'c2', footer: 'f2', buttons: [{ type: 'reply', id: 'b', text: 'B' }] },
      ],
    },
  ],
  ['forward', { kind: 'forward', to: TO, original: quoted }],
  ['text status', { kind: 'status_text', audience: [TO], text: 'story', backgroundColor: '#25D366', font: 'SYSTEM_BOLD' }],
  ['media status', { kind: 'status_media', audience: [TO], mediaType: 'image', media: image, caption: 'st' }],
];

/**
 * Per-send values (new media keys and upload paths, secrets, the thumbnail Baileys makes, a payment
 * reference) and Baileys' bookkeeping (`nonJidMentions`).
 */
const VOLATILE = new Set([
  'url',
  'directPath',
  'mediaKey',
  'fileEncSha256',
  'mediaKeyTimestamp',
  'jpegThumbnail',
  'messageContextInfo',
  'messageSecret',
  'nonJidMentions',
]);

function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(comparable);
  if (!value || typeof value !== 'object') return value;
  // Plain text: phones send `conversation`, Baileys (and WhatsApp Web) `extendedTextMessage` with only
  // `text`. Receivers meet both on the real network; the sandbox sends `conversation`.
  const plain = value as { extendedTextMessage?: Record<string, unknown> };
  if (plain.extendedTextMessage && Object.keys(plain.extendedTextMessage).join() === 'text') {
    const { extendedTextMessage, ...rest } = plain;
    return comparable({ ...rest, conversation: extendedTextMessage.text });
  }
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (VOLATILE.has(key)) continue;
    if (key === 'buttonParamsJson' && typeof inner === 'string') {
      const { reference_id: _reference, ...params } = JSON.parse(inner) as Record<string, unknown>;
      out[key] = params;
      continue;
    }
    out[key] = comparable(inner);
  }
  return out;
}

async function onTheWire(message: OutgoingMessage): Promise<Record<string, unknown>> {
  const plan = await planOutgoing(message, { interactiveMessages: true, findMessage: () => Promise.resolve(undefined), upload: uploadFn });
  if (plan.kind === 'relay') return messageToJson(plan.message);
  const built = await generateWAMessage(plan.jid, plan.content, { ...plan.options, userJid: `${ME}@s.whatsapp.net`, upload: uploadFn });
  return messageToJson(built.message!);
}

describe('the port contract: both drivers send the same payload for every kind', () => {
  it('covers every kind of the canonical union', () => {
    const kinds = new Set(KINDS.map(([, m]) => m.kind));
    expect([...kinds].sort()).toEqual(
      [
        'buttons',
        'carousel',
        'contact',
        'forward',
        'link',
        'list',
        'location',
        'media',
        'pix',
        'poll',
        'sticker',
        'status_media',
        'status_text',
        'text',
      ].sort(),
    );
  });

  it.each(KINDS)('%s', async (_name, message) => {
    const sandbox = buildOutgoing(message, ME, 1_780_000_000).content;
    const whatsapp = await onTheWire(message);
    expect(comparable(sandbox)).toEqual(comparable(whatsapp));
  });
});

/**
 * Inbound: the events a sandbox instance gets from its virtual contacts have the fields the
 * WhatsApp driver makes of Baileys' payloads (recorded in fixtures/), with the same types. The
 * WhatsApp driver adds LID fields (`remoteJidLid`, `participantLid`, `lid`, `fromLid`) where the
 * network uses hidden ids; nothing else may differ.
 */
describe('the port contract: both drivers emit the same event shapes', () => {
  const ctx: InboundContext = { now: () => 1_780_002_000_000, addresses: { resolve: (jid) => ({ jid }) } };
  const LID_FIELDS = /(Lid|^lid)$/;

  function shape(value: unknown): unknown {
    if (Array.isArray(value)) return value.length > 0 ? [shape(value[0])] : [];
    if (value === null || typeof value !== 'object') return typeof value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !LID_FIELDS.test(key))
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, inner]) => [key, shape(inner)]),
    );
  }

  it('MESSAGE, READ_RECEIPT, PRESENCE, CHAT_PRESENCE and CALL', async () => {
    const gw = await startGateway();
    try {
      const events = recordEvents(gw);
      const instance = await connectedInstance(gw, uniqueNumber());
      const contact = uniqueNumber();
      const admin = async (route: string, body: unknown) => {
        const res = await gw.api('POST', `/api/v1/sandbox/${route}`, { key: gw.adminKey, body });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      };
      await admin('contacts', { number: contact, pushName: 'Maria' });
      await admin('messages', { from: contact, to: instance.number, text: 'olá' });
      const sent = await gw.api('POST', '/api/v1/send/text', { key: instance.token, body: { number: contact, text: 'hi' } });
      await admin('read', { from: contact, to: instance.number, messageIds: [sent.body.key.id] });
      await admin('presence', { from: contact, to: instance.number, presence: 'available' });
      await admin('presence', { from: contact, to: instance.number, presence: 'unavailable' });
      await admin('presence', { from: contact, to: instance.number, presence: 'composing' });
      await admin('calls', { from: contact, to: instance.number, isVideo: true });
      const sandbox = async (type: string, match: (data: any) => boolean = () => true) =>
        (await events.next(instance.id, type, (e) => match(e.data))).data;

      const whatsapp = {
        MESSAGE: upsertEvents({ type: 'notify', messages: [F.textFromLid] }, ctx, () => false)[0]?.data,
        READ_RECEIPT: updateEvents(F.updates, ctx).find((e) => e.type === 'READ_RECEIPT' && e.data.receipt === 'read')?.data,
        ONLINE: presenceEvents(F.presenceOnline, ctx)[0]?.data,
        OFFLINE: presenceEvents(F.presenceOffline, ctx)[0]?.data,
        CHAT_PRESENCE: presenceEvents(F.presenceTyping, ctx)[0]?.data,
        CALL: callEvents(F.calls, ctx)[0]?.data,
      };
      expect(shape(await sandbox('MESSAGE'))).toEqual(shape(whatsapp.MESSAGE));
      expect(shape(await sandbox('READ_RECEIPT'))).toEqual(shape(whatsapp.READ_RECEIPT));
      expect(shape(await sandbox('PRESENCE', (d) => d.presence === 'available'))).toEqual(shape(whatsapp.ONLINE));
      expect(shape(await sandbox('PRESENCE', (d) => d.presence === 'unavailable'))).toEqual(shape(whatsapp.OFFLINE));
      expect(shape(await sandbox('CHAT_PRESENCE'))).toEqual(shape(whatsapp.CHAT_PRESENCE));
      expect(shape(await sandbox('CALL'))).toEqual(shape(whatsapp.CALL));
    } finally {
      await gw.stop();
    }
  });
});
