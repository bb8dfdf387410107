/**
 * The network port: what Waygate needs from a network, in Waygate's own types. The HTTP layer and the
 * event bus know only this file; a driver (sandbox, WhatsApp) implements it and no library type
 * crosses it. Later capabilities (chats, groups, users, labels, newsletters, communities, calls) are
 * added as optional capability objects on Session, so adding one never reshapes the others.
 */

export const NETWORKS = ['whatsapp', 'sandbox'] as const;
export type NetworkName = (typeof NETWORKS)[number];

/**
 * Instance status values and their transitions:
 *   created --connect--> CONNECTING --(needs pairing)--> QRCODE --(scan/pair)--> CONNECTED
 *   CONNECTED --(connection lost)--> DISCONNECTED --(automatic reconnect)--> CONNECTING --> CONNECTED
 *   QRCODE --(QR attempts exhausted)--> DISCONNECTED
 *   any --logout (API or phone side)--> LOGGED_OUT --connect--> CONNECTING --> QRCODE ...
 */
export const INSTANCE_STATUSES = ['created', 'CONNECTING', 'QRCODE', 'CONNECTED', 'DISCONNECTED', 'LOGGED_OUT'] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];

export const EVENT_TYPES = [
  'MESSAGE',
  'SEND_MESSAGE',
  'READ_RECEIPT',
  'PRESENCE',
  'HISTORY_SYNC',
  'CHAT_PRESENCE',
  'CALL',
  'CONNECTION',
  'LABEL',
  'CONTACT',
  'GROUP',
  'NEWSLETTER',
  'QRCODE',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

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

export const BUTTON_TYPES = ['reply', 'url', 'call', 'copy'] as const;
export type ButtonType = (typeof BUTTON_TYPES)[number];

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

export const PIX_KEY_TYPES = ['CPF', 'CNPJ', 'PHONE', 'EMAIL', 'EVP'] as const;
export type PixKeyType = (typeof PIX_KEY_TYPES)[number];

/** Fonts of text status posts, with the number the network uses for each. */
export const STATUS_FONTS = {
  SYSTEM: 0,
  SYSTEM_TEXT: 1,
  FB_SCRIPT: 2,
  SYSTEM_BOLD: 6,
  MORNINGBREEZE_REGULAR: 7,
  CALISTOGA_REGULAR: 8,
  EXO2_EXTRABOLD: 9,
  COURIERPRIME_BOLD: 10,
} as const;
export type StatusFont = keyof typeof STATUS_FONTS;

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

export interface ConnectionData {
  status: InstanceStatus;
  number?: string;
  /** Why the status changed (e.g. `qr_attempts_exhausted`, `connection_lost`, `logged_out_from_phone`). */
  reason?: string;
}

export interface CanonicalEvent {
  type: EventType;
  data: Record<string, unknown>;
  /**
   * The media bytes of a MESSAGE or SEND_MESSAGE event that carries an image, video, audio,
   * document or sticker. The registry loads them once, keeps them in the media store and adds
   * `data.media` (type, size, download route); they never travel inside the event itself.
   */
  media?: EventMedia;
}

export interface EventMedia {
  mimetype: string;
  fileName?: string;
  /** Produces the plain bytes (a driver downloads and decrypts here). */
  load(): Promise<Buffer>;
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

export function isGroupJid(jid: string): boolean {
  return /^[0-9]+(-[0-9]+)?@g\.us$/.test(jid);
}

export function isNewsletterJid(jid: string): boolean {
  return /^[0-9]+@newsletter$/.test(jid);
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

// --- chats ---

export type ChatKind = 'person' | 'group' | 'newsletter';

export interface ChatMessage {
  key: MessageKey;
  /** Sender inside a group or community chat. */
  participant?: string;
  pushName?: string;
  message: Record<string, unknown>;
  messageTimestamp: number;
  /** Label ids on this message (business accounts). */
  labels: string[];
}

export interface ChatSummary {
  chatId: string;
  kind: ChatKind;
  name: string | null;
  unreadCount: number;
  markedUnread: boolean;
  pinned: boolean;
  archived: boolean;
  muted: boolean;
  /** When the mute ends; null when not muted or muted for ever. */
  mutedUntil: number | null;
  labels: string[];
  lastMessage: ChatMessage | null;
  /** Time of the last activity in the chat. */
  conversationTimestamp: number | null;
}

export interface ChatFilter {
  /** Case-insensitive text found in the chat name, its number or one of its messages. */
  query?: string;
  archived?: boolean;
  pinned?: boolean;
  unread?: boolean;
  labelId?: string;
  kind?: ChatKind;
}

export interface NumberCheck {
  number: string;
  jid: string;
  exists: boolean;
}

export interface ChatOperations {
  /** Pinned chats first, then by last activity, newest first. */
  list(filter: ChatFilter, page: PageRequest): Promise<PageOf<ChatSummary>>;
  get(chatId: string): Promise<ChatSummary>;
  setPinned(chatId: string, pinned: boolean): Promise<ChatSummary>;
  setArchived(chatId: string, archived: boolean): Promise<ChatSummary>;
  /** `until`: Unix seconds, or null for ever. */
  mute(chatId: string, until: number | null): Promise<ChatSummary>;
  unmute(chatId: string): Promise<ChatSummary>;
  markUnread(chatId: string): Promise<ChatSummary>;
  /** Marks every message of the chat read; senders get read receipts. */
  markRead(chatId: string): Promise<ChatSummary>;
  /** Removes the chat and its messages from this account. */
  delete(chatId: string): Promise<void>;
  /** Removes the messages, keeps the chat. */
  clear(chatId: string): Promise<ChatSummary>;
  /** Messages of a chat, newest first. */
  history(chatId: string, page: PageRequest): Promise<PageOf<ChatMessage>>;
  /** Asks the phone to send older messages again; they arrive as a HISTORY_SYNC event. */
  requestHistory(chatId: string, count: number): Promise<{ requested: number }>;
  checkNumbers(numbers: string[]): Promise<NumberCheck[]>;
}

// --- groups ---

export type GroupRole = 'superadmin' | 'admin' | 'member';

export interface GroupParticipant {
  jid: string;
  number: string;
  role: GroupRole;
}

export interface GroupSettings {
  /** Only admins send messages. */
  announce: boolean;
  /** Only admins edit subject, description and picture. */
  locked: boolean;
  /** New members through an invite link wait for an admin's approval. */
  joinApproval: boolean;
  /** Disappearing messages after this many seconds; 0 is off. */
  ephemeral: number;
  /** Who may add participants. */
  memberAddMode: 'admins' | 'all';
}

export interface GroupInfo extends GroupSettings {
  groupId: string;
  subject: string;
  subjectOwner: string | null;
  subjectTimestamp: number | null;
  description: string | null;
  owner: string | null;
  creation: number;
  size: number;
  participants: GroupParticipant[];
  /** The community this group is linked to. */
  communityId: string | null;
  /** True for the announcement group of a community. */
  isCommunityAnnounce: boolean;
}

export type ParticipantAction = 'add' | 'remove' | 'promote' | 'demote';

export type ParticipantOutcome =
  | 'ok'
  | 'already_participant'
  | 'not_participant'
  | 'not_on_network'
  | 'privacy_restricted'
  | 'not_allowed'
  | 'group_full'
  | 'no_request';

export interface ParticipantResult {
  number: string;
  jid: string;
  status: ParticipantOutcome;
}

export interface GroupInvitePreview {
  groupId: string;
  subject: string;
  description: string | null;
  owner: string | null;
  creation: number;
  size: number;
  joinApproval: boolean;
  isCommunity: boolean;
}

export interface JoinRequest {
  jid: string;
  number: string;
  requestedAt: number;
}

export interface GroupOperations {
  create(subject: string, participants: string[], description?: string): Promise<{ group: GroupInfo; results: ParticipantResult[] }>;
  info(groupId: string): Promise<GroupInfo>;
  /** Groups this account participates in (community announcement groups included). */
  list(page: PageRequest): Promise<PageOf<GroupInfo>>;
  updateParticipants(groupId: string, action: ParticipantAction, numbers: string[]): Promise<ParticipantResult[]>;
  picture(groupId: string): Promise<PictureView>;
  setPicture(groupId: string, image: ImageInput): Promise<PictureView>;
  removePicture(groupId: string): Promise<PictureView>;
  setSubject(groupId: string, subject: string): Promise<GroupInfo>;
  /** An empty description removes it. */
  setDescription(groupId: string, description: string): Promise<GroupInfo>;
  updateSettings(groupId: string, settings: Partial<GroupSettings>): Promise<GroupInfo>;
  inviteCode(groupId: string): Promise<string>;
  revokeInvite(groupId: string): Promise<string>;
  inviteInfo(code: string): Promise<GroupInvitePreview>;
  /** `requested` when the group needs an admin's approval. */
  join(code: string): Promise<{ groupId: string; status: 'joined' | 'requested' }>;
  leave(groupId: string): Promise<void>;
  joinRequests(groupId: string, page: PageRequest): Promise<PageOf<JoinRequest>>;
  handleJoinRequests(groupId: string, action: 'approve' | 'reject', numbers: string[]): Promise<ParticipantResult[]>;
}

// --- communities ---

export interface CommunityInfo {
  communityId: string;
  subject: string;
  description: string | null;
  owner: string | null;
  creation: number;
  /** The community's announcement group: every member is in it, only admins write. */
  announceGroupId: string;
  /** Linked groups (the announcement group not included). */
  groups: { groupId: string; subject: string }[];
  /** Members: admins plus participants of the linked groups. */
  size: number;
  role: 'admin' | 'member';
}

export interface CommunityOperations {
  create(subject: string, description?: string): Promise<CommunityInfo>;
  info(communityId: string): Promise<CommunityInfo>;
  list(page: PageRequest): Promise<PageOf<CommunityInfo>>;
  link(communityId: string, groupIds: string[]): Promise<CommunityInfo>;
  unlink(communityId: string, groupIds: string[]): Promise<CommunityInfo>;
  groups(communityId: string, page: PageRequest): Promise<PageOf<GroupInfo>>;
  /** Posts a text to the announcement group (admins only). */
  announce(communityId: string, text: string): Promise<SentMessage>;
}

// --- users ---

export interface BusinessProfile {
  description: string | null;
  category: string | null;
  email: string | null;
  website: string[];
  address: string | null;
}

export interface UserInfo {
  jid: string;
  number: string;
  /** Profile name (push name) as the user set it. */
  name: string | null;
  about: string | null;
  aboutTimestamp: number | null;
  pictureUrl: string | null;
  isBusiness: boolean;
  businessProfile: BusinessProfile | null;
  /** Whether this account blocked the user. */
  blocked: boolean;
}

export interface Contact {
  jid: string;
  number: string;
  name: string | null;
  isBusiness: boolean;
}

export type PrivacyAudience = 'all' | 'contacts' | 'contact_blacklist' | 'none';

export interface PrivacySettings {
  lastSeen: PrivacyAudience;
  online: 'all' | 'match_last_seen';
  profilePicture: PrivacyAudience;
  about: PrivacyAudience;
  groupAdd: 'all' | 'contacts' | 'contact_blacklist';
  readReceipts: 'all' | 'none';
  calls: 'all' | 'known';
}

export interface OwnProfile {
  jid: string;
  number: string;
  name: string | null;
  about: string | null;
  pictureUrl: string | null;
  isBusiness: boolean;
  businessProfile: BusinessProfile | null;
}

export interface PresenceView {
  jid: string;
  presence: 'available' | 'unavailable';
  lastSeen: number | null;
}

export interface UserOperations {
  info(number: string): Promise<UserInfo>;
  avatar(number: string): Promise<PictureView>;
  contacts(page: PageRequest): Promise<PageOf<Contact>>;
  privacy(): Promise<PrivacySettings>;
  setPrivacy(patch: Partial<PrivacySettings>): Promise<PrivacySettings>;
  block(number: string): Promise<void>;
  unblock(number: string): Promise<void>;
  blocklist(page: PageRequest): Promise<PageOf<{ jid: string; number: string }>>;
  profile(): Promise<OwnProfile>;
  setName(name: string): Promise<OwnProfile>;
  setAbout(about: string): Promise<OwnProfile>;
  setPicture(image: ImageInput): Promise<OwnProfile>;
  removePicture(): Promise<OwnProfile>;
  /** PRESENCE events of `number` follow; the current one (when visible) comes at once. */
  subscribePresence(number: string): Promise<PresenceView | null>;
  setPresence(presence: 'available' | 'unavailable'): Promise<void>;
}

// --- labels (business accounts) ---

export interface Label {
  labelId: string;
  name: string;
  /** Colour index 0..19 of the WhatsApp Business palette. */
  color: number;
}

export interface LabelTarget {
  chatId: string;
  messageId?: string;
}

export interface LabelOperations {
  list(page: PageRequest): Promise<PageOf<Label>>;
  create(name: string, color: number): Promise<Label>;
  edit(labelId: string, changes: { name?: string; color?: number }): Promise<Label>;
  delete(labelId: string): Promise<void>;
  /** Returns the label ids now on the target. */
  apply(labelId: string, target: LabelTarget): Promise<string[]>;
  remove(labelId: string, target: LabelTarget): Promise<string[]>;
}

// --- newsletters (channels) ---

export type NewsletterRole = 'owner' | 'subscriber' | 'guest';

export interface NewsletterInfo {
  newsletterId: string;
  name: string;
  description: string | null;
  inviteCode: string;
  inviteLink: string;
  pictureUrl: string | null;
  role: NewsletterRole;
  muted: boolean;
  followers: number;
  verified: boolean;
  creation: number;
}

export interface NewsletterMessage {
  key: MessageKey;
  /** The network's sequence number of the post in its newsletter. */
  serverId: number;
  message: Record<string, unknown>;
  messageTimestamp: number;
}

export interface NewsletterOperations {
  create(input: { name: string; description?: string; picture?: ImageInput }): Promise<NewsletterInfo>;
  list(page: PageRequest, role?: NewsletterRole): Promise<PageOf<NewsletterInfo>>;
  info(ref: { newsletterId: string } | { inviteCode: string }): Promise<NewsletterInfo>;
  update(newsletterId: string, changes: { name?: string; description?: string; picture?: ImageInput | null }): Promise<NewsletterInfo>;
  delete(newsletterId: string): Promise<void>;
  follow(newsletterId: string): Promise<NewsletterInfo>;
  unfollow(newsletterId: string): Promise<NewsletterInfo>;
  setMuted(newsletterId: string, muted: boolean): Promise<NewsletterInfo>;
  /** Posts, newest first. */
  messages(newsletterId: string, page: PageRequest): Promise<PageOf<NewsletterMessage>>;
  /** Posts a text (owner only); followers get it as a MESSAGE. */
  send(newsletterId: string, text: string): Promise<SentMessage & { serverId: number }>;
}

// --- calls ---

export interface CallRecord {
  callId: string;
  /** The caller. */
  from: string;
  direction: 'incoming' | 'outgoing';
  isVideo: boolean;
  isGroup: boolean;
  status: 'ringing' | 'rejected' | 'missed' | 'ended';
  /** Who rejected: this account on request, or the per-instance auto-reject policy. */
  rejectedBy: 'user' | 'auto' | null;
  offeredAt: number;
  endedAt: number | null;
}

export interface CallOperations {
  /** Rejects a ringing call; `from` helps drivers that do not keep a call log. */
  reject(callId: string, options?: { from?: string; automatic?: boolean }): Promise<CallRecord>;
  /** Newest first. */
  history(page: PageRequest): Promise<PageOf<CallRecord>>;
}

// --- messages (acting on messages already sent or received) ---

/** WhatsApp lets the author edit a message for this long after sending it. */
export const EDIT_WINDOW_SECONDS = 15 * 60;

export type ChatPresenceState = 'composing' | 'recording' | 'paused';

/** What a message payload does to an earlier message of its chat: delete it for everyone, or edit it. */
export type MessageChange = { kind: 'revoke'; targetId: string } | { kind: 'edit'; targetId: string; edited: Record<string, unknown> };

// WhatsApp's ProtocolMessage.Type numbers, for payloads that carry enums as numbers.
const PROTOCOL_REVOKE = 0;
const PROTOCOL_MESSAGE_EDIT = 14;

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
}

/**
 * The change a payload makes: `protocolMessage` REVOKE, or MESSAGE_EDIT bare (the sender's copy) or
 * inside `editedMessage.message` (as recipients get it). Undefined for every other payload.
 */
export function messageChangeOf(message: Record<string, unknown>): MessageChange | undefined {
  const wrapped = objectOf(objectOf(message.editedMessage)?.message);
  const protocol = objectOf((wrapped ?? message).protocolMessage);
  const targetId = objectOf(protocol?.key)?.id;
  if (!protocol || typeof targetId !== 'string') return undefined;
  if (protocol.type === 'REVOKE' || protocol.type === PROTOCOL_REVOKE) return { kind: 'revoke', targetId };
  const edited = objectOf(protocol.editedMessage);
  if ((protocol.type === 'MESSAGE_EDIT' || protocol.type === PROTOCOL_MESSAGE_EDIT) && edited) return { kind: 'edit', targetId, edited };
  return undefined;
}

/** A text message with the text of an edit, in the original's shape; undefined when the edit has no text. */
export function withEditedText(original: Record<string, unknown>, edited: Record<string, unknown>): Record<string, unknown> | undefined {
  const text = typeof edited.conversation === 'string' ? edited.conversation : objectOf(edited.extendedTextMessage)?.text;
  if (typeof text !== 'string') return undefined;
  const extended = objectOf(original.extendedTextMessage);
  return extended ? { ...original, extendedTextMessage: { ...extended, text } } : { ...original, conversation: text };
}

/** A message of this instance's message store that an operation acts on, as the instance sees it. */
export interface MessageTarget {
  key: MessageKey;
  /** The author, for messages of others in groups. */
  participant?: string;
  message: Record<string, unknown>;
  messageTimestamp: number;
}

/**
 * Reactions, deletions, edits, read receipts and chat presence. Each sends what a phone would
 * (the sender gets SEND_MESSAGE for reactions, deletions and edits; the chat's other side gets the
 * MESSAGE, READ_RECEIPT or CHAT_PRESENCE). The gateway found the target in its message store.
 */
export interface MessageOperations {
  /** `emoji` is one emoji; an empty string removes this account's reaction. */
  react(target: MessageTarget, emoji: string): Promise<SentMessage>;
  /** Deletes for everyone: own messages; others' only where the network allows it (group admins). */
  delete(target: MessageTarget): Promise<SentMessage>;
  /** Replaces the text of an own text message (the gateway checked kind, author and time). */
  edit(target: MessageTarget, text: string): Promise<SentMessage>;
  /** Read receipts for received messages of one chat (as the account's privacy allows). */
  markRead(chatJid: string, targets: MessageTarget[]): Promise<void>;
  /** "typing…", "recording…" or back to paused, in a chat. */
  sendPresence(chatJid: string, state: ChatPresenceState): Promise<void>;
}
