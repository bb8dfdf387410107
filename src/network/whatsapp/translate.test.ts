/**
 * Translation both ways. Outgoing: every canonical kind becomes Baileys content (then run through
 * Baileys' own generateWAMessageContent, with a local upload function) or a raw interactive message.
 * Incoming: Baileys event payloads (fixtures/baileys-payloads.ts) become canonical events with the
 * sandbox's shapes, phone addresses resolved from LIDs where known.
 */
import { randomBytes } from 'node:crypto';
import { generateWAMessageContent, proto, type WAMediaUploadFunction } from 'baileys';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import type { MediaPayload, OutgoingMessage } from '../port.js';
import { recipientJid } from './addresses.js';
import * as F from './fixtures/baileys-payloads.js';
import { decryptVote, optionHash, pollOptions, tally } from './polls.js';
import {
  callEvents,
  contactEvents,
  groupEvents,
  historyEvents,
  HISTORY_MESSAGES_PER_EVENT,
  labelEvents,
  messageToJson,
  newsletterEvents,
  presenceEvents,
  receiptEvents,
  updateEvents,
  upsertEvents,
  type InboundContext,
} from './translate-in.js';
import { NATIVE_FLOW_NODE, planOutgoing, type OutboundContext, type OutboundPlan } from './translate-out.js';

// --- a directory that knows Maria's LID ---

const known = new Map([[F.CONTACT_LID.split('@')[0]!, F.CONTACT_PN.split('@')[0]!]]);
const ctx: InboundContext = {
  now: () => 1_780_002_000_000,
  addresses: {
    resolve(jid, alt) {
      const [user, server] = jid.split('@') as [string, string];
      const plainUser = user.split(':')[0]!;
      if (server === 'lid') {
        const pn =
          (alt ? alt.replace(/:\d+@/, '@') : undefined) ?? (known.has(plainUser) ? `${known.get(plainUser)}@s.whatsapp.net` : undefined);
        return pn ? { jid: pn, lid: `${plainUser}@lid` } : { jid: `${plainUser}@lid`, lid: `${plainUser}@lid` };
      }
      if (server === 's.whatsapp.net') {
        const lid = [...known.entries()].find(([, pn]) => pn === plainUser)?.[0];
        return lid ? { jid: `${plainUser}@s.whatsapp.net`, lid: `${lid}@lid` } : { jid: `${plainUser}@s.whatsapp.net` };
      }
      return { jid };
    },
  },
};

function png(): Buffer {
  const image = new PNG({ width: 4, height: 4 });
  image.data.fill(200);
  return PNG.sync.write(image);
}

function media(data: Buffer, mimetype: string, extra: Partial<MediaPayload> = {}): MediaPayload {
  return { data, mimetype, sha256: createHash('sha256').update(data).digest('hex'), ...extra };
}

const uploads: string[] = [];
const upload: WAMediaUploadFunction = async (_path, { mediaType }) => {
  uploads.push(mediaType);
  return { mediaUrl: `https://mmg.example/${mediaType}`, directPath: `/v/${mediaType}/${randomBytes(4).toString('hex')}` };
};

function outbound(overrides: Partial<OutboundContext> = {}): OutboundContext {
  return { interactiveMessages: true, findMessage: () => Promise.resolve(undefined), upload, ...overrides };
}

/** Runs a content plan through Baileys' own message generation, as sendMessage would. */
async function generated(plan: OutboundPlan): Promise<proto.IMessage> {
  if (plan.kind !== 'content') throw new Error('not a content plan');
  return generateWAMessageContent(plan.content, { upload });
}

const TO = '5511988887777';
const JID = `${TO}@s.whatsapp.net`;
const image = media(png(), 'image/png', { width: 4, height: 4 });
const quoted = { key: { remoteJid: JID, fromMe: false, id: '3EB0QUOTED01' }, message: { conversation: 'the question' } };

describe('outgoing: every canonical kind', () => {
  it('text: no link preview fetched, mentions and quotes carried', async () => {
    const plan = await planOutgoing(
      { kind: 'text', to: TO, text: 'hi @5511977776666', linkPreview: true, mentions: ['5511977776666'], quoted },
      outbound(),
    );
    expect(plan).toMatchObject({
      kind: 'content',
      jid: JID,
      content: { text: 'hi @5511977776666', linkPreview: null, mentions: ['5511977776666@s.whatsapp.net'] },
    });
    expect(plan.kind === 'content' && plan.options.quoted?.key.id).toBe('3EB0QUOTED01');
    const message = await generated(plan);
    expect(message.extendedTextMessage?.text).toBe('hi @5511977776666');
    expect(message.extendedTextMessage?.contextInfo?.mentionedJid).toEqual(['5511977776666@s.whatsapp.net']);
  });

  it('media of each type goes as bytes (never a URL) and is uploaded by Baileys', async () => {
    const cases: [OutgoingMessage, keyof proto.IMessage][] = [
      [{ kind: 'media', to: TO, mediaType: 'image', media: image, caption: 'pic' }, 'imageMessage'],
      [{ kind: 'media', to: TO, mediaType: 'video', media: media(randomBytes(64), 'video/mp4'), caption: 'clip' }, 'videoMessage'],
      [
        { kind: 'media', to: TO, mediaType: 'audio', media: media(randomBytes(64), 'audio/ogg; codecs=opus'), voiceNote: true },
        'audioMessage',
      ],
      [
        {
          kind: 'media',
          to: TO,
          mediaType: 'document',
          media: media(randomBytes(64), 'application/pdf', { fileName: 'a.pdf' }),
          caption: 'doc',
        },
        'documentMessage',
      ],
      [{ kind: 'sticker', to: TO, media: media(randomBytes(64), 'image/webp', { animated: true }) }, 'stickerMessage'],
    ];
    for (const [message, field] of cases) {
      const plan = await planOutgoing(message, outbound());
      if (plan.kind !== 'content') throw new Error('expected content');
      const content = plan.content as Record<string, unknown>;
      const bytes = content.image ?? content.video ?? content.audio ?? content.document ?? content.sticker;
      expect(Buffer.isBuffer(bytes)).toBe(true);
      const built = await generated(plan);
      expect(built[field]).toBeTruthy();
    }
    const [image_, , audio, doc, sticker] = await Promise.all(cases.map(async ([m]) => generated(await planOutgoing(m, outbound()))));
    expect(image_?.imageMessage?.caption).toBe('pic');
    expect(audio?.audioMessage?.ptt).toBe(true);
    expect(doc?.documentMessage?.fileName).toBe('a.pdf');
    expect(sticker?.stickerMessage?.isAnimated).toBe(true);
  });

  it('a URL where bytes belong is refused', async () => {
    const sneaky = { ...image, data: 'file:///etc/passwd' as unknown as Buffer };
    await expect(planOutgoing({ kind: 'media', to: TO, mediaType: 'image', media: sneaky }, outbound())).rejects.toThrow(/bytes/);
  });

  it('link: the caller-given preview, no fetch', async () => {
    const plan = await planOutgoing(
      { kind: 'link', to: TO, text: 'read this', url: 'https://example.org/a', title: 'A', description: 'about A', thumbnail: image },
      outbound(),
    );
    const message = await generated(plan);
    expect(message.extendedTextMessage).toMatchObject({
      text: 'read this\nhttps://example.org/a',
      matchedText: 'https://example.org/a',
      title: 'A',
      description: 'about A',
    });
    expect(message.extendedTextMessage?.jpegThumbnail).toBeTruthy();
  });

  it('location, contact cards, poll', async () => {
    const location = await generated(
      await planOutgoing({ kind: 'location', to: TO, latitude: -23.55, longitude: -46.63, name: 'Sé', address: 'Praça da Sé' }, outbound()),
    );
    expect(location.locationMessage).toMatchObject({
      degreesLatitude: -23.55,
      degreesLongitude: -46.63,
      name: 'Sé',
      address: 'Praça da Sé',
    });
    const vcard = 'BEGIN:VCARD\nVERSION:3.0\nFN:Ana\nTEL;type=CELL;waid=5511900000000:+5511900000000\nEND:VCARD';
    const one = await generated(await planOutgoing({ kind: 'contact', to: TO, contacts: [{ displayName: 'Ana', vcard }] }, outbound()));
    expect(one.contactMessage).toMatchObject({ displayName: 'Ana', vcard });
    const two = await generated(
      await planOutgoing(
        {
          kind: 'contact',
          to: TO,
          contacts: [
            { displayName: 'Ana', vcard },
            { displayName: 'Bia', vcard },
          ],
        },
        outbound(),
      ),
    );
    expect(two.contactsArrayMessage?.contacts).toHaveLength(2);
    const poll = await generated(
      await planOutgoing({ kind: 'poll', to: TO, name: 'Lunch?', options: ['Pizza', 'Sushi'], selectableCount: 1 }, outbound()),
    );
    const creation = poll.pollCreationMessageV3 ?? poll.pollCreationMessage ?? poll.pollCreationMessageV2;
    expect(creation?.options?.map((o) => o.optionName)).toEqual(['Pizza', 'Sushi']);
    // The secret that later decrypts the votes.
    expect(poll.messageContextInfo?.messageSecret).toHaveLength(32);
  });

  it('forward: the stored original protobuf when the driver has it, else the given JSON', async () => {
    const original = { key: { remoteJid: JID, fromMe: false, id: '3EB0ORIG0001' }, message: { conversation: 'fwd me' } };
    const fromJson = await generated(await planOutgoing({ kind: 'forward', to: '5511977776666', original }, outbound()));
    expect(fromJson.extendedTextMessage?.text ?? fromJson.conversation).toBe('fwd me');
    expect(fromJson.extendedTextMessage?.contextInfo?.isForwarded).toBe(true);
    const stored = await planOutgoing(
      { kind: 'forward', to: '5511977776666', original },
      outbound({
        findMessage: () =>
          Promise.resolve({ key: original.key, message: proto.Message.fromObject({ conversation: 'exact proto' }), messageTimestamp: 1 }),
      }),
    );
    expect((await generated(stored)).extendedTextMessage?.text).toBe('exact proto');
  });

  it('status posts go to status@broadcast for the given audience', async () => {
    const text = await planOutgoing(
      { kind: 'status_text', audience: ['5511977776666'], text: 'hello world', backgroundColor: '#FF0000', font: 'SYSTEM_BOLD' },
      outbound(),
    );
    expect(text).toMatchObject({
      kind: 'content',
      jid: 'status@broadcast',
      options: { statusJidList: ['5511977776666@s.whatsapp.net'], backgroundColor: '#FF0000', font: 6, broadcast: true },
    });
    const pic = await planOutgoing(
      { kind: 'status_media', audience: ['5511977776666'], mediaType: 'image', media: image, caption: 'story' },
      outbound(),
    );
    expect(pic).toMatchObject({ jid: 'status@broadcast', options: { statusJidList: ['5511977776666@s.whatsapp.net'] } });
    expect((await generated(pic)).imageMessage?.caption).toBe('story');
  });

  it('buttons, list, pix and carousel are raw native-flow messages with the biz node, only when enabled', async () => {
    const buttons: OutgoingMessage = {
      kind: 'buttons',
      to: TO,
      title: 'Hi',
      text: 'Pick one',
      footer: 'Waygate',
      header: { mediaType: 'image', media: image },
      buttons: [
        { type: 'reply', id: 'yes', text: 'Yes' },
        { type: 'url', text: 'Site', url: 'https://example.org' },
        { type: 'call', text: 'Call', phoneNumber: '5511900000000' },
        { type: 'copy', text: 'Code', code: 'ABC123' },
      ],
      quoted,
    };
    await expect(planOutgoing(buttons, outbound({ interactiveMessages: false }))).rejects.toMatchObject({
      code: 'interactive_disabled',
      status: 409,
    });

    const plan = await planOutgoing(buttons, outbound());
    if (plan.kind !== 'relay') throw new Error('expected relay');
    expect(plan.additionalNodes).toEqual([NATIVE_FLOW_NODE]);
    const interactive = plan.message.viewOnceMessage?.message?.interactiveMessage;
    expect(interactive?.body?.text).toBe('Pick one');
    expect(interactive?.header?.hasMediaAttachment).toBe(true);
    expect(interactive?.header?.imageMessage?.directPath).toMatch(/^\/v\/image\//);
    expect(interactive?.contextInfo?.stanzaId).toBe('3EB0QUOTED01');
    expect(interactive?.nativeFlowMessage?.buttons?.map((b) => [b.name, JSON.parse(b.buttonParamsJson ?? '{}')])).toEqual([
      ['quick_reply', { display_text: 'Yes', id: 'yes' }],
      ['cta_url', { display_text: 'Site', url: 'https://example.org', merchant_url: 'https://example.org' }],
      ['cta_call', { display_text: 'Call', phone_number: '+5511900000000' }],
      ['cta_copy', { display_text: 'Code', copy_code: 'ABC123', id: 'ABC123' }],
    ]);
    // The protobuf encodes (what relayMessage does first).
    expect(proto.Message.encode(proto.Message.fromObject(plan.message)).finish().length).toBeGreaterThan(0);

    const list = await planOutgoing(
      {
        kind: 'list',
        to: TO,
        text: 'Menu',
        buttonText: 'Open',
        sections: [{ title: 'Food', rows: [{ id: 'p', title: 'Pizza', description: 'hot' }] }],
      },
      outbound(),
    );
    const select =
      list.kind === 'relay' ? list.message.viewOnceMessage?.message?.interactiveMessage?.nativeFlowMessage?.buttons?.[0] : undefined;
    expect(select?.name).toBe('single_select');
    expect(JSON.parse(select?.buttonParamsJson ?? '{}')).toEqual({
      title: 'Open',
      sections: [{ title: 'Food', rows: [{ id: 'p', title: 'Pizza', description: 'hot' }] }],
    });

    const pix = await planOutgoing(
      { kind: 'pix', to: TO, merchantName: 'Loja', key: 'loja@example.org', keyType: 'EMAIL', amountCents: 1990 },
      outbound(),
    );
    const payment =
      pix.kind === 'relay' ? pix.message.viewOnceMessage?.message?.interactiveMessage?.nativeFlowMessage?.buttons?.[0] : undefined;
    expect(payment?.name).toBe('payment_info');
    const params = JSON.parse(payment?.buttonParamsJson ?? '{}') as Record<string, any>;
    expect(params.currency).toBe('BRL');
    expect(params.total_amount).toEqual({ value: 1990, offset: 100 });
    expect(params.payment_settings).toEqual([
      { type: 'pix_static_code', pix_static_code: { merchant_name: 'Loja', key: 'loja@example.org', key_type: 'EMAIL' } },
    ]);

    const carousel = await planOutgoing(
      {
        kind: 'carousel',
        to: TO,
        text: 'Our products',
        cards: [
          { mediaType: 'image', media: image, text: 'Card 1', buttons: [{ type: 'reply', id: 'c1', text: 'Buy' }] },
          {
            mediaType: 'image',
            media: image,
            text: 'Card 2',
            footer: 'f',
            buttons: [{ type: 'url', text: 'See', url: 'https://example.org/2' }],
          },
        ],
      },
      outbound(),
    );
    const cards =
      carousel.kind === 'relay' ? carousel.message.viewOnceMessage?.message?.interactiveMessage?.carouselMessage?.cards : undefined;
    expect(cards).toHaveLength(2);
    expect(cards?.[0]?.header?.imageMessage?.directPath).toBeTruthy();
    expect(cards?.[1]?.nativeFlowMessage?.buttons?.[0]?.name).toBe('cta_url');
  });

  it('recipients: digits, phone JIDs, LIDs, groups, newsletters; anything else is a 400', () => {
    expect(recipientJid('5511988887777')).toBe(JID);
    expect(recipientJid('5511988887777:3@s.whatsapp.net')).toBe(JID);
    expect(recipientJid('200000000000011@lid')).toBe('200000000000011@lid');
    expect(recipientJid(F.GROUP)).toBe(F.GROUP);
    expect(recipientJid('120363000000000099@newsletter')).toBe('120363000000000099@newsletter');
    expect(() => recipientJid('https://evil.example/')).toThrow(/not a WhatsApp address/);
  });
});

describe('incoming: Baileys events -> canonical events', () => {
  it('messages.upsert: user messages become MESSAGE with the sandbox shape; plumbing and own echoes are skipped', () => {
    const events = upsertEvents(F.upsert, ctx, (id) => id === '3EB0SENTBYUS');
    expect(events.map((e) => (e.data.key as { id: string }).id)).toEqual([
      '3EB0TEXT0001',
      '3EB0IMG0001',
      '3EB0REACT001',
      '3EB0REVOKE01',
      '3EB0FROMPHONE',
    ]);
    expect(events.every((e) => e.type === 'MESSAGE')).toBe(true);
    expect(events[0]!.data).toEqual({
      key: { remoteJid: F.CONTACT_PN, remoteJidLid: F.CONTACT_LID, fromMe: false, id: '3EB0TEXT0001' },
      pushName: 'Maria',
      message: { conversation: 'olá' },
      messageTimestamp: 1_780_000_000,
    });
    expect(events[1]!.data.key).toEqual({
      remoteJid: F.GROUP,
      fromMe: false,
      id: '3EB0IMG0001',
      participant: F.CONTACT_PN,
      participantLid: F.CONTACT_LID,
    });
    const imageMessage = (events[1]!.data.message as { imageMessage: Record<string, unknown> }).imageMessage;
    expect(imageMessage).toMatchObject({ mimetype: 'image/jpeg', caption: 'look', fileLength: 12345, width: 640 });
    expect(typeof imageMessage.mediaKey).toBe('string'); // bytes as base64
    expect(events[4]!.data.key).toMatchObject({ fromMe: true });
    // JSON-safe: survives a round trip unchanged.
    for (const event of events) expect(JSON.parse(JSON.stringify(event.data))).toEqual(event.data);
  });

  it('media messages hand the registry a loader', () => {
    const events = upsertEvents(
      { type: 'notify', messages: [F.imageInGroup] },
      ctx,
      () => false,
      () => ({ mimetype: 'image/jpeg', load: () => Promise.resolve(Buffer.from('x')) }),
    );
    expect(events[0]!.media?.mimetype).toBe('image/jpeg');
  });

  it('message JSON turns back into the same protobuf (getMessage from the shared store)', () => {
    const json = messageToJson(F.imageInGroup.message!);
    const back = proto.Message.fromObject(json);
    expect(Buffer.from(back.imageMessage!.mediaKey!)).toEqual(Buffer.from(F.imageInGroup.message!.imageMessage!.mediaKey!));
    expect(Buffer.from(back.messageContextInfo!.messageSecret!)).toEqual(
      Buffer.from(F.imageInGroup.message!.messageContextInfo!.messageSecret!),
    );
  });

  it('messages.update: network rejection -> SEND_MESSAGE FAILED; delivery and read -> READ_RECEIPT', () => {
    const events = updateEvents(F.updates, ctx);
    expect(events).toEqual([
      {
        type: 'SEND_MESSAGE',
        data: {
          key: { remoteJid: F.CONTACT_PN, remoteJidLid: F.CONTACT_LID, fromMe: true, id: '3EB0MINE0001' },
          status: 'FAILED',
          error: { code: '479', message: 'rejected by the network (error 479)' },
          timestamp: 1_780_002_000,
        },
      },
      {
        type: 'READ_RECEIPT',
        data: {
          key: { remoteJid: F.CONTACT_PN, remoteJidLid: F.CONTACT_LID, fromMe: true, id: '3EB0MINE0003' },
          receipt: 'delivered',
          deliveredTimestamp: 1_780_000_700,
        },
      },
      {
        type: 'READ_RECEIPT',
        data: {
          key: { remoteJid: F.CONTACT_PN, remoteJidLid: F.CONTACT_LID, fromMe: true, id: '3EB0MINE0004' },
          receipt: 'read',
          readTimestamp: 1_780_000_800,
        },
      },
    ]);
  });

  it('message-receipt.update (groups) -> READ_RECEIPT per reader', () => {
    expect(receiptEvents(F.groupReceipts, ctx)).toEqual([
      {
        type: 'READ_RECEIPT',
        data: {
          key: { remoteJid: F.GROUP, fromMe: true, id: '3EB0MINE0005' },
          receipt: 'read',
          readTimestamp: 1_780_000_900,
          participant: F.CONTACT_PN,
          participantLid: F.CONTACT_LID,
        },
      },
      {
        type: 'READ_RECEIPT',
        data: {
          key: { remoteJid: F.GROUP, fromMe: true, id: '3EB0MINE0005' },
          receipt: 'delivered',
          deliveredTimestamp: 1_780_000_850,
          participant: '5511977776666@s.whatsapp.net',
        },
      },
    ]);
  });

  it('presence.update -> PRESENCE / CHAT_PRESENCE with the sandbox shapes', () => {
    expect(presenceEvents(F.presenceOnline, ctx)).toEqual([
      { type: 'PRESENCE', data: { id: F.CONTACT_PN, lid: F.CONTACT_LID, presence: 'available' } },
    ]);
    expect(presenceEvents(F.presenceOffline, ctx)).toEqual([
      { type: 'PRESENCE', data: { id: F.CONTACT_PN, lid: F.CONTACT_LID, presence: 'unavailable', lastSeen: 1_780_000_950 } },
    ]);
    expect(presenceEvents(F.presenceTyping, ctx)).toEqual([
      {
        type: 'CHAT_PRESENCE',
        data: { remoteJid: F.GROUP, participant: F.CONTACT_PN, participantLid: F.CONTACT_LID, presence: 'composing' },
      },
    ]);
  });

  it('call -> CALL', () => {
    expect(callEvents(F.calls, ctx)).toEqual([
      {
        type: 'CALL',
        data: {
          id: 'CALL0001',
          from: F.CONTACT_PN,
          fromLid: F.CONTACT_LID,
          status: 'offer',
          isVideo: true,
          isGroup: false,
          timestamp: 1_780_001_000,
          offline: false,
        },
      },
    ]);
  });

  it('contacts, groups, labels, newsletters', () => {
    expect(contactEvents(F.contacts, ctx, 'upsert')).toEqual([
      { type: 'CONTACT', data: { action: 'upsert', id: F.CONTACT_PN, lid: F.CONTACT_LID, name: 'Maria Silva', notify: 'Maria' } },
      { type: 'CONTACT', data: { action: 'upsert', id: '5511977776666@s.whatsapp.net', notify: 'João' } },
    ]);
    expect(groupEvents({ kind: 'update', groups: F.groupUpdate }, ctx)).toEqual([
      { type: 'GROUP', data: { action: 'update', id: F.GROUP, subject: 'Renamed', announce: true } },
    ]);
    expect(groupEvents({ kind: 'participants', update: F.participants }, ctx)).toEqual([
      {
        type: 'GROUP',
        data: {
          action: 'add',
          id: F.GROUP,
          author: '5511999999999@s.whatsapp.net',
          authorLid: '200000000000007@lid',
          participants: [{ jid: F.CONTACT_PN, lid: F.CONTACT_LID, admin: null }],
        },
      },
    ]);
    expect(labelEvents({ kind: 'edit', label: F.labelEdit }, ctx)).toEqual([
      { type: 'LABEL', data: { action: 'edit', labelId: '5', name: 'VIP', color: 3, deleted: false } },
    ]);
    expect(labelEvents({ kind: 'association', change: F.labelAssociation }, ctx)).toEqual([
      { type: 'LABEL', data: { action: 'add', labelId: '5', chatId: F.CONTACT_PN, chatLid: F.CONTACT_LID } },
    ]);
    expect(newsletterEvents({ kind: 'reaction', event: F.newsletterReaction })).toEqual([
      {
        type: 'NEWSLETTER',
        data: { action: 'reaction', newsletterId: '120363000000000099@newsletter', serverId: '101', reaction: { code: '❤️', count: 3 } },
      },
    ]);
  });

  it('messaging-history.set -> HISTORY_SYNC in parts, chats and contacts in the first', () => {
    const events = historyEvents(F.history(HISTORY_MESSAGES_PER_EVENT + 50), ctx);
    expect(events).toHaveLength(2);
    expect(events[0]!.data).toMatchObject({ syncType: 'RECENT', progress: 100, isLatest: true, part: 1, parts: 2 });
    expect(events[0]!.data.chats).toEqual([
      { id: F.CONTACT_PN, lid: F.CONTACT_LID, name: 'Maria', unreadCount: 2, conversationTimestamp: 1_779_999_999, archived: false },
    ]);
    expect((events[0]!.data.messages as unknown[]).length).toBe(HISTORY_MESSAGES_PER_EVENT);
    expect((events[1]!.data.messages as unknown[]).length).toBe(50);
    expect(events[1]!.data.chats).toEqual([]);
  });
});

describe('poll votes', () => {
  const secret = randomBytes(32);
  const pollId = '3EB0POLL0001';
  const options = proto.Message.PollCreationMessage.fromObject({
    name: 'Lunch?',
    options: [{ optionName: 'Pizza' }, { optionName: 'Sushi' }],
    selectableOptionsCount: 1,
  });

  it('decrypts a vote made with LID addresses after trying the phone ones, and tallies', () => {
    const vote = F.encryptPollVote({
      secret,
      pollId,
      creatorJid: '200000000000007@lid',
      voterJid: '200000000000011@lid',
      selected: [Buffer.from(optionHash('Sushi'), 'hex')],
    });
    const decrypted = decryptVote(
      vote,
      pollId,
      secret,
      ['5511999999999@s.whatsapp.net', '200000000000007@lid'],
      ['5511988887777@s.whatsapp.net', '200000000000011@lid'],
    );
    expect(decrypted).toEqual({ hashes: [optionHash('Sushi')], voterJid: '200000000000011@lid' });
    const names = pollOptions(options);
    const votes = new Map([['5511988887777@s.whatsapp.net', decrypted!.hashes]]);
    expect(tally(names, votes)).toEqual([
      { name: 'Pizza', voters: [] },
      { name: 'Sushi', voters: ['5511988887777@s.whatsapp.net'] },
    ]);
  });

  it('a wrong secret decrypts nothing', () => {
    const vote = F.encryptPollVote({ secret, pollId, creatorJid: 'a@s.whatsapp.net', voterJid: 'b@s.whatsapp.net', selected: [] });
    expect(decryptVote(vote, pollId, randomBytes(32), ['a@s.whatsapp.net'], ['b@s.whatsapp.net'])).toBeUndefined();
  });
});
