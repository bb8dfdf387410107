/**
 * How the sandbox turns a canonical outgoing message into the payload WhatsApp clients exchange,
 * in the JSON shape Baileys delivers (`imageMessage`, `locationMessage`, `pollCreationMessageV3`,
 * `interactiveMessage` with native-flow buttons, ...), so an integration tested on the sandbox meets
 * the same shapes on the real network. Media bytes travel beside the payload, not inside it.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  STATUS_FONTS,
  STATUS_JID,
  isGroupJid,
  toJid,
  type MediaPayload,
  type MessageButton,
  type OutgoingMessage,
  type QuotedMessage,
} from '../port.js';

export interface BuiltMessage {
  /** The chat: the recipient's address, or `status@broadcast` for status posts. */
  remoteJid: string;
  /** Numbers the message is delivered to. */
  recipients: string[];
  content: Record<string, unknown>;
  /** The one downloadable attachment of the message, if any. */
  media?: MediaPayload;
  /** What the sender shows while "typing" first: `recording` before voice notes. */
  typing: 'composing' | 'recording';
}

const URL_IN_TEXT = /https?:\/\/[^\s<>"']+/i;

/** Fields every media message of the network carries. The sandbox's URL is never fetched. */
function mediaFields(media: MediaPayload, now: number): Record<string, unknown> {
  const path = `/v/t62.sandbox/${media.sha256}.enc`;
  return {
    url: `https://mmg.sandbox.invalid${path}`,
    mimetype: media.mimetype,
    fileSha256: Buffer.from(media.sha256, 'hex').toString('base64'),
    fileLength: media.data.length,
    mediaKey: randomBytes(32).toString('base64'),
    fileEncSha256: createHash('sha256').update(media.sha256).digest('base64'),
    directPath: path,
    mediaKeyTimestamp: now,
  };
}

function dimensions(media: MediaPayload): Record<string, unknown> {
  return media.width && media.height ? { width: media.width, height: media.height } : {};
}

function contextInfo(
  message: { quoted?: QuotedMessage; mentions?: string[] },
  me: string,
  chat: string,
): Record<string, unknown> | undefined {
  const info: Record<string, unknown> = {};
  if (message.quoted) {
    const quoted = message.quoted;
    info.stanzaId = quoted.key.id;
    info.participant = quoted.key.fromMe ? toJid(me) : (quoted.participant ?? quoted.key.remoteJid);
    info.quotedMessage = quoted.message;
    // Quoting a message of another chat names that chat.
    if (quoted.key.remoteJid !== chat) info.remoteJid = quoted.key.remoteJid;
  }
  if (message.mentions && message.mentions.length > 0) info.mentionedJid = message.mentions.map(toJid);
  return Object.keys(info).length > 0 ? info : undefined;
}

/** Puts contextInfo inside the content's message (where the network carries it). */
function withContext(content: Record<string, unknown>, info: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!info) return content;
  const out: Record<string, unknown> = { ...content };
  if (typeof out.conversation === 'string') {
    const text = out.conversation;
    delete out.conversation;
    out.extendedTextMessage = { text, contextInfo: info };
    return out;
  }
  const type = Object.keys(out).find((k) => k !== 'messageContextInfo');
  if (type && out[type] && typeof out[type] === 'object') {
    const inner = out[type] as Record<string, unknown>;
    const existing = (inner.contextInfo as Record<string, unknown> | undefined) ?? {};
    out[type] = { ...inner, contextInfo: { ...existing, ...info } };
  }
  return out;
}

export function nativeButton(button: MessageButton): { name: string; buttonParamsJson: string } {
  switch (button.type) {
    case 'reply':
      return { name: 'quick_reply', buttonParamsJson: JSON.stringify({ display_text: button.text, id: button.id }) };
    case 'url':
      return {
        name: 'cta_url',
        buttonParamsJson: JSON.stringify({ display_text: button.text, url: button.url, merchant_url: button.url }),
      };
    case 'call':
      return { name: 'cta_call', buttonParamsJson: JSON.stringify({ display_text: button.text, phone_number: `+${button.phoneNumber}` }) };
    case 'copy':
      return { name: 'cta_copy', buttonParamsJson: JSON.stringify({ display_text: button.text, id: button.code, copy_code: button.code }) };
  }
}

function visualMessage(mediaType: 'image' | 'video', media: MediaPayload, now: number): Record<string, unknown> {
  return mediaType === 'image'
    ? { imageMessage: { ...mediaFields(media, now), ...dimensions(media) } }
    : { videoMessage: { ...mediaFields(media, now), ...dimensions(media) } };
}

/** `#RRGGBB` as the unsigned ARGB integer the network uses (fully opaque). */
export function argb(hex: string): number {
  return (0xff000000 | parseInt(hex.slice(1), 16)) >>> 0;
}

function forwarded(original: QuotedMessage): Record<string, unknown> {
  const content: Record<string, unknown> = structuredClone(original.message);
  const type = Object.keys(content).find((k) => k !== 'messageContextInfo');
  const inner = type ? (content[type] as Record<string, unknown> | string | undefined) : undefined;
  const previous = inner && typeof inner === 'object' ? (inner.contextInfo as { forwardingScore?: number } | undefined) : undefined;
  // A forward carries no quote or mention of the original chat, only the forwarding marks.
  const info = { isForwarded: true, forwardingScore: (previous?.forwardingScore ?? 0) + 1 };
  if (type && inner && typeof inner === 'object') {
    const { contextInfo: _dropped, ...rest } = inner;
    content[type] = { ...rest, contextInfo: info };
    return content;
  }
  return withContext(content, info);
}

/** The network payload of `message` sent by the account `me`; `now` is Unix seconds. */
export function buildOutgoing(message: OutgoingMessage, me: string, now: number): BuiltMessage {
  if (message.kind === 'status_text' || message.kind === 'status_media') {
    const base = { remoteJid: STATUS_JID, recipients: message.audience, typing: 'composing' as const };
    if (message.kind === 'status_text') {
      return {
        ...base,
        content: {
          extendedTextMessage: {
            text: message.text,
            backgroundArgb: argb(message.backgroundColor),
            textArgb: 0xffffffff,
            font: STATUS_FONTS[message.font],
          },
        },
      };
    }
    const fields = {
      ...mediaFields(message.media, now),
      ...dimensions(message.media),
      ...(message.caption ? { caption: message.caption } : {}),
    };
    const type = `${message.mediaType}Message`;
    return { ...base, content: { [type]: message.mediaType === 'audio' ? { ...fields, ptt: false } : fields }, media: message.media };
  }

  const chat = isGroupJid(message.to) ? message.to : toJid(message.to);
  const base = { remoteJid: chat, recipients: [message.to] };
  const context = contextInfo(message, me, chat);
  const done = (content: Record<string, unknown>, media?: MediaPayload, typing: BuiltMessage['typing'] = 'composing'): BuiltMessage => ({
    ...base,
    content: withContext(content, context),
    ...(media ? { media } : {}),
    typing,
  });

  switch (message.kind) {
    case 'text': {
      const url = message.linkPreview ? URL_IN_TEXT.exec(message.text)?.[0] : undefined;
      if (!url) return done({ conversation: message.text });
      return done({ extendedTextMessage: { text: message.text, matchedText: url, canonicalUrl: url, previewType: 0 } });
    }
    case 'media': {
      const { media } = message;
      const fields = {
        ...mediaFields(media, now),
        ...(message.caption && message.mediaType !== 'audio' ? { caption: message.caption } : {}),
      };
      switch (message.mediaType) {
        case 'image':
          return done({ imageMessage: { ...fields, ...dimensions(media) } }, media);
        case 'video':
          return done({ videoMessage: { ...fields, gifPlayback: false } }, media);
        case 'audio':
          return done(
            { audioMessage: { ...fields, ptt: message.voiceNote === true } },
            media,
            message.voiceNote ? 'recording' : 'composing',
          );
        case 'document': {
          const fileName = media.fileName ?? 'file';
          return done({ documentMessage: { ...fields, fileName, title: fileName } }, media);
        }
      }
      break;
    }
    case 'link': {
      const preview: Record<string, unknown> = { text: message.text, matchedText: message.url, canonicalUrl: message.url, previewType: 0 };
      if (message.title) preview.title = message.title;
      if (message.description) preview.description = message.description;
      if (message.thumbnail) {
        preview.jpegThumbnail = message.thumbnail.data.toString('base64');
        if (message.thumbnail.width && message.thumbnail.height) {
          preview.thumbnailWidth = message.thumbnail.width;
          preview.thumbnailHeight = message.thumbnail.height;
        }
      }
      return done({ extendedTextMessage: preview });
    }
    case 'location': {
      const location: Record<string, unknown> = { degreesLatitude: message.latitude, degreesLongitude: message.longitude };
      if (message.name) location.name = message.name;
      if (message.address) location.address = message.address;
      if (message.url) location.url = message.url;
      return done({ locationMessage: location });
    }
    case 'contact': {
      const [first] = message.contacts;
      if (message.contacts.length === 1 && first) return done({ contactMessage: { displayName: first.displayName, vcard: first.vcard } });
      return done({
        contactsArrayMessage: {
          displayName: `${message.contacts.length} contacts`,
          contacts: message.contacts.map((c) => ({ displayName: c.displayName, vcard: c.vcard })),
        },
      });
    }
    case 'buttons': {
      const header: Record<string, unknown> = { title: message.title ?? '', hasMediaAttachment: message.header !== undefined };
      if (message.header) Object.assign(header, visualMessage(message.header.mediaType, message.header.media, now));
      const interactive: Record<string, unknown> = {
        header,
        body: { text: message.text },
        nativeFlowMessage: { buttons: message.buttons.map(nativeButton), messageParamsJson: '' },
      };
      if (message.footer) interactive.footer = { text: message.footer };
      return done({ interactiveMessage: interactive }, message.header?.media);
    }
    case 'list': {
      const list: Record<string, unknown> = {
        description: message.text,
        buttonText: message.buttonText,
        listType: 1,
        sections: message.sections.map((section) => ({
          title: section.title,
          rows: section.rows.map((row) => ({
            rowId: row.id,
            title: row.title,
            ...(row.description ? { description: row.description } : {}),
          })),
        })),
      };
      if (message.title) list.title = message.title;
      if (message.footer) list.footerText = message.footer;
      return done({ listMessage: list });
    }
    case 'poll': {
      const poll = {
        name: message.name,
        options: message.options.map((optionName) => ({ optionName })),
        selectableOptionsCount: message.selectableCount,
      };
      // The secret lets voters' clients encrypt their votes for this poll.
      return done({
        messageContextInfo: { messageSecret: randomBytes(32).toString('base64') },
        [message.selectableCount === 1 ? 'pollCreationMessageV3' : 'pollCreationMessage']: poll,
      });
    }
    case 'sticker': {
      const { media } = message;
      return done({ stickerMessage: { ...mediaFields(media, now), ...dimensions(media), isAnimated: media.animated === true } }, media);
    }
    case 'pix': {
      const cents = message.amountCents ?? 0;
      const money = (value: number) => ({ value, offset: 100 });
      const params = {
        currency: 'BRL',
        total_amount: money(cents),
        reference_id: randomBytes(6).toString('hex').toUpperCase(),
        type: 'physical-goods',
        order: {
          status: 'pending',
          subtotal: money(cents),
          order_type: 'ORDER',
          items: [
            { name: message.text ?? message.merchantName, amount: money(cents), quantity: cents > 0 ? 1 : 0, sale_amount: money(cents) },
          ],
        },
        payment_settings: [
          {
            type: 'pix_static_code',
            pix_static_code: { merchant_name: message.merchantName, key: message.key, key_type: message.keyType },
          },
        ],
        share_payment_status: false,
      };
      const interactive: Record<string, unknown> = {
        nativeFlowMessage: { buttons: [{ name: 'payment_info', buttonParamsJson: JSON.stringify(params) }], messageParamsJson: '' },
      };
      if (message.text) interactive.body = { text: message.text };
      return done({ interactiveMessage: interactive });
    }
    case 'carousel': {
      const cards = message.cards.map((card) => ({
        header: { title: '', hasMediaAttachment: true, ...visualMessage(card.mediaType, card.media, now) },
        body: { text: card.text },
        ...(card.footer ? { footer: { text: card.footer } } : {}),
        nativeFlowMessage: { buttons: card.buttons.map(nativeButton), messageParamsJson: '' },
      }));
      const interactive: Record<string, unknown> = { body: { text: message.text }, carouselMessage: { cards, messageVersion: 1 } };
      if (message.footer) interactive.footer = { text: message.footer };
      return done({ interactiveMessage: interactive });
    }
    case 'forward':
      // A forward keeps the original payload; quotes and mentions of the new message do not apply.
      return { ...base, content: forwarded(message.original), ...(message.media ? { media: message.media } : {}), typing: 'composing' };
  }
}
