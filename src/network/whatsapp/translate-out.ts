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
import { randomBytes } from 'node:crypto';
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
import { AppError } from '../../errors.js';
import { STATUS_FONTS, STATUS_JID, type ListSection, type MediaPayload, type MessageButton, type OutgoingMessage, type PixKeyType, type QuotedMessage } from '../port.js';
import { recipientJid } from './addresses.js';
import type { StoredMessage } from './message-store.js';

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
  throw new AppError('internal', 500, 'media must reach the WhatsApp driver as bytes, never as a URL or path');
}

/** The quoted message as Baileys wants it: the key plus the protobuf rebuilt from its JSON. */
export function quotedMessage(quoted: QuotedMessage): WAMessage {
  return {
    key: { remoteJid: quoted.key.remoteJid, fromMe: quoted.key.fromMe, id: quoted.key.id, ...(quoted.participant ? { participant: quoted.participant } : {}) },
    message: proto.Message.fromObject(quoted.message),
  };
}

function commonOptions(message: { quoted?: QuotedMessage }): MiscMessageGenerationOptions {
  return message.quoted ? { quoted: quotedMessage(message.quoted) } : {};
}

function mentionJids(mentions: string[] | undefined): { mentions?: string[] } {
  return mentions && mentions.length > 0 ? { mentions: mentions.map(recipientJid) } : {};
}

function mediaContent(mediaType: 'image' | 'video' | 'audio' | 'document', media: MediaPayload, caption: string | undefined, voiceNote = false): AnyMediaMessageContent {
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

function toFlowButton(button: MessageButton): FlowButton {
  switch (button.type) {
    case 'reply':
      return { type: 'reply', text: button.text, value: button.id };
    case 'url':
      return { type: 'url', text: button.text, value: button.url };
    case 'call':
      return { type: 'call', text: button.text, value: button.phoneNumber };
    case 'copy':
      return { type: 'copy', text: button.text, value: button.code };
  }
}

/** Uploads an interactive header or card image/video and returns its media message. */
async function uploadedMedia(context: OutboundContext, mediaType: 'image' | 'video', media: MediaPayload): Promise<HeaderMedia> {
  const prepared = await prepareWAMessageMedia(mediaContent(mediaType, media, undefined), { upload: context.upload });
  return mediaType === 'image' ? { imageMessage: prepared.imageMessage ?? null } : { videoMessage: prepared.videoMessage ?? null };
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
  const relay = (jid: string, built: proto.IMessage): OutboundPlan => ({ kind: 'relay', jid, message: withContext(built, 'to' in message ? contextInfo(message) : undefined), additionalNodes: [NATIVE_FLOW_NODE] });
  switch (message.kind) {
    case 'text':
      // linkPreview: null keeps Baileys from fetching URLs found in the text; previews come with the link kind.
      return { kind: 'content', jid: recipientJid(message.to), content: { text: message.text, linkPreview: null, ...mentionJids(message.mentions) }, options: commonOptions(message) };
    case 'media':
      return {
        kind: 'content',
        jid: recipientJid(message.to),
        content: { ...mediaContent(message.mediaType, message.media, message.caption, message.voiceNote), ...(message.mediaType === 'audio' ? {} : mentionJids(message.mentions)) } as AnyMessageContent,
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
        content: { poll: { name: message.name, values: message.options, selectableCount: message.selectableCount }, ...mentionJids(message.mentions) },
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
          buttons: message.buttons.map(toFlowButton),
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
      const cards: CarouselCard[] = [];
      for (const card of message.cards) {
        cards.push({
          media: await uploadedMedia(context, card.mediaType, card.media),
          text: card.text,
          ...(card.footer !== undefined ? { footer: card.footer } : {}),
          buttons: card.buttons.map(toFlowButton),
        });
      }
      return relay(recipientJid(message.to), carouselMessage({ text: message.text, ...(message.footer !== undefined ? { footer: message.footer } : {}), cards }));
    }
    case 'status_text':
      return {
        kind: 'content',
        jid: STATUS_JID,
        content: { text: message.text, linkPreview: null },
        options: { statusJidList: message.audience.map(recipientJid), backgroundColor: message.backgroundColor, font: STATUS_FONTS[message.font], broadcast: true },
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
      throw new AppError('internal', 500, `the WhatsApp driver cannot send ${JSON.stringify(unknown)}`);
    }
  }
}

// --- interactive (native flow) messages ---

export interface FlowButton {
  /** quick_reply: a reply button; url: opens a link; call: dials a number; copy: copies a code. */
  type: 'reply' | 'url' | 'call' | 'copy';
  text: string;
  /** reply: the id sent back; url: the URL; call: the phone number; copy: the code. */
  value: string;
}

/** The node business clients add to native-flow messages; without it most phones drop the message. */
export const NATIVE_FLOW_NODE: BinaryNode = {
  tag: 'biz',
  attrs: {},
  content: [{ tag: 'interactive', attrs: { type: 'native_flow', v: '1' }, content: [{ tag: 'native_flow', attrs: { v: '9', name: 'mixed' } }] }],
};

export function flowButton(button: FlowButton): proto.Message.InteractiveMessage.NativeFlowMessage.INativeFlowButton {
  switch (button.type) {
    case 'reply':
      return { name: 'quick_reply', buttonParamsJson: JSON.stringify({ display_text: button.text, id: button.value }) };
    case 'url':
      return { name: 'cta_url', buttonParamsJson: JSON.stringify({ display_text: button.text, url: button.value, merchant_url: button.value }) };
    case 'call':
      return { name: 'cta_call', buttonParamsJson: JSON.stringify({ display_text: button.text, phone_number: button.value }) };
    case 'copy':
      return { name: 'cta_copy', buttonParamsJson: JSON.stringify({ display_text: button.text, copy_code: button.value, id: button.value }) };
  }
}

/** Wraps interactive content the way WhatsApp's business clients send it. */
export function interactiveEnvelope(interactive: proto.Message.IInteractiveMessage): proto.IMessage {
  return {
    viewOnceMessage: {
      message: {
        messageContextInfo: { deviceListMetadata: {}, deviceListMetadataVersion: 2 },
        interactiveMessage: interactive,
      },
    },
  };
}

type HeaderMedia = { imageMessage?: proto.Message.IImageMessage | null; videoMessage?: proto.Message.IVideoMessage | null };

export function buttonsMessage(input: { title?: string; text: string; footer?: string; buttons: FlowButton[]; headerMedia?: HeaderMedia }): proto.IMessage {
  const header = input.headerMedia
    ? { header: { ...(input.title ? { title: input.title } : {}), hasMediaAttachment: true, ...input.headerMedia } }
    : input.title
      ? { header: { title: input.title, hasMediaAttachment: false } }
      : {};
  return interactiveEnvelope({
    ...header,
    body: { text: input.text },
    ...(input.footer ? { footer: { text: input.footer } } : {}),
    nativeFlowMessage: { buttons: input.buttons.map(flowButton), messageParamsJson: '' },
  });
}

/** A list menu as a native-flow `single_select` button. */
export function listMessage(input: { title?: string; text: string; footer?: string; buttonText: string; sections: ListSection[] }): proto.IMessage {
  const params = {
    title: input.buttonText,
    sections: input.sections.map((section) => ({
      title: section.title,
      rows: section.rows.map((row) => ({ id: row.id, title: row.title, ...(row.description ? { description: row.description } : {}) })),
    })),
  };
  return interactiveEnvelope({
    ...(input.title ? { header: { title: input.title, hasMediaAttachment: false } } : {}),
    body: { text: input.text },
    ...(input.footer ? { footer: { text: input.footer } } : {}),
    nativeFlowMessage: { buttons: [{ name: 'single_select', buttonParamsJson: JSON.stringify(params) }], messageParamsJson: '' },
  });
}

/** A Brazilian instant-payment (pix) key as the `payment_info` native-flow button (amount in centavos; 0 lets the payer choose). */
export function pixMessage(input: { merchantName: string; key: string; keyType: PixKeyType; amountCents?: number; text?: string }): proto.IMessage {
  const amount = { value: input.amountCents ?? 0, offset: 100 };
  const params = {
    currency: 'BRL',
    total_amount: amount,
    reference_id: `WG${randomBytes(5).toString('hex').toUpperCase()}`,
    type: 'physical-goods',
    order: { status: 'pending', subtotal: amount, order_type: 'ORDER', items: [] },
    payment_settings: [{ type: 'pix_static_code', pix_static_code: { merchant_name: input.merchantName, key: input.key, key_type: input.keyType } }],
    share_payment_status: false,
  };
  return interactiveEnvelope({
    body: { text: input.text ?? '' },
    nativeFlowMessage: { buttons: [{ name: 'payment_info', buttonParamsJson: JSON.stringify(params) }], messageParamsJson: '' },
  });
}

export interface CarouselCard {
  /** The card's image or video, already uploaded (from Baileys' prepareWAMessageMedia). */
  media: HeaderMedia;
  title?: string;
  text: string;
  footer?: string;
  buttons: FlowButton[];
}

export function carouselMessage(input: { text: string; footer?: string; cards: CarouselCard[] }): proto.IMessage {
  return interactiveEnvelope({
    body: { text: input.text },
    ...(input.footer ? { footer: { text: input.footer } } : {}),
    carouselMessage: {
      messageVersion: 1,
      cards: input.cards.map((card) => ({
        header: { ...(card.title ? { title: card.title } : {}), hasMediaAttachment: true, ...card.media },
        body: { text: card.text },
        ...(card.footer ? { footer: { text: card.footer } } : {}),
        nativeFlowMessage: { buttons: card.buttons.map(flowButton), messageParamsJson: '' },
      })),
    },
  });
}

/** Interactive kinds are opt-in per instance. */
export function assertInteractiveAllowed(context: OutboundContext, kind: string): void {
  if (!context.interactiveMessages) {
    throw new AppError(
      'interactive_disabled',
      409,
      `${kind} messages are sent as raw interactive messages that WhatsApp renders inconsistently and that add ban risk; enable the instance setting interactiveMessages to use them`,
    );
  }
}
