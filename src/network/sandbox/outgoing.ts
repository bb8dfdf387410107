/**
 * How the sandbox turns a canonical outgoing message into the payload WhatsApp clients exchange,
 * in the JSON shape Baileys delivers (`imageMessage`, `locationMessage`, `pollCreationMessageV3`,
 * native-flow `interactiveMessage`s from the shared builders of network/interactive.ts, ...), so an integration tested on the sandbox meets
 * the same shapes on the real network. Media bytes travel beside the payload, not inside it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { STATUS_JID, isGroupJid, toJid, type MediaPayload, type OutgoingMessage, type QuotedMessage } from '../port.js';
import { buttonsMessage, carouselMessage, listMessage, pixMessage } from '../interactive.js';

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
  // Interactive kinds carry the context on the interactive message inside their envelope.
  const wrapped = (out.viewOnceMessage as { message?: Record<string, unknown> } | undefined)?.message;
  if (wrapped?.interactiveMessage) {
    out.viewOnceMessage = { message: withContext(wrapped, info) };
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
            // Events show protobuf enums by name, as the WhatsApp driver's do.
            font: message.font,
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
  const context = contextInfo(message, me, chat);
  // Every send passes here: one object of one shape, without spreads (docs/architecture.md).
  const built = (content: Record<string, unknown>, media?: MediaPayload, typing: BuiltMessage['typing'] = 'composing'): BuiltMessage => {
    const out: BuiltMessage = { remoteJid: chat, recipients: [message.to], content, typing };
    if (media) out.media = media;
    return out;
  };
  const done = (content: Record<string, unknown>, media?: MediaPayload, typing?: BuiltMessage['typing']): BuiltMessage =>
    built(withContext(content, context), media, typing);

  switch (message.kind) {
    case 'text': {
      const url = message.linkPreview ? URL_IN_TEXT.exec(message.text)?.[0] : undefined;
      if (!url) return done({ conversation: message.text });
      // The preview names the link only: the gateway fetches no page for it (as the WhatsApp driver).
      return done({ extendedTextMessage: { text: message.text, matchedText: url, title: url, previewType: 'NONE' } });
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
          return done({ videoMessage: fields }, media);
        case 'audio':
          return done(
            { audioMessage: { ...fields, ptt: message.voiceNote === true } },
            media,
            message.voiceNote ? 'recording' : 'composing',
          );
        case 'document': {
          return done({ documentMessage: { ...fields, fileName: media.fileName ?? 'file' } }, media);
        }
      }
      break;
    }
    case 'link': {
      const text = message.text.includes(message.url) ? message.text : `${message.text}\n${message.url}`;
      const preview: Record<string, unknown> = { text, matchedText: message.url, title: message.title ?? message.url, previewType: 'NONE' };
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
    case 'buttons':
      return done(
        buttonsMessage({
          ...(message.title !== undefined ? { title: message.title } : {}),
          text: message.text,
          ...(message.footer !== undefined ? { footer: message.footer } : {}),
          buttons: message.buttons,
          ...(message.header ? { headerMedia: visualMessage(message.header.mediaType, message.header.media, now) } : {}),
        }),
        message.header?.media,
      );
    case 'list':
      return done(
        listMessage({
          ...(message.title !== undefined ? { title: message.title } : {}),
          text: message.text,
          ...(message.footer !== undefined ? { footer: message.footer } : {}),
          buttonText: message.buttonText,
          sections: message.sections,
        }),
      );
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
    case 'pix':
      return done(
        pixMessage({
          merchantName: message.merchantName,
          key: message.key,
          keyType: message.keyType,
          ...(message.amountCents !== undefined ? { amountCents: message.amountCents } : {}),
          ...(message.text !== undefined ? { text: message.text } : {}),
        }),
      );
    case 'carousel':
      return done(
        carouselMessage({
          text: message.text,
          ...(message.footer !== undefined ? { footer: message.footer } : {}),
          cards: message.cards.map((card) => ({
            media: visualMessage(card.mediaType, card.media, now),
            text: card.text,
            ...(card.footer !== undefined ? { footer: card.footer } : {}),
            buttons: card.buttons,
          })),
        }),
      );
    case 'forward':
      // A forward keeps the original payload; quotes and mentions of the new message do not apply.
      return built(forwarded(message.original), message.media);
  }
}
