/**
 * The sandbox's social world: accounts (profiles, privacy, blocks, business, labels), each account's
 * chats and call log, groups, communities and newsletters. SandboxNetwork links numbers to sessions
 * and carries messages; this class holds everything the chats/groups/users/... capabilities act on.
 *
 * The world sees every event a sandbox session emits (the driver wraps each session's host with
 * `observe`), so chats and call logs follow what was really sent and received. It reaches other
 * instances through their hosts, never through sinks.
 *
 * Persistence: accounts, groups, communities, newsletters, chat settings (pin/archive/mute/labels,
 * when a chat was cleared or deleted, the newest message an explicit read reached) and call logs are
 * documents in `sandbox_world`. Chat messages and unread counts live in memory, because they change
 * on every message and the message store owns messages: after a restart an account's chats are
 * filled again from the store the first time they are used (`hydrate`), leaving out what was cleared
 * or deleted, and their unread counts are counted again from the messages and the read marker. Like
 * a phone that keeps recent messages at hand and older ones on disk, a chat holds its latest
 * `LIMITS.messagesPerChat` messages in memory; a chat that had more (`trimmed`) reads its history
 * from the store (`storedMessages`). In cluster mode the documents are shared between the gateway
 * processes (`share`).
 */
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { messageChangeOf, withEditedText, type MessageChange } from '../payloads.js';
import {
  isGroupJid,
  isNewsletterJid,
  jidToNumber,
  toJid,
  type BusinessProfile,
  type CallRecord,
  type CanonicalEvent,
  type ChatKind,
  type ChatMessage,
  type GroupRole,
  type GroupSettings,
  type ImageInput,
  type Label,
  type PrivacyAudience,
  type PrivacySettings,
  type SessionHost,
} from '../port.js';
import { carriesUpdate } from '../message-kinds.js';
import type { SandboxNetwork } from './network.js';
import type { Topic } from '../../topic.js';
import type { WorldDocument, WorldDocumentKind, WorldStore } from './world-store.js';

/**
 * Messages kept in memory per chat (older ones are read from the message store), chats kept per
 * account, calls kept per account (oldest go first). 100 messages per chat: what the initial history
 * sends (INITIAL_HISTORY.messagesPerChat), and 20 accounts of 20 busy chats hold ~10 MB instead of ~100.
 */
export const LIMITS = { messagesPerChat: 100, chatsPerAccount: 5000, callsPerAccount: 500, postsPerNewsletter: 1000 } as const;

export interface StoredPicture {
  pictureId: string;
  mimetype: string;
  base64: string;
}

export interface AccountState {
  number: string;
  /** Profile name set by the account; null falls back to the network's name for the number. */
  pushName: string | null;
  about: string | null;
  aboutTimestamp: number | null;
  picture: StoredPicture | null;
  business: BusinessProfile | null;
  privacy: PrivacySettings;
  /** Numbers this account blocked. */
  blocked: string[];
  labels: Label[];
  nextLabelId: number;
}

export interface ChatState {
  jid: string;
  /** Unix seconds of the last clear: older messages are not the chat's any more. */
  clearedAt?: number;
  kind: ChatKind;
  pinnedAt: number | null;
  archived: boolean;
  /** Unix seconds; -1 for ever; null not muted. */
  mutedUntil: number | null;
  markedUnread: boolean;
  labels: string[];
  messageLabels: Record<string, string[]>;
  conversationTimestamp: number | null;
  /**
   * The newest message an explicit read reached (POST /chat/mark-read, /message/read). Writing in
   * the chat reads it too, without being stored: the read-back after a restart counts the incoming
   * messages after whichever is later (`unreadAfter`).
   */
  readThrough?: string;
  // In memory only:
  unreadCount: number;
  /** The latest messages, oldest first (at most LIMITS.messagesPerChat). */
  messages: ChatMessage[];
  /** Older messages than `messages` were dropped from memory: the message store has the whole chat. */
  trimmed?: boolean;
}

export interface GroupState extends GroupSettings {
  groupId: string;
  subject: string;
  subjectOwner: string | null;
  subjectTimestamp: number | null;
  description: string | null;
  owner: string | null;
  creation: number;
  participants: { number: string; role: GroupRole }[];
  inviteCode: string;
  picture: StoredPicture | null;
  requests: { number: string; requestedAt: number }[];
  communityId: string | null;
  isCommunityAnnounce: boolean;
}

export interface CommunityState {
  communityId: string;
  subject: string;
  description: string | null;
  owner: string | null;
  creation: number;
  admins: string[];
  announceGroupId: string;
  groupIds: string[];
}

export interface NewsletterState {
  newsletterId: string;
  name: string;
  description: string | null;
  picture: StoredPicture | null;
  inviteCode: string;
  owner: string;
  creation: number;
  followers: { number: string; muted: boolean; since: number }[];
  posts: { id: string; serverId: number; text: string; timestamp: number }[];
  nextServerId: number;
}

export interface PresenceState {
  presence: 'available' | 'unavailable';
  lastSeen: number | null;
}

export const DEFAULT_PRIVACY: PrivacySettings = {
  lastSeen: 'all',
  online: 'all',
  profilePicture: 'all',
  about: 'all',
  groupAdd: 'all',
  readReceipts: 'all',
  calls: 'all',
};

const STATUS_BROADCAST = 'status@broadcast';

export function randomDigits(count: number): string {
  let out = '';
  while (out.length < count) out += String(randomInt(0, 1_000_000_000)).padStart(9, '0');
  return out.slice(0, count);
}

export function newInviteCode(): string {
  return randomBytes(16).toString('base64url').replace(/[-_]/g, 'x').slice(0, 22);
}

export function pictureUrl(picture: StoredPicture | null): string | null {
  return picture ? `data:${picture.mimetype};base64,${picture.base64}` : null;
}

export function storePicture(image: ImageInput): StoredPicture {
  return { pictureId: randomDigits(16), mimetype: image.mimetype, base64: image.data.toString('base64') };
}

export function chatKindOf(jid: string): ChatKind {
  if (isGroupJid(jid)) return 'group';
  if (isNewsletterJid(jid)) return 'newsletter';
  return 'person';
}

/** A stored message as the world reads it back after a restart. */
export interface StoredChatMessage {
  key: ChatMessage['key'];
  participant?: string;
  pushName?: string;
  message: Record<string, unknown>;
  messageTimestamp: number;
}

/** The gateway's message store (only what the world needs of it). */
export interface StoredHistory {
  /**
   * The instance's messages, newest first; when asked, of one chat, with one id, in one direction,
   * containing a text (case-insensitive), from a time (Unix seconds) on.
   */
  search(
    instanceId: string,
    filter: { remoteJid?: string; messageId?: string; fromMe?: boolean; text?: string; since?: number },
    page: { offset: number; limit: number },
  ): Promise<{ items: StoredChatMessage[]; total: number }>;
  /** Adds a message to the instance's store unless it holds one with that id already (which stays as it is). */
  add(instanceId: string, message: StoredChatMessage): Promise<void>;
}

/** Messages added to the store at a time when a history sync is kept. */
const KEEP_BATCH = 500;

/** The newest messages of an account read back from the store after a restart. */
const HYDRATE_MESSAGES = 5000;

/** What a chat keeps in the chats document; messages and the unread count stay in memory. */
type ChatSettings = Omit<ChatState, 'unreadCount' | 'messages' | 'trimmed'>;

/** A chat's settings before anyone changed them. */
function noSettings() {
  return {
    pinnedAt: null,
    archived: false,
    mutedUntil: null,
    markedUnread: false,
    labels: [] as string[],
    messageLabels: {} as Record<string, string[]>,
    clearedAt: undefined,
    readThrough: undefined,
  };
}

/**
 * Incoming messages after the chat's last read (oldest first): after the newest message sent from
 * this account (writing in a chat reads it) or the explicit read marker, whichever is later. A
 * marker older than every message given leaves them all after it.
 */
function unreadAfter(messages: ChatMessage[], readThrough: string | undefined): number {
  let readUpTo = -1;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    if (messages[i]!.key.fromMe || messages[i]!.key.id === readThrough) {
      readUpTo = i;
      break;
    }
  }
  let unread = 0;
  for (let i = readUpTo + 1; i < messages.length; i += 1) if (!messages[i]!.key.fromMe) unread += 1;
  return unread;
}

export class SandboxWorld {
  readonly accounts = new Map<string, AccountState>();
  readonly groups = new Map<string, GroupState>();
  readonly communities = new Map<string, CommunityState>();
  readonly newsletters = new Map<string, NewsletterState>();
  private readonly chats = new Map<string, Map<string, ChatState>>();
  /** owner -> chat JID -> Unix seconds when the chat was deleted (its older messages stay gone). */
  private readonly deletedChats = new Map<string, Map<string, number>>();
  private history: StoredHistory | undefined;
  /** owner -> the one read of its chats' messages from the store since start. */
  private readonly hydrations = new Map<string, Promise<void>>();
  /** Cluster mode (`share`): tells the other processes a document changed. */
  private announce: ((kind: WorldDocumentKind, id: string) => void) | undefined;
  private readonly calls = new Map<string, CallRecord[]>();
  private readonly presence = new Map<string, PresenceState>();
  /** target number -> numbers subscribed to its presence. */
  private readonly presenceSubscribers = new Map<string, Set<string>>();
  /** Numbers seen on the network (message senders) without an account document. */
  private readonly seen = new Set<string>();
  /** instanceId -> the observed host of its session, and the number it is linked to. */
  private readonly hosts = new Map<string, { host: SessionHost; number: string | null }>();

  constructor(
    readonly network: SandboxNetwork,
    private readonly store: WorldStore,
  ) {
    // Events other gateway processes emit to numbers linked here (SandboxNetwork.span).
    network.attachEventReceiver((number, event) => this.emitHere(number, event));
  }

  now(): number {
    return Math.floor(this.network.clock.now() / 1000);
  }

  async load(): Promise<void> {
    for (const doc of await this.store.loadAll()) this.apply(doc);
  }

  /**
   * Cluster mode: the world's documents are shared with the other gateway processes. What this
   * process stores is announced on `topic`; what another process announces is read again from the
   * database and replaces the copy here (a chat's messages and unread count, kept in memory, stay).
   */
  share(topic: Topic, log: { warn(details: object, message: string): void }): void {
    const origin = randomUUID();
    this.announce = (kind, id) => topic.publish(`${origin}\n${kind}\n${id}`);
    topic.subscribe((payload) => {
      const [from, kind, id] = payload.split('\n') as [string, WorldDocumentKind, string];
      if (from === origin || !id) return;
      void this.store
        .load(kind, id)
        .then((doc) => (doc ? this.apply(doc) : this.forget(kind, id)))
        .catch((error: unknown) => log.warn({ err: error, kind, id }, 'could not read a sandbox document another process changed'));
    });
  }

  private async persist(kind: WorldDocumentKind, id: string, body: unknown): Promise<void> {
    await this.store.save(kind, id, body);
    this.announce?.(kind, id);
  }

  private apply(doc: WorldDocument): void {
    switch (doc.kind) {
      case 'account': {
        const account = doc.body as AccountState;
        this.accounts.set(doc.id, { ...account, privacy: { ...DEFAULT_PRIVACY, ...account.privacy } });
        // The network names a contact's messages by its profile name (pushName).
        if (account.pushName) this.network.setName(doc.id, account.pushName);
        break;
      }
      case 'group':
        this.groups.set(doc.id, doc.body as GroupState);
        break;
      case 'community':
        this.communities.set(doc.id, doc.body as CommunityState);
        break;
      case 'newsletter':
        this.newsletters.set(doc.id, doc.body as NewsletterState);
        break;
      case 'chats': {
        const body = doc.body as { chats: ChatSettings[]; deleted?: Record<string, number> };
        const chats = this.chatsOf(doc.id);
        const saved = new Map(body.chats.map((chat) => [chat.jid, chat]));
        const deleted = new Map(Object.entries(body.deleted ?? {}));
        for (const [jid, chat] of chats) {
          // Deleted since its last message here: gone. Not in the document: no settings any more.
          if ((deleted.get(jid) ?? -1) >= (chat.conversationTimestamp ?? 0) && !saved.has(jid)) chats.delete(jid);
          else if (!saved.has(jid)) Object.assign(chat, noSettings());
        }
        for (const settings of saved.values()) {
          const chat = chats.get(settings.jid);
          if (chat) Object.assign(chat, noSettings(), settings);
          else chats.set(settings.jid, { ...settings, unreadCount: 0, messages: [] });
        }
        this.deletedChats.set(doc.id, deleted);
        break;
      }
      case 'calls':
        this.calls.set(doc.id, (doc.body as { calls: CallRecord[] }).calls);
        break;
    }
  }

  /** A document another process removed (only newsletters are ever removed). */
  private forget(kind: WorldDocumentKind, id: string): void {
    if (kind === 'newsletter') this.newsletters.delete(id);
  }

  // --- sessions and events ---

  /**
   * Wraps a sandbox session's host: the world records chats, calls and the linked number from what
   * the session emits, then passes the event on unchanged.
   */
  observe(host: SessionHost): SessionHost {
    const entry = { host: undefined as unknown as SessionHost, number: host.number };
    const observed: SessionHost = {
      instanceId: host.instanceId,
      instanceName: host.instanceName,
      status: host.status,
      number: host.number,
      emit: (event) => {
        this.see(entry, event);
        return host.emit(event);
      },
    };
    entry.host = observed;
    this.hosts.set(host.instanceId, entry);
    return observed;
  }

  forgetInstance(instanceId: string): void {
    this.hosts.delete(instanceId);
  }

  /** Emits an event to the connected sandbox instance linked to `number`, if any. */
  async emitTo(number: string, event: CanonicalEvent): Promise<void> {
    const session = this.network.sessionOf(number);
    if (!session || !session.isConnected()) {
      // In cluster mode the number may be linked in another gateway process.
      if (this.network.spanned) await this.network.spanEvent(number, event);
      return;
    }
    const entry = this.hosts.get(session.instanceId);
    if (entry) await entry.host.emit(event);
  }

  /** emitTo for an event from another process: only to a session of this process. */
  private async emitHere(number: string, event: CanonicalEvent): Promise<void> {
    const session = this.network.sessionOf(number);
    if (!session || !session.isConnected()) return;
    const entry = this.hosts.get(session.instanceId);
    if (entry) await entry.host.emit(event);
  }

  async emitToAll(numbers: Iterable<string>, event: CanonicalEvent): Promise<void> {
    await Promise.all([...new Set(numbers)].map((number) => this.emitTo(number, event)));
  }

  private see(entry: { number: string | null }, event: CanonicalEvent): void {
    switch (event.type) {
      case 'CONNECTION': {
        const { status, number } = event.data;
        if (status === 'CONNECTED' && number !== undefined) {
          entry.number = number;
          // Cluster mode: the other processes learn the number is on the network from its account
          // document (it is announced, and loaded at their next start).
          if (this.announce) this.saveAccount(this.account(number)).catch(() => undefined);
        }
        if (status === 'LOGGED_OUT') entry.number = null;
        return;
      }
      case 'MESSAGE':
      case 'SEND_MESSAGE': {
        if (entry.number === null) return;
        const data = event.data;
        const { key } = data;
        // A failed send (SEND_MESSAGE status FAILED) carries no content.
        const content = data.message;
        if (!content) return;
        // A deletion or an edit changes the message in this account's chat, as the phone shows it.
        const change = messageChangeOf(content);
        if (change) return this.changeMessage(entry.number, key.remoteJid, change);
        if (carriesUpdate(content)) return;
        // Status posts are stories, not a chat.
        if (key.remoteJid === STATUS_BROADCAST) return;
        const participant = typeof data.participant === 'string' ? data.participant : undefined;
        const message: ChatMessage = {
          key: { remoteJid: key.remoteJid, fromMe: key.fromMe, id: key.id },
          ...(participant ? { participant } : {}),
          ...(typeof data.pushName === 'string' ? { pushName: data.pushName } : {}),
          message: content,
          messageTimestamp: typeof data.messageTimestamp === 'number' ? data.messageTimestamp : this.now(),
          labels: [],
        };
        this.recordMessage(entry.number, message, event.type === 'MESSAGE');
        return;
      }
      case 'CALL':
        if (entry.number !== null) this.recordCall(entry.number, event.data);
        return;
      // The rest changes nothing the world keeps from events.
      case 'READ_RECEIPT':
      case 'PRESENCE':
      case 'HISTORY_SYNC':
      case 'CHAT_PRESENCE':
      case 'LABEL':
      case 'CONTACT':
      case 'GROUP':
      case 'NEWSLETTER':
      case 'QRCODE':
        return;
    }
  }

  // --- accounts ---

  findAccount(number: string): AccountState | undefined {
    return this.accounts.get(number);
  }

  /** The account of `number`, created with defaults (in memory until saved) when missing. */
  account(number: string): AccountState {
    let account = this.accounts.get(number);
    if (!account) {
      account = {
        number,
        pushName: null,
        about: null,
        aboutTimestamp: null,
        picture: null,
        business: null,
        privacy: { ...DEFAULT_PRIVACY },
        blocked: [],
        labels: [],
        nextLabelId: 1,
      };
      this.accounts.set(number, account);
    }
    return account;
  }

  saveAccount(account: AccountState): Promise<void> {
    return this.persist('account', account.number, account);
  }

  /** On the sandbox network: linked to an instance now, given an account, named, or seen sending. */
  isOnNetwork(number: string): boolean {
    return (
      this.accounts.has(number) ||
      this.network.sessionOf(number) !== undefined ||
      this.network.nameOf(number) !== number ||
      this.seen.has(number)
    );
  }

  /** The number behind a sandbox LID (`<id>@lid`), when it belongs to a number on the network. */
  numberOfLid(lid: string): string | undefined {
    const candidates = [...this.accounts.keys(), ...this.seen, ...this.network.knownNumbers()];
    return candidates.find((number) => sandboxLidOf(number) === lid);
  }

  displayName(number: string): string {
    return this.accounts.get(number)?.pushName ?? this.network.nameOf(number);
  }

  hasBlocked(owner: string, other: string): boolean {
    return this.accounts.get(owner)?.blocked.includes(other) ?? false;
  }

  /** In the sandbox, an account's contacts are the people it has a person chat with. */
  isContact(owner: string, other: string): boolean {
    return this.chats.get(owner)?.has(toJid(other)) ?? false;
  }

  contactsOf(owner: string): string[] {
    const out: string[] = [];
    for (const chat of this.chats.get(owner)?.values() ?? []) {
      if (chat.kind !== 'person') continue;
      const number = jidToNumber(chat.jid);
      if (number) out.push(number);
    }
    return out;
  }

  /** Whether `viewer` may see what `owner` shares with `audience` (blocked viewers see nothing). */
  allows(owner: string, viewer: string, audience: PrivacyAudience | 'known'): boolean {
    if (owner === viewer) return true;
    if (this.hasBlocked(owner, viewer)) return false;
    switch (audience) {
      case 'all':
        return true;
      case 'none':
        return false;
      case 'contacts':
      case 'contact_blacklist':
      case 'known':
        return this.isContact(owner, viewer);
    }
  }

  /** Accounts that should hear about a change of `number`'s profile: those with a chat with it. */
  watchersOf(number: string): string[] {
    const jid = toJid(number);
    const out: string[] = [];
    for (const [owner, chats] of this.chats) if (owner !== number && chats.has(jid)) out.push(owner);
    return out;
  }

  // --- presence ---

  presenceOf(number: string): PresenceState | undefined {
    return this.presence.get(number);
  }

  setPresence(number: string, state: PresenceState): string[] {
    this.presence.set(number, state);
    return [...(this.presenceSubscribers.get(number) ?? [])];
  }

  subscribePresence(subscriber: string, target: string): void {
    let set = this.presenceSubscribers.get(target);
    if (!set) this.presenceSubscribers.set(target, (set = new Set()));
    set.add(subscriber);
  }

  // --- chats ---

  chatsOf(number: string): Map<string, ChatState> {
    let chats = this.chats.get(number);
    if (!chats) this.chats.set(number, (chats = new Map()));
    return chats;
  }

  /** The chat of `owner` with `jid`, created empty when missing. */
  chat(owner: string, jid: string): ChatState {
    const chats = this.chatsOf(owner);
    let chat = chats.get(jid);
    if (!chat) {
      chat = { jid, kind: chatKindOf(jid), ...noSettings(), conversationTimestamp: null, unreadCount: 0, messages: [] };
      chats.set(jid, chat);
      if (chats.size > LIMITS.chatsPerAccount) this.evictChats(chats, jid);
    }
    return chat;
  }

  /** Persists the settings of the chats that have any (messages stay in memory), and the deletions. */
  saveChats(owner: string): Promise<void> {
    const chats = [...this.chatsOf(owner).values()]
      .filter(
        (c) =>
          c.pinnedAt !== null ||
          c.archived ||
          c.mutedUntil !== null ||
          c.markedUnread ||
          c.labels.length > 0 ||
          Object.keys(c.messageLabels).length > 0 ||
          c.clearedAt !== undefined ||
          c.readThrough !== undefined,
      )
      .map(({ unreadCount: _unread, messages: _messages, trimmed: _trimmed, ...settings }) => settings);
    return this.persist('chats', owner, { chats, deleted: Object.fromEntries(this.deletedChats.get(owner) ?? []) });
  }

  /** Deletes a chat of `owner`: it comes back with its next message, without the older ones. */
  async deleteChat(owner: string, jid: string): Promise<void> {
    this.chatsOf(owner).delete(jid);
    let deleted = this.deletedChats.get(owner);
    if (!deleted) this.deletedChats.set(owner, (deleted = new Map()));
    deleted.set(jid, this.now());
    await this.saveChats(owner);
  }

  /** Where chat messages are read back from after a restart (the gateway's message store). */
  useHistory(history: StoredHistory): void {
    this.history = history;
  }

  /**
   * Fills the chats of `owner` with the messages the store kept (once per start, before the first
   * use of its chats), leaving out what was cleared or deleted. Messages seen since the start stay.
   */
  hydrate(owner: string): Promise<void> {
    const instanceId = this.network.sessionOf(owner)?.instanceId;
    if (!this.history || !instanceId) return Promise.resolve();
    let hydration = this.hydrations.get(owner);
    if (!hydration) {
      hydration = this.readBack(owner, instanceId, this.history);
      // A failed read is tried again at the next use rather than remembered.
      hydration.catch(() => this.hydrations.delete(owner));
      this.hydrations.set(owner, hydration);
    }
    return hydration;
  }

  /**
   * Keeps the messages a history sync brings in the message store of the instance now linked to
   * `owner` (as the WhatsApp driver keeps a real sync): found by /message/find and read back after a
   * restart. Messages the store already holds (the same instance linked again) are left as they are.
   */
  async keepSynced(owner: string, messages: ChatMessage[]): Promise<void> {
    const instanceId = this.network.sessionOf(owner)?.instanceId;
    const history = this.history;
    if (!history || !instanceId) return;
    // A message deleted for everyone has no content left to keep.
    const kept = messages.filter((m) => Object.keys(m.message).length > 0);
    for (let i = 0; i < kept.length; i += KEEP_BATCH) {
      await Promise.all(kept.slice(i, i + KEEP_BATCH).map(({ labels: _labels, ...message }) => history.add(instanceId, message)));
    }
  }

  /**
   * A page of the chat's messages (newest first) from the message store of the instance linked to
   * `owner`, leaving out what the chat's clear or deletion removed; undefined when there is no store
   * or no linked instance (then the messages in memory are all there is).
   */
  async storedMessages(
    owner: string,
    chat: ChatState,
    page: { offset: number; limit: number },
    only: { messageId?: string; fromMe?: boolean; text?: string } = {},
  ): Promise<{ items: ChatMessage[]; total: number } | undefined> {
    const instanceId = this.network.sessionOf(owner)?.instanceId;
    if (!this.history || !instanceId) return undefined;
    const gone = Math.max(this.deletedChats.get(owner)?.get(chat.jid) ?? -1, chat.clearedAt ?? -1);
    const { items, total } = await this.history.search(
      instanceId,
      { remoteJid: chat.jid, ...(gone >= 0 ? { since: gone + 1 } : {}), ...only },
      page,
    );
    return {
      items: items.map((stored) => ({
        key: { remoteJid: chat.jid, fromMe: stored.key.fromMe, id: stored.key.id },
        ...(stored.participant ? { participant: stored.participant } : {}),
        ...(stored.pushName ? { pushName: stored.pushName } : {}),
        message: stored.message,
        messageTimestamp: stored.messageTimestamp,
        labels: [],
      })),
      total,
    };
  }

  /** Whether `chat` of `owner` has the message `messageId`: in memory, or in the store when the chat was trimmed. */
  async hasMessage(owner: string, chat: ChatState, messageId: string): Promise<boolean> {
    if (chat.messages.some((m) => m.key.id === messageId)) return true;
    if (!chat.trimmed) return false;
    return ((await this.storedMessages(owner, chat, { offset: 0, limit: 1 }, { messageId }))?.total ?? 0) > 0;
  }

  private async readBack(owner: string, instanceId: string, history: StoredHistory): Promise<void> {
    const { items } = await history.search(instanceId, {}, { offset: 0, limit: HYDRATE_MESSAGES });
    const deleted = this.deletedChats.get(owner);
    const byChat = new Map<string, ChatMessage[]>();
    for (const stored of items) {
      const jid = stored.key.remoteJid;
      if (jid === STATUS_BROADCAST || carriesUpdate(stored.message)) continue;
      const gone = Math.max(deleted?.get(jid) ?? -1, this.chatsOf(owner).get(jid)?.clearedAt ?? -1);
      if (stored.messageTimestamp <= gone) continue;
      let list = byChat.get(jid);
      if (!list) byChat.set(jid, (list = []));
      list.push({
        key: { remoteJid: jid, fromMe: stored.key.fromMe, id: stored.key.id },
        ...(stored.participant ? { participant: stored.participant } : {}),
        ...(stored.pushName ? { pushName: stored.pushName } : {}),
        message: stored.message,
        messageTimestamp: stored.messageTimestamp,
        labels: [],
      });
    }
    // Groups and newsletters the account is in are its chats even without stored messages.
    const keep = (jid: string) => {
      if (!deleted?.has(jid)) this.chat(owner, jid);
    };
    for (const group of this.groups.values()) if (group.participants.some((p) => p.number === owner)) keep(group.groupId);
    for (const newsletter of this.newsletters.values()) {
      if (newsletter.owner === owner || newsletter.followers.some((f) => f.number === owner)) keep(newsletter.newsletterId);
    }
    for (const [jid, newestFirst] of byChat) {
      const chat = this.chat(owner, jid);
      const seen = new Set(chat.messages.map((m) => m.key.id));
      const older = newestFirst.filter((m) => !seen.has(m.key.id)).reverse();
      const all = [...older, ...chat.messages];
      chat.unreadCount = unreadAfter(all, chat.readThrough);
      // The read stops at HYDRATE_MESSAGES: a chat may have older messages than it brought.
      if (all.length > LIMITS.messagesPerChat || items.length >= HYDRATE_MESSAGES) chat.trimmed = true;
      chat.messages = all.slice(-LIMITS.messagesPerChat);
      chat.conversationTimestamp = Math.max(chat.conversationTimestamp ?? 0, chat.messages.at(-1)?.messageTimestamp ?? 0);
    }
  }

  private recordMessage(owner: string, message: ChatMessage, incoming: boolean): void {
    const chat = this.chat(owner, message.key.remoteJid);
    chat.messages.push(message);
    if (chat.messages.length > LIMITS.messagesPerChat) {
      // One over the limit after a push: `shift` makes no array of what it drops (a third of splice's time).
      while (chat.messages.length > LIMITS.messagesPerChat) chat.messages.shift();
      chat.trimmed = true;
    }
    chat.conversationTimestamp = Math.max(chat.conversationTimestamp ?? 0, message.messageTimestamp);
    if (incoming) {
      chat.unreadCount += 1;
      // A new message brings an archived chat back only when it is not muted (as the phone does).
      if (chat.archived && chat.mutedUntil === null) chat.archived = false;
      if (chat.kind === 'person') {
        const sender = jidToNumber(message.key.remoteJid);
        if (sender) this.seen.add(sender);
      }
    } else {
      // Writing in a chat reads it.
      chat.unreadCount = 0;
      chat.markedUnread = false;
    }
  }

  private changeMessage(owner: string, chatJid: string, change: MessageChange): void {
    const chat = this.chats.get(owner)?.get(chatJid);
    const index = chat?.messages.findIndex((m) => m.key.id === change.targetId) ?? -1;
    const message = chat?.messages[index];
    if (!chat || !message) return;
    const content = change.kind === 'revoke' ? {} : (withEditedText(message.message, change.edited) ?? message.message);
    chat.messages[index] = { ...message, message: content };
  }

  /** Drops the least recently active tenth of the chats that carry no settings (never `keep`). */
  private evictChats(chats: Map<string, ChatState>, keep: string): void {
    const plain = [...chats.values()]
      .filter((c) => c.jid !== keep && c.pinnedAt === null && !c.archived && c.mutedUntil === null && c.labels.length === 0)
      .sort((a, b) => (a.conversationTimestamp ?? 0) - (b.conversationTimestamp ?? 0));
    for (const chat of plain.slice(0, Math.ceil(LIMITS.chatsPerAccount / 10))) chats.delete(chat.jid);
  }

  // --- calls ---

  callsOf(number: string): CallRecord[] {
    let calls = this.calls.get(number);
    if (!calls) this.calls.set(number, (calls = []));
    return calls;
  }

  saveCalls(number: string): Promise<void> {
    return this.persist('calls', number, { calls: this.callsOf(number) });
  }

  private recordCall(owner: string, data: Record<string, unknown>): void {
    const callId = typeof data.id === 'string' ? data.id : undefined;
    if (!callId) return;
    const calls = this.callsOf(owner);
    const timestamp = typeof data.timestamp === 'number' ? data.timestamp : this.now();
    const existing = calls.find((call) => call.callId === callId);
    switch (data.status) {
      case 'offer':
        if (existing) return;
        calls.push({
          callId,
          from: String(data.from),
          direction: 'incoming',
          isVideo: data.isVideo === true,
          isGroup: data.isGroup === true,
          status: 'ringing',
          rejectedBy: null,
          offeredAt: timestamp,
          endedAt: null,
        });
        if (calls.length > LIMITS.callsPerAccount) calls.splice(0, calls.length - LIMITS.callsPerAccount);
        break;
      case 'reject':
        if (!existing) return;
        existing.status = 'rejected';
        existing.rejectedBy = data.reason === 'auto_reject' ? 'auto' : 'user';
        existing.endedAt = timestamp;
        break;
      case 'timeout':
        if (!existing || existing.status !== 'ringing') return;
        existing.status = 'missed';
        existing.endedAt = timestamp;
        break;
      case 'terminate':
        if (!existing || existing.status !== 'ringing') return;
        existing.status = 'ended';
        existing.endedAt = timestamp;
        break;
      default:
        return;
    }
    // Call logs are small and change rarely; a failed write is retried by the next change.
    this.saveCalls(owner).catch(() => undefined);
  }

  // --- groups, communities, newsletters ---

  saveGroup(group: GroupState): Promise<void> {
    return this.persist('group', group.groupId, group);
  }

  saveCommunity(community: CommunityState): Promise<void> {
    return this.persist('community', community.communityId, community);
  }

  saveNewsletter(newsletter: NewsletterState): Promise<void> {
    return this.persist('newsletter', newsletter.newsletterId, newsletter);
  }

  async removeNewsletter(newsletterId: string): Promise<void> {
    this.newsletters.delete(newsletterId);
    await this.store.remove('newsletter', newsletterId);
    this.announce?.('newsletter', newsletterId);
  }

  newGroupId(): string {
    let id: string;
    do id = `120363${randomDigits(12)}@g.us`;
    while (this.groups.has(id) || this.communities.has(id));
    return id;
  }

  newNewsletterId(): string {
    let id: string;
    do id = `120363${randomDigits(12)}@newsletter`;
    while (this.newsletters.has(id));
    return id;
  }
}

/**
 * A sandbox person's LID: a stable 15-digit id derived from the number, so the phone <-> LID pair
 * can be resolved as on WhatsApp (where LIDs are random and learnt from the network).
 */
export function sandboxLidOf(number: string): string {
  const digest = createHash('sha256').update(`sandbox-lid:${number}`).digest();
  return `${(digest.readBigUInt64BE(0) % 900_000_000_000_000n) + 100_000_000_000_000n}@lid`;
}
