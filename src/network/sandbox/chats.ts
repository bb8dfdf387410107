/** Chats of one sandbox account: list, search, pin, archive, mute, unread, delete, clear, history. */
import { errors } from '../../errors.js';
import {
  jidToNumber,
  toJid,
  type ChatFilter,
  type ChatMessage,
  type ChatOperations,
  type ChatSummary,
  type NumberCheck,
  type PageOf,
  type PageRequest,
  type EventData,
} from '../port.js';
import { chatKindOf, type ChatState, type SandboxWorld } from './world.js';
import { chatJidOf } from '../addressing.js';
import { pageOf } from '../paging.js';

/** The phone allows this many pinned chats. */
export const MAX_PINNED_CHATS = 3;

/**
 * Bounds of the initial history a phone sends to a newly linked device: the most recently active
 * chats, each with its latest messages, in parts of at most `messagesPerEvent` messages and
 * `chatsPerEvent` chats (a chat and its messages never span two parts).
 */
export const INITIAL_HISTORY = { chats: 500, messagesPerChat: 100, messagesPerEvent: 200, chatsPerEvent: 100 } as const;

export type InitialHistoryLimits = { [K in keyof typeof INITIAL_HISTORY]: number };

/** One chat of the initial history, as the HISTORY_SYNC event lists it, with its messages oldest first. */
export interface HistoryChat {
  id: string;
  name: string | null;
  unreadCount: number;
  conversationTimestamp: number;
  archived: boolean;
  messages: ChatMessage[];
}

/**
 * The HISTORY_SYNC `INITIAL_BOOTSTRAP` parts of `chats` (most recently active first): each part
 * carries whole chats and their messages, `part`/`parts`, and a `progress` that ends at 100. No
 * chats, no parts.
 */
export function initialHistoryParts(chats: HistoryChat[], limits: InitialHistoryLimits = INITIAL_HISTORY): EventData<'HISTORY_SYNC'>[] {
  const groups: HistoryChat[][] = [];
  let current: HistoryChat[] = [];
  let messages = 0;
  for (const full of chats.slice(0, limits.chats)) {
    const chat = { ...full, messages: full.messages.slice(-Math.min(limits.messagesPerChat, limits.messagesPerEvent)) };
    if (current.length > 0 && (current.length >= limits.chatsPerEvent || messages + chat.messages.length > limits.messagesPerEvent)) {
      groups.push(current);
      current = [];
      messages = 0;
    }
    current.push(chat);
    messages += chat.messages.length;
  }
  if (current.length > 0) groups.push(current);
  return groups.map((group, index) => ({
    syncType: 'INITIAL_BOOTSTRAP',
    progress: Math.round((100 * (index + 1)) / groups.length),
    isLatest: true,
    part: index + 1,
    parts: groups.length,
    chats: group.map(({ messages: _messages, ...chat }) => chat),
    contacts: group.filter((chat) => chatKindOf(chat.id) === 'person').map((chat) => ({ id: chat.id, name: chat.name })),
    messages: group.flatMap((chat) => chat.messages),
  }));
}

/** The readable text of a message payload, if it has one. */
export function textOf(message: Record<string, unknown>): string | undefined {
  if (typeof message.conversation === 'string') return message.conversation;
  for (const kind of ['extendedTextMessage', 'imageMessage', 'videoMessage', 'documentMessage']) {
    const part = message[kind] as { text?: unknown; caption?: unknown } | undefined;
    if (typeof part?.text === 'string') return part.text;
    if (typeof part?.caption === 'string') return part.caption;
  }
  return undefined;
}

export class SandboxChats implements ChatOperations {
  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {}

  async list(filter: ChatFilter, page: PageRequest): Promise<PageOf<ChatSummary>> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const now = this.world.now();
    const query = filter.query?.toLowerCase();
    let chats = [...this.world.chatsOf(owner).values()].filter((chat) => {
      if (filter.kind !== undefined && chat.kind !== filter.kind) return false;
      if (filter.archived !== undefined && chat.archived !== filter.archived) return false;
      if (filter.pinned !== undefined && (chat.pinnedAt !== null) !== filter.pinned) return false;
      if (filter.unread !== undefined && (chat.unreadCount > 0 || chat.markedUnread) !== filter.unread) return false;
      if (filter.labelId !== undefined && !chat.labels.includes(filter.labelId)) return false;
      return true;
    });
    if (query !== undefined) {
      const matching = await Promise.all(chats.map((chat) => this.matches(chat, query)));
      chats = chats.filter((_chat, i) => matching[i]);
    }
    chats.sort((a, b) => {
      if ((a.pinnedAt !== null) !== (b.pinnedAt !== null)) return a.pinnedAt !== null ? -1 : 1;
      if (a.pinnedAt !== null && b.pinnedAt !== null && a.pinnedAt !== b.pinnedAt) return b.pinnedAt - a.pinnedAt;
      return (b.conversationTimestamp ?? 0) - (a.conversationTimestamp ?? 0);
    });
    const { items, total } = pageOf(chats, page);
    return { items: items.map((chat) => this.view(chat, now)), total };
  }

  async get(chatId: string): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    return this.view(this.existing(chatId), this.world.now());
  }

  async setPinned(chatId: string, pinned: boolean): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    if (pinned && chat.pinnedAt === null) {
      if (chat.archived) throw errors.conflict('an archived chat cannot be pinned; unarchive it first');
      const count = [...this.world.chatsOf(owner).values()].filter((c) => c.pinnedAt !== null).length;
      if (count >= MAX_PINNED_CHATS) throw errors.conflict(`at most ${MAX_PINNED_CHATS} chats can be pinned; unpin one first`);
      chat.pinnedAt = this.world.now();
    } else if (!pinned) {
      chat.pinnedAt = null;
    }
    await this.world.saveChats(owner);
    return this.view(chat, this.world.now());
  }

  async setArchived(chatId: string, archived: boolean): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    chat.archived = archived;
    // The phone unpins what it archives.
    if (archived) chat.pinnedAt = null;
    await this.world.saveChats(owner);
    return this.view(chat, this.world.now());
  }

  async mute(chatId: string, until: number | null): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    const now = this.world.now();
    if (until !== null && until <= now) throw errors.badRequest('the mute must end in the future');
    chat.mutedUntil = until ?? -1;
    await this.world.saveChats(owner);
    return this.view(chat, now);
  }

  async unmute(chatId: string): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    chat.mutedUntil = null;
    await this.world.saveChats(owner);
    return this.view(chat, this.world.now());
  }

  async markUnread(chatId: string): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    chat.markedUnread = true;
    await this.world.saveChats(owner);
    return this.view(chat, this.world.now());
  }

  async markRead(chatId: string): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    let incoming = chat.messages.filter((m) => !m.key.fromMe);
    // More unread messages than memory holds: the older ones are in the message store.
    if (chat.trimmed && chat.unreadCount > incoming.length) {
      const stored = await this.world.storedMessages(owner, chat, { offset: 0, limit: chat.unreadCount }, { fromMe: false });
      if (stored) incoming = stored.items.reverse();
    }
    const toAcknowledge = chat.unreadCount > 0 ? incoming.slice(-chat.unreadCount) : [];
    const wasMarked = chat.markedUnread;
    chat.unreadCount = 0;
    chat.markedUnread = false;
    // Kept, so a restart does not count what was read here as unread again.
    const newest = chat.messages.at(-1)?.key.id;
    const moved = newest !== undefined && newest !== chat.readThrough;
    if (moved) chat.readThrough = newest;
    if (wasMarked || moved) await this.world.saveChats(owner);
    // Read receipts go to the senders unless this account turned them off (as on the phone).
    if (this.world.account(owner).privacy.readReceipts === 'all') {
      const readTimestamp = this.world.now();
      for (const message of toAcknowledge) {
        const sender = jidToNumber(message.participant ?? message.key.remoteJid);
        if (!sender) continue;
        const data: EventData<'READ_RECEIPT'> = {
          key: { remoteJid: chat.kind === 'person' ? toJid(owner) : chat.jid, fromMe: true, id: message.key.id },
          receipt: 'read',
          readTimestamp,
        };
        if (chat.kind !== 'person') data.participant = toJid(owner);
        await this.world.emitTo(sender, { type: 'READ_RECEIPT', data });
      }
    }
    return this.view(chat, this.world.now());
  }

  async delete(chatId: string): Promise<void> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    await this.world.deleteChat(owner, chat.jid);
  }

  async clear(chatId: string): Promise<ChatSummary> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    chat.messages = [];
    chat.trimmed = false;
    chat.clearedAt = this.world.now();
    chat.messageLabels = {};
    chat.unreadCount = 0;
    await this.world.saveChats(owner);
    return this.view(chat, this.world.now());
  }

  async history(chatId: string, page: PageRequest): Promise<PageOf<ChatMessage>> {
    await this.world.hydrate(this.me());
    const chat = this.existing(chatId);
    // A chat that outgrew what is kept in memory is read from the message store, which has all of it.
    const stored = chat.trimmed ? await this.world.storedMessages(this.me(), chat, page) : undefined;
    const { items, total } = stored ?? pageOf([...chat.messages].reverse(), page);
    return { items: items.map((m) => this.messageView(chat, m)), total };
  }

  async requestHistory(chatId: string, count: number): Promise<{ requested: number }> {
    await this.world.hydrate(this.me());
    const owner = this.me();
    const chat = this.existing(chatId);
    // The sandbox phone keeps every message of the chat (the older ones in the message store), so it
    // sends the latest `count` again.
    const stored =
      chat.trimmed && count > chat.messages.length ? await this.world.storedMessages(owner, chat, { offset: 0, limit: count }) : undefined;
    const latest = stored ? stored.items.reverse() : chat.messages.slice(-count);
    const messages = latest.map((m) => this.messageView(chat, m));
    await this.world.emitTo(owner, {
      type: 'HISTORY_SYNC',
      data: { syncType: 'ON_DEMAND', chatId: chat.jid, messages, progress: 100 },
    });
    return { requested: messages.length };
  }

  /**
   * What the phone sends a device it links to: the account's chats, most recently active first,
   * with their latest messages, as HISTORY_SYNC `INITIAL_BOOTSTRAP` parts (none when it has no chats).
   */
  async initialHistory(limits: InitialHistoryLimits = INITIAL_HISTORY): Promise<EventData<'HISTORY_SYNC'>[]> {
    await this.world.hydrate(this.me());
    const chats = [...this.world.chatsOf(this.me()).values()]
      .sort((a, b) => (b.conversationTimestamp ?? 0) - (a.conversationTimestamp ?? 0))
      .map((chat) => ({
        id: chat.jid,
        name: this.nameOf(chat),
        unreadCount: chat.unreadCount,
        conversationTimestamp: chat.conversationTimestamp ?? 0,
        archived: chat.archived,
        messages: chat.messages.slice(-limits.messagesPerChat).map((m) => this.messageView(chat, m)),
      }));
    await this.world.keepSynced(
      this.me(),
      chats.slice(0, limits.chats).flatMap((chat) => chat.messages),
    );
    return initialHistoryParts(chats, limits);
  }

  async checkNumbers(numbers: string[]): Promise<NumberCheck[]> {
    return numbers.map((number) => ({ number, jid: toJid(number), exists: this.world.isOnNetwork(number) }));
  }

  /** The chat with `chatId`; a group or newsletter chat appears once the account is in it. 404 otherwise. */
  existing(chatId: string): ChatState {
    const owner = this.me();
    const jid = chatJidOf(chatId);
    const found = this.world.chatsOf(owner).get(jid);
    if (found) return found;
    const group = this.world.groups.get(jid);
    if (group?.participants.some((p) => p.number === owner)) return this.world.chat(owner, jid);
    const newsletter = this.world.newsletters.get(jid);
    if (newsletter && (newsletter.owner === owner || newsletter.followers.some((f) => f.number === owner))) {
      return this.world.chat(owner, jid);
    }
    throw errors.notFound(`chat ${jid}`);
  }

  messageView(chat: ChatState, message: ChatMessage): ChatMessage {
    return { ...message, labels: chat.messageLabels[message.key.id] ?? [] };
  }

  private view(chat: ChatState, now: number): ChatSummary {
    const mutedForever = chat.mutedUntil === -1;
    const muted = mutedForever || (chat.mutedUntil !== null && chat.mutedUntil > now);
    const last = chat.messages.at(-1);
    return {
      chatId: chat.jid,
      kind: chat.kind,
      name: this.nameOf(chat),
      unreadCount: chat.unreadCount,
      markedUnread: chat.markedUnread,
      pinned: chat.pinnedAt !== null,
      archived: chat.archived,
      muted,
      mutedUntil: muted && !mutedForever ? chat.mutedUntil : null,
      labels: [...chat.labels],
      lastMessage: last ? this.messageView(chat, last) : null,
      conversationTimestamp: chat.conversationTimestamp,
    };
  }

  private nameOf(chat: ChatState): string | null {
    switch (chat.kind) {
      case 'person': {
        const number = jidToNumber(chat.jid);
        return number ? this.world.displayName(number) : null;
      }
      case 'group':
        return this.world.groups.get(chat.jid)?.subject ?? this.world.communities.get(chat.jid)?.subject ?? null;
      case 'newsletter':
        return this.world.newsletters.get(chat.jid)?.name ?? null;
    }
  }

  private async matches(chat: ChatState, query: string): Promise<boolean> {
    if (chat.jid.toLowerCase().includes(query)) return true;
    if (this.nameOf(chat)?.toLowerCase().includes(query)) return true;
    if (chat.messages.some((m) => textOf(m.message)?.toLowerCase().includes(query) ?? false)) return true;
    // Older messages of a long chat are in the message store.
    if (!chat.trimmed) return false;
    return ((await this.world.storedMessages(this.me(), chat, { offset: 0, limit: 1 }, { text: query }))?.total ?? 0) > 0;
  }
}
