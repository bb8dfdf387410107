/**
 * Canonical outgoing messages -> what Baileys sends. Two roads:
 *   - `content`: Baileys' own AnyMessageContent through `sendMessage` (text, media, location,
 *     contacts, polls, stickers, forwards, status posts);
 *   - `relay`: a raw protobuf Message through `relayMessage` with extra nodes, for the interactive
 *     kinds Baileys no longer builds (buttons, lists, carousels, pix). These go as native-flow
 *     `interactiveMessage`s wrapped in `viewOnceMessage`, with the `<biz><interactive
 *     type="native_flow">` node business clients send. WhatsApp renders them inconsistently (some
 *     phones and WhatsApp Web show nothing or "update WhatsApp") and unofficial interactive messages
 *     add ban risk, so they are refused unless the instance enabled `interactiveMessages`.
 *
 * Never hands Baileys a URL or a path: its media `{ url }` would fetch any URL and read any local file.
 * Media arrive here as bytes (or a stream) that the gateway fetched and checked; link previews come
 * from the caller, and plain text carries `linkPreview: null` so Baileys fetches nothing.
 */
import { Readable } from 'node:stream';
import {
  prepareWAMessageMedia,
  proto,
  type AnyMediaMessageContent,
  type AnyMessageContent,
  type BinaryNode,
  type MiscMessageGenerationOptions,
  type WAMediaUpload,
  type WAMediaUploadFunction,
  type WAMessage,
} from 'baileys';
import { errors } from '../../errors.js';
import {
  buttonsMessage,
  carouselMessage,
  listMessage,
  pixMessage,
  type CarouselCardContent,
  type HeaderMedia,
  type Json,
} from '../interactive.js';
import { STATUS_FONTS, STATUS_JID, type MediaPayload, type OutgoingMessage, type QuotedMessage } from '../port.js';
import { recipientJid } from './addresses.js';
import type { StoredMessage } from './message-store.js';

const URL_IN_TEXT = /https?:\/\/[^\s<>"']+/i;

export type OutboundPlan =
  | { kind: 'content'; jid: string; content: AnyMessageContent; options: MiscMessageGenerationOptions }
  | { kind: 'relay'; jid: string; message: proto.IMessage; additionalNodes: BinaryNode[] };

export interface OutboundContext {
  /** The instance enabled raw interactive messages. */
  interactiveMessages: boolean;
  findMessage(id: string): Promise<StoredMessage | undefined>;
  /** Baileys' media upload of this socket (interactive headers and carousel cards are uploaded before relaying). */
  upload: WAMediaUploadFunction;
}

/** Media bytes only: a Buffer or a stream. Anything else (a URL string, `{ url }`) is refused. */
export function mediaBytes(data: unknown): WAMediaUpload {
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data);
  if (data instanceof Readable) return { stream: data };
  throw errors.internal('media must reach the WhatsApp driver as bytes, never as a URL or path');
}

/** The quoted message as Baileys wants it: the key plus the protobuf rebuilt from its JSON. */
export function quotedMessage(quoted: QuotedMessage): WAMessage {
  return {
    key: {
      remoteJid: quoted.key.remoteJid,
      fromMe: quoted.key.fromMe,
      id: quoted.key.id,
      ...(quoted.participant ? { participant: quoted.participant } : {}),
    },
    message: proto.Message.fromObject(quoted.message),
  };
}

function commonOptions(message: { quoted?: QuotedMessage }): MiscMessageGenerationOptions {
  return message.quoted ? { quoted: quotedMessage(message.quoted) } : {};
}

function mentionJids(mentions: string[] | undefined): { mentions?: string[] } {
  return mentions && mentions.length > 0 ? { mentions: mentions.map(recipientJid) } : {};
}

function mediaContent(
  mediaType: 'image' | 'video' | 'audio' | 'document',
  media: MediaPayload,
  caption: string | undefined,
  voiceNote = false,
): AnyMediaMessageContent {
  const data = mediaBytes(media.data);
  switch (mediaType) {
    case 'image':
      return { image: data, mimetype: media.mimetype, ...(caption ? { caption } : {}) };
    case 'video':
      return { video: data, mimetype: media.mimetype, ...(caption ? { caption } : {}) };
    case 'audio':
      return { audio: data, mimetype: media.mimetype, ptt: voiceNote };
    case 'document':
      return { document: data, mimetype: media.mimetype, fileName: media.fileName ?? 'file', ...(caption ? { caption } : {}) };
  }
}

/** Uploads an interactive header or card image/video and returns its media message. */
async function uploadedMedia(context: OutboundContext, mediaType: 'image' | 'video', media: MediaPayload): Promise<HeaderMedia> {
  const prepared = await prepareWAMessageMedia(mediaContent(mediaType, media, undefined), { upload: context.upload });
  return mediaType === 'image' ? { imageMessage: prepared.imageMessage } : { videoMessage: prepared.videoMessage };
}

function contextInfo(message: { quoted?: QuotedMessage; mentions?: string[] }): proto.IContextInfo | undefined {
  const mentioned = mentionJids(message.mentions).mentions;
  if (!message.quoted && !mentioned) return undefined;
  return {
    ...(mentioned ? { mentionedJid: mentioned } : {}),
    ...(message.quoted
      ? {
          stanzaId: message.quoted.key.id,
          participant: message.quoted.participant ?? (message.quoted.key.fromMe ? undefined : message.quoted.key.remoteJid),
          quotedMessage: proto.Message.fromObject(message.quoted.message),
        }
      : {}),
  };
}

/** Adds reply/mention context to the interactive message inside the envelope. */
function withContext(envelope: proto.IMessage, info: proto.IContextInfo | undefined): proto.IMessage {
  const interactive = envelope.viewOnceMessage?.message?.interactiveMessage;
  if (info && interactive) interactive.contextInfo = info;
  return envelope;
}

export async function planOutgoing(message: OutgoingMessage, context: OutboundContext): Promise<OutboundPlan> {
  // The shared builders give plain JSON in the protobuf's own field names.
  const relay = (jid: string, json: Json): OutboundPlan => {
    const built = json as proto.IMessage;
    return {
      kind: 'relay',
      jid,
      message: withContext(built, 'to' in message ? contextInfo(message) : undefined),
      additionalNodes: [NATIVE_FLOW_NODE],
    };
  };
  switch (message.kind) {
    case 'text': {
      // Baileys never fetches a URL of ours: with linkPreview on, the preview names the first link
      // (no page is fetched; titles and images come with the link kind); off, linkPreview: null.
      const url = message.linkPreview ? URL_IN_TEXT.exec(message.text)?.[0] : undefined;
      const linkPreview = url ? { 'canonical-url': url, 'matched-text': url, title: url } : null;
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: { text: message.text, linkPreview, ...mentionJids(message.mentions) },
        options: commonOptions(message),
      };
    }
    case 'media':
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: {
          ...mediaContent(message.mediaType, message.media, message.caption, message.voiceNote),
          ...(message.mediaType === 'audio' ? {} : mentionJids(message.mentions)),
        } as AnyMessageContent,
        options: commonOptions(message),
      };
    case 'link': {
      const text = message.text.includes(message.url) ? message.text : `${message.text}\n${message.url}`;
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: {
          text,
          linkPreview: {
            'canonical-url': message.url,
            'matched-text': message.url,
            title: message.title ?? message.url,
            ...(message.description ? { description: message.description } : {}),
            ...(message.thumbnail ? { jpegThumbnail: message.thumbnail.data } : {}),
          },
          ...mentionJids(message.mentions),
        },
        options: commonOptions(message),
      };
    }
    case 'location':
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: {
          location: {
            degreesLatitude: message.latitude,
            degreesLongitude: message.longitude,
            ...(message.name ? { name: message.name } : {}),
            ...(message.address ? { address: message.address } : {}),
            ...(message.url ? { url: message.url } : {}),
          },
        },
        options: commonOptions(message),
      };
    case 'contact': {
      const [first] = message.contacts;
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: {
          contacts: {
            displayName: message.contacts.length === 1 && first ? first.displayName : `${message.contacts.length} contacts`,
            contacts: message.contacts.map((card) => ({ displayName: card.displayName, vcard: card.vcard })),
          },
        },
        options: commonOptions(message),
      };
    }
    case 'poll':
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: {
          poll: { name: message.name, values: message.options, selectableCount: message.selectableCount },
          ...mentionJids(message.mentions),
        },
        options: commonOptions(message),
      };
    case 'sticker':
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: { sticker: mediaBytes(message.media.data), mimetype: 'image/webp', isAnimated: Boolean(message.media.animated) },
        options: commonOptions(message),
      };
    case 'forward': {
      const stored = await context.findMessage(message.original.key.id);
      const forward: WAMessage = stored
        ? { key: stored.key, message: stored.message, messageTimestamp: stored.messageTimestamp }
        : { key: quotedMessage(message.original).key, message: proto.Message.fromObject(message.original.message) };
      return { kind: 'content', jid: recipientJid(message.to), content: { forward }, options: {} };
    }
    case 'buttons': {
      assertInteractiveAllowed(context, 'button');
      const header = message.header ? await uploadedMedia(context, message.header.mediaType, message.header.media) : undefined;
      return relay(
        recipientJid(message.to),
        buttonsMessage({
          ...(message.title !== undefined ? { title: message.title } : {}),
          text: message.text,
          ...(message.footer !== undefined ? { footer: message.footer } : {}),
          buttons: message.buttons,
          ...(header ? { headerMedia: header } : {}),
        }),
      );
    }
    case 'list':
      assertInteractiveAllowed(context, 'list');
      return relay(
        recipientJid(message.to),
        listMessage({
          ...(message.title !== undefined ? { title: message.title } : {}),
          text: message.text,
          ...(message.footer !== undefined ? { footer: message.footer } : {}),
          buttonText: message.buttonText,
          sections: message.sections,
        }),
      );
    case 'pix':
      assertInteractiveAllowed(context, 'pix');
      return relay(
        recipientJid(message.to),
        pixMessage({
          merchantName: message.merchantName,
          key: message.key,
          keyType: message.keyType,
          ...(message.amountCents !== undefined ? { amountCents: message.amountCents } : {}),
          ...(message.text !== undefined ? { text: message.text } : {}),
        }),
      );
    case 'carousel': {
      assertInteractiveAllowed(context, 'carousel');
      const cards: CarouselCardContent[] = [];
      for (const card of message.cards) {
        cards.push({
          media: await uploadedMedia(context, card.mediaType, card.media),
          text: card.text,
          ...(card.footer !== undefined ? { footer: card.footer } : {}),
          buttons: card.buttons,
        });
      }
      return relay(
        recipientJid(message.to),
        carouselMessage({ text: message.text, ...(message.footer !== undefined ? { footer: message.footer } : {}), cards }),
      );
    }
    case 'status_text':
      return {
        kind: 'content',
        jid: STATUS_JID,
        content: { text: message.text, linkPreview: null },
        options: {
          statusJidList: message.audience.map(recipientJid),
          backgroundColor: message.backgroundColor,
          font: STATUS_FONTS[message.font],
          broadcast: true,
        },
      };
    case 'status_media':
      return {
        kind: 'content',
        jid: STATUS_JID,
        content: mediaContent(message.mediaType, message.media, message.caption) as AnyMessageContent,
        options: { statusJidList: message.audience.map(recipientJid), broadcast: true },
      };
    default: {
      const unknown: never = message;
      throw errors.internal(`the WhatsApp driver cannot send ${JSON.stringify(unknown)}`);
    }
  }
}

// --- interactive (native flow) messages ---

/** The node business clients add to native-flow messages; without it most phones drop the message. */
export const NATIVE_FLOW_NODE: BinaryNode = {
  tag: 'biz',
  attrs: {},
  content: [
    { tag: 'interactive', attrs: { type: 'native_flow', v: '1' }, content: [{ tag: 'native_flow', attrs: { v: '9', name: 'mixed' } }] },
  ],
};

/** Interactive kinds are opt-in per instance. */
export function assertInteractiveAllowed(context: OutboundContext, kind: string): void {
  if (!context.interactiveMessages) {
    throw errors.interactiveDisabled(kind);
  }
}
