/**
 * The network port: what Waygate needs from a network, in Waygate's own types. The HTTP layer and the
 * event bus know only this file; a driver (sandbox, WhatsApp) implements it and no library type
 * crosses it. Later capabilities (chats, groups, users, labels, newsletters, communities, calls) are
 * added as optional capability objects on Session, so adding one never reshapes the others.
 */
import type { CanonicalEvent, EventMedia, InstanceStatus } from './events.js';
import type { ChatOperations } from './port/chats.js';
import type { GroupOperations } from './port/groups.js';
import type { UserOperations } from './port/users.js';
import type { LabelOperations } from './port/labels.js';
import type { NewsletterOperations } from './port/newsletters.js';
import type { CommunityOperations } from './port/communities.js';
import type { CallOperations } from './port/calls.js';
import type { MessageOperations } from './port/messages.js';

export const NETWORKS = ['whatsapp', 'sandbox'] as const;
export type NetworkName = (typeof NETWORKS)[number];

export { BUTTON_TYPES, EVENT_TYPES, PIX_KEY_TYPES, STATUS_FONTS } from '../vocabulary.js';
export type { ButtonType, PixKeyType, StatusFont } from '../vocabulary.js';
import type { PixKeyType, StatusFont } from '../vocabulary.js';

/** The address form of the network: `<digits>@s.whatsapp.net` for people, `<id>@g.us` for groups. */
export const USER_SERVER = 's.whatsapp.net';

export function toJid(number: string): string {
  return `${number}@${USER_SERVER}`;
}

export function jidToNumber(jid: string): string | undefined {
  const match = /^(\d+)(?::\d+)?@s\.whatsapp\.net$/.exec(jid);
  return match?.[1];
}

export interface MessageKey {
  remoteJid: string;
  fromMe: boolean;
  id: string;
}

/** Where status (stories) posts go: recipients see them in the chat `status@broadcast`. */
export const STATUS_JID = 'status@broadcast';

/**
 * Media that the gateway fetched or decoded itself and checked: the MIME type is sniffed from the
 * bytes, the size is within the kind's limit. A caller's URL or file path never reaches a driver.
 */
export interface MediaPayload {
  data: Buffer;
  mimetype: string;
  fileName?: string;
  /** Lowercase hex SHA-256 of `data`. */
  sha256: string;
  /** Pixel size of images, stickers and thumbnails, when the gateway could read it. */
  width?: number;
  height?: number;
  /** Animated WebP stickers. */
  animated?: boolean;
}

/** A message from this instance's message store that a new message replies to. */
export interface QuotedMessage {
  key: MessageKey;
  /** The author when the quoted message came from a group or status (`<number>@s.whatsapp.net`). */
  participant?: string;
  message: Record<string, unknown>;
}

/** The fields every message sent to one chat may carry. */
export interface Addressed {
  /** The recipient: digits with country code, or a group JID (`<id>@g.us`). */
  to: string;
  quoted?: QuotedMessage;
  /** Numbers mentioned in the message (`@<number>` in the text shows them highlighted). */
  mentions?: string[];
  /** Show "typing…" (or "recording…" before a voice note) for this long, then send. */
  delayMs?: number;
}

/** A button of an interactive message: a quick reply, or an action (open URL, call, copy a code). */
export type MessageButton =
  | { type: 'reply'; id: string; text: string }
  | { type: 'url'; text: string; url: string }
  | { type: 'call'; text: string; phoneNumber: string }
  | { type: 'copy'; text: string; code: string };

export interface ListSection {
  title: string;
  rows: { id: string; title: string; description?: string }[];
}

export interface CarouselCard {
  mediaType: 'image' | 'video';
  media: MediaPayload;
  text: string;
  footer?: string;
  buttons: MessageButton[];
}

/** A contact card: the display name and the vCard 3.0 text the gateway built. */
export interface ContactCard {
  displayName: string;
  vcard: string;
}

export type SendableMediaType = 'image' | 'video' | 'audio' | 'document';

/**
 * Canonical outgoing message: a tagged union of every kind. Drivers switch over `kind`
 * exhaustively, so a new kind cannot be forgotten by one of them.
 */
export type OutgoingMessage =
  | (Addressed & { kind: 'text'; text: string; linkPreview: boolean })
  | (Addressed & { kind: 'media'; mediaType: SendableMediaType; media: MediaPayload; caption?: string; voiceNote?: boolean })
  | (Addressed & { kind: 'link'; text: string; url: string; title?: string; description?: string; thumbnail?: MediaPayload })
  | (Addressed & { kind: 'location'; latitude: number; longitude: number; name?: string; address?: string; url?: string })
  | (Addressed & { kind: 'contact'; contacts: ContactCard[] })
  | (Addressed & {
      kind: 'buttons';
      text: string;
      title?: string;
      footer?: string;
      header?: { mediaType: 'image' | 'video'; media: MediaPayload };
      buttons: MessageButton[];
    })
  | (Addressed & { kind: 'list'; title?: string; text: string; footer?: string; buttonText: string; sections: ListSection[] })
  | (Addressed & { kind: 'poll'; name: string; options: string[]; selectableCount: number })
  | (Addressed & { kind: 'sticker'; media: MediaPayload })
  | (Addressed & {
      kind: 'pix';
      merchantName: string;
      key: string;
      keyType: PixKeyType;
      /** In centavos; absent lets the payer choose the amount. */
      amountCents?: number;
      text?: string;
    })
  | (Addressed & { kind: 'carousel'; text: string; footer?: string; cards: CarouselCard[] })
  | (Addressed & {
      kind: 'forward';
      /** The stored message being forwarded, as it was sent or received. */
      original: QuotedMessage;
      /** Its media bytes, from the media store, when the message has media. */
      media?: MediaPayload;
    })
  | { kind: 'status_text'; audience: string[]; text: string; backgroundColor: string; font: StatusFont }
  | { kind: 'status_media'; audience: string[]; mediaType: 'image' | 'video' | 'audio'; media: MediaPayload; caption?: string };

export type OutgoingKind = OutgoingMessage['kind'];

/** The one downloadable attachment a sent message carries, if any (carousels carry several and none is stored). */
export function attachmentOf(message: OutgoingMessage): MediaPayload | undefined {
  switch (message.kind) {
    case 'media':
    case 'sticker':
    case 'status_media':
      return message.media;
    case 'buttons':
      return message.header?.media;
    case 'forward':
      return message.media;
    case 'text':
    case 'link':
    case 'location':
    case 'contact':
    case 'list':
    case 'poll':
    case 'pix':
    case 'carousel':
    case 'status_text':
      return undefined;
  }
}

/** The bytes of a sent attachment, handed to the message store with the SEND_MESSAGE event. */
export function eventMediaOf(media: MediaPayload): EventMedia {
  return { mimetype: media.mimetype, ...(media.fileName ? { fileName: media.fileName } : {}), load: () => Promise.resolve(media.data) };
}

export interface SentMessage {
  key: MessageKey;
  messageTimestamp: number;
  /** The message content as it went out, in the network's payload shape. */
  message: Record<string, unknown>;
  status: 'SENT' | 'PENDING';
}

export interface QrSnapshot {
  /** data:image/png;base64,... */
  qrcode: string;
  /** The text encoded in the QR. */
  code: string;
  /** Which QR of this pairing attempt this is, starting at 1. */
  attempt: number;
  expiresAt: number;
}

/** What a driver gets to talk back to Waygate about one instance. */
export interface SessionHost {
  readonly instanceId: string;
  readonly instanceName: string;
  /** Last known state from storage: lets a driver resume a connected session after restart. */
  readonly status: InstanceStatus;
  readonly number: string | null;
  /**
   * Every canonical event goes here; CONNECTION events also update the stored status. Events of one
   * instance are recorded in the order emitted; the promise resolves once this one is stored.
   */
  emit(event: CanonicalEvent): Promise<void>;
}

export interface Session {
  /** Start connecting; resolves once the attempt has started (QR shown or connected). */
  connect(): Promise<void>;
  /** The QR currently offered for scanning, if pairing is in progress. */
  currentQr(): QrSnapshot | undefined;
  /** Ask for an 8-digit pairing code that the phone with this number confirms. */
  requestPairingCode(number: string): Promise<string>;
  /** Drop the connection and connect again with the same credentials. */
  reconnect(): Promise<void>;
  /** Log out: the credentials are discarded; a new pairing is needed. */
  logout(): Promise<void>;
  /** Stop this session without logging out (shutdown, instance deletion). */
  close(): Promise<void>;
  send(message: OutgoingMessage): Promise<SentMessage>;
  // Optional capabilities (defined at the end of this file). A driver leaves out what it cannot do
  // yet; the services then answer 501 instead of failing.
  chats?: ChatOperations;
  groups?: GroupOperations;
  users?: UserOperations;
  labels?: LabelOperations;
  newsletters?: NewsletterOperations;
  communities?: CommunityOperations;
  calls?: CallOperations;
  messages?: MessageOperations;
}

export interface NetworkDriver {
  readonly network: NetworkName;
  open(host: SessionHost): Session;
  /**
   * Sessions this network reopens per second when the gateway starts (resumeAll); undefined: all
   * at once. A real network paces logins so thousands of sockets do not hit it (and this process)
   * in the same second.
   */
  readonly resumePerSecond?: number;
  /** Forget everything the network holds for an instance that is being deleted. */
  forget?(instanceId: string): Promise<void>;
  stop(): Promise<void>;
}

// ------------------------------------------------------------------------------------------------
// Capabilities beyond connecting and sending: chats, groups, users, labels, newsletters,
// communities and calls. Every address is a JID; every time is Unix seconds (as in message
// payloads). Operations throw AppError for what the network refuses (403 not an admin, 404 unknown
// group, 409 conflicting state), with the message the API shows.
// ------------------------------------------------------------------------------------------------

export const GROUP_SERVER = 'g.us';
export const NEWSLETTER_SERVER = 'newsletter';

const GROUP_JID = /^[0-9]+(-[0-9]+)?@g\.us$/;
const NEWSLETTER_JID = /^[0-9]+@newsletter$/;

// Asked of every send's address: most are a person's, refused by their ending before the pattern.
export function isGroupJid(jid: string): boolean {
  return jid.endsWith('@g.us') && GROUP_JID.test(jid);
}

export function isNewsletterJid(jid: string): boolean {
  return jid.endsWith('@newsletter') && NEWSLETTER_JID.test(jid);
}

export const GROUP_INVITE_LINK_PREFIX = 'https://chat.whatsapp.com/';
export const NEWSLETTER_INVITE_LINK_PREFIX = 'https://whatsapp.com/channel/';

/** The code of an invite given as a code or as a full invite link. */
export function inviteCodeOf(codeOrLink: string): string {
  const trimmed = codeOrLink.trim();
  for (const prefix of [GROUP_INVITE_LINK_PREFIX, NEWSLETTER_INVITE_LINK_PREFIX, 'https://www.whatsapp.com/channel/']) {
    if (trimmed.startsWith(prefix)) return trimmed.slice(prefix.length).split(/[/?#]/)[0] ?? '';
  }
  return trimmed;
}

export interface PageRequest {
  offset: number;
  limit: number;
}

export interface PageOf<T> {
  items: T[];
  total: number;
}

/** An image handed to the network (profile, group and newsletter pictures). */
export interface ImageInput {
  data: Buffer;
  mimetype: 'image/jpeg' | 'image/png';
}

/** A picture as the network serves it; `url` may be a data: URL (sandbox) or an https URL. */
export interface PictureView {
  jid: string;
  pictureId: string | null;
  url: string | null;
}

export * from './port/chats.js';
export * from './port/groups.js';
export * from './port/communities.js';
export * from './port/users.js';
export * from './port/labels.js';
export * from './port/newsletters.js';
export * from './port/calls.js';
export * from './port/messages.js';
export * from './port/message-store.js';
export * from './events.js';
