/**
 * Chats of a WhatsApp instance. Changes are app-state patches (`chatModify`: pin, archive, mute,
 * read/unread, delete, clear), which WhatsApp syncs to the phone and the other linked devices;
 * the number check is a USync contact query (`onWhatsApp`); older messages are asked of the phone
 * (`fetchMessageHistory`, a peer message) and arrive as HISTORY_SYNC. WhatsApp serves no chat list
 * on demand: the list, search and history come from what the driver kept (state-store.ts and the
 * gateway's message store).
 */
import type { proto } from 'baileys';
import { errors } from '../../errors.js';
import type { StoredMessage } from '../port.js';
import {
  isGroupJid,
  isNewsletterJid,
  jidToNumber,
  toJid,
  type ChatFilter,
  type ChatKind,
  type ChatMessage,
  type ChatOperations,
  type ChatSummary,
  type NumberCheck,
  type PageOf,
  type PageRequest,
} from '../port.js';
import { normalise } from './addresses.js';
import { wa, type WhatsAppLink } from './capabilities.js';
import type { ChatPatch, ChatRow } from './state-store.js';

/** The phone allows this many pinned chats (as the sandbox). */
export const MAX_PINNED_CHATS = 3;

function kindOf(jid: string): ChatKind {
  if (isGroupJid(jid)) return 'group';
  if (isNewsletterJid(jid)) return 'newsletter';
  return 'person';
}

export function chatMessageOf(message: StoredMessage, labels: string[]): ChatMessage {
  return {
    key: message.key,
    ...(message.participant ? { participant: message.participant } : {}),
    ...(message.pushName ? { pushName: message.pushName } : {}),
    message: message.message,
    messageTimestamp: message.messageTimestamp,
    labels,
  };
}

export class WhatsAppChats implements ChatOperations {
  constructor(private readonly link: WhatsAppLink) {}

  async list(filter: ChatFilter, page: PageRequest): Promise<PageOf<ChatSummary>> {
    // A fixed number of reads per page, none per chat: the rows (with their count, contact names
    // and own labels), their last messages, and the labels of those only for chats that have
    // labelled messages; each chat reads as `get` shows it.
    const { instanceId } = this.link;
    const { rows, total } = await this.link.state.listChats(instanceId, filter, page);
    const latest = await this.link.messages.latestOfChats(
      instanceId,
      rows.map((row) => ({ remoteJid: row.jid, ...this.since(row) })),
    );
    const labelledLast = rows.flatMap((row) => {
      const last = latest.get(row.jid);
      return row.labelled_messages && last ? [{ chatJid: row.jid, messageIds: [last.key.id] }] : [];
    });
    const messageLabels = labelledLast.length > 0 ? await this.link.state.labelsOnChats(instanceId, labelledLast) : undefined;
    const items = rows.map((row) => {
      const labels = new Map(messageLabels?.get(row.jid));
      labels.set('', row.labels);
      return this.summary(row, row.name ?? row.contact_name, latest.get(row.jid), labels);
    });
    return { items, total };
  }

  async get(chatId: string): Promise<ChatSummary> {
    return this.view(await this.existing(chatId));
  }

  async setPinned(chatId: string, pinned: boolean): Promise<ChatSummary> {
    const chat = await this.existing(chatId);
    if (pinned && chat.pinned_at === null) {
      if (chat.archived) throw errors.conflict('an archived chat cannot be pinned; unarchive it first');
      if ((await this.link.state.pinnedCount(this.link.instanceId)) >= MAX_PINNED_CHATS) {
        throw errors.conflict(`at most ${MAX_PINNED_CHATS} chats can be pinned; unpin one first`);
      }
    }
    if (pinned === (chat.pinned_at !== null)) return this.view(chat);
    await wa(() => this.link.socket().chatModify({ pin: pinned }, chat.jid));
    return this.changed(chat, { pinnedAt: pinned ? this.link.now() : null });
  }

  async setArchived(chatId: string, archived: boolean): Promise<ChatSummary> {
    const chat = await this.existing(chatId);
    const lastMessages = await this.range(chat);
    await wa(() => this.link.socket().chatModify({ archive: archived, lastMessages }, chat.jid));
    // The phone unpins what it archives.
    return this.changed(chat, archived ? { archived, pinnedAt: null } : { archived });
  }

  async mute(chatId: string, until: number | null): Promise<ChatSummary> {
    const chat = await this.existing(chatId);
    if (until !== null && until <= this.link.now()) throw errors.badRequest('the mute must end in the future');
    // WhatsApp's mute end is in milliseconds; -1 mutes for ever.
    await wa(() => this.link.socket().chatModify({ mute: until === null ? -1 : until * 1000 }, chat.jid));
    return this.changed(chat, { mutedUntil: until ?? -1 });
  }

  async unmute(chatId: string): Promise<ChatSummary> {
    const chat = await this.existing(chatId);
    await wa(() => this.link.socket().chatModify({ mute: null }, chat.jid));
    return this.changed(chat, { mutedUntil: null });
  }

  async markUnread(chatId: string): Promise<ChatSummary> {
    const chat = await this.existing(chatId);
    const lastMessages = await this.range(chat);
    await wa(() => this.link.socket().chatModify({ markRead: false, lastMessages }, chat.jid));
    return this.changed(chat, { markedUnread: true });
  }

  async markRead(chatId: string): Promise<ChatSummary> {
    const chat = await this.existing(chatId);
    const socket = this.link.socket();
    if (chat.unread_count > 0) {
      // Read receipts for the unread messages (Baileys sends `read` or, when this account turned
      // read receipts off, `read-self`); group messages need their author.
      const { items } = await this.link.messages.search(
        this.link.instanceId,
        { remoteJid: chat.jid, fromMe: false, ...this.since(chat) },
        { offset: 0, limit: Math.min(chat.unread_count, 500) },
      );
      const keys = items
        .filter((m) => !isGroupJid(chat.jid) || m.participant)
        .map((m) => ({ remoteJid: chat.jid, fromMe: false, id: m.key.id, ...(m.participant ? { participant: m.participant } : {}) }));
      if (keys.length > 0) await wa(() => socket.readMessages(keys));
    }
    const lastMessages = await this.range(chat);
    await wa(() => socket.chatModify({ markRead: true, lastMessages }, chat.jid));
    return this.changed(chat, { unreadCount: 0, markedUnread: false });
  }

  async delete(chatId: string): Promise<void> {
    const chat = await this.existing(chatId);
    const lastMessages = await this.range(chat);
    await wa(() => this.link.socket().chatModify({ delete: true, lastMessages }, chat.jid));
    await this.link.state.patchChat(this.link.instanceId, chat.jid, { clearedBefore: this.clearMark(chat, lastMessages) });
    await this.link.state.deleteChat(this.link.instanceId, chat.jid, this.link.now());
  }

  async clear(chatId: string): Promise<ChatSummary> {
    const chat = await this.existing(chatId);
    const lastMessages = await this.range(chat);
    await wa(() => this.link.socket().chatModify({ clear: true, lastMessages }, chat.jid));
    return this.changed(chat, { clearedBefore: this.clearMark(chat, lastMessages), unreadCount: 0 });
  }

  async history(chatId: string, page: PageRequest): Promise<PageOf<ChatMessage>> {
    const chat = await this.existing(chatId);
    const { items, total } = await this.link.messages.search(this.link.instanceId, { remoteJid: chat.jid, ...this.since(chat) }, page);
    const labels = await this.link.state.labelsOn(
      this.link.instanceId,
      chat.jid,
      items.map((m) => m.key.id),
    );
    return { items: items.map((m) => chatMessageOf(m, labels.get(m.key.id) ?? [])), total };
  }

  async requestHistory(chatId: string, count: number): Promise<{ requested: number }> {
    const chat = await this.existing(chatId);
    // The phone sends messages older than one it knows we have: the oldest stored one.
    const filter = { remoteJid: chat.jid };
    const { total } = await this.link.messages.search(this.link.instanceId, filter, { offset: 0, limit: 1 });
    const oldest =
      total > 0 ? (await this.link.messages.search(this.link.instanceId, filter, { offset: total - 1, limit: 1 })).items[0] : undefined;
    if (!oldest) {
      throw errors.conflict(`no message of ${chat.jid} is stored yet; WhatsApp sends older history only from a known message on`);
    }
    const key = {
      remoteJid: chat.jid,
      fromMe: oldest.key.fromMe,
      id: oldest.key.id,
      ...(oldest.participant ? { participant: oldest.participant } : {}),
    };
    await wa(() => this.link.socket().fetchMessageHistory(count, key, oldest.messageTimestamp * 1000));
    return { requested: count };
  }

  async checkNumbers(numbers: string[]): Promise<NumberCheck[]> {
    const valid = numbers.filter((n) => /^[0-9]{5,20}$/.test(n));
    const found = valid.length > 0 ? ((await wa(() => this.link.socket().onWhatsApp(...valid.map(toJid)))) ?? []) : [];
    const byNumber = new Map<string, string>();
    for (const result of found) {
      const jid = normalise(result.jid);
      const number = jidToNumber(jid);
      if (number && result.exists) byNumber.set(number, jid);
    }
    return numbers.map((number) => ({ number, jid: byNumber.get(number) ?? toJid(number), exists: byNumber.has(number) }));
  }

  /** The chat with `chatId` (a JID, as the service normalised it); 404 when the driver never saw it. */
  private async existing(chatId: string): Promise<ChatRow> {
    const jid = this.link.addresses.resolve(chatId).jid;
    const chat = await this.link.state.chat(this.link.instanceId, jid);
    if (!chat) throw errors.notFound(`chat ${jid}`);
    return chat;
  }

  private since(chat: ChatRow): { since?: number } {
    return chat.cleared_before !== null ? { since: Number(chat.cleared_before) + 1 } : {};
  }

  /**
   * The chat's latest message as the app-state patch names it (archive, read marks, delete and
   * clear apply up to it). Group messages of others need their author; without it only the time goes.
   */
  private async range(chat: ChatRow): Promise<proto.SyncActionValue.ISyncActionMessageRange> {
    const { items } = await this.link.messages.search(
      this.link.instanceId,
      { remoteJid: chat.jid, ...this.since(chat) },
      { offset: 0, limit: 1 },
    );
    const last = items[0];
    const lastMessageTimestamp =
      last?.messageTimestamp ?? (chat.conversation_timestamp !== null ? Number(chat.conversation_timestamp) : this.link.now());
    const usable = last && (!isGroupJid(chat.jid) || last.key.fromMe || last.participant);
    return {
      lastMessageTimestamp,
      messages: usable
        ? [
            {
              key: {
                remoteJid: chat.jid,
                fromMe: last.key.fromMe,
                id: last.key.id,
                ...(last.participant ? { participant: last.participant } : {}),
              },
              timestamp: lastMessageTimestamp,
            },
          ]
        : [],
    };
  }

  private clearMark(chat: ChatRow, range: proto.SyncActionValue.ISyncActionMessageRange): number {
    return Math.max(Number(range.lastMessageTimestamp ?? 0), Number(chat.conversation_timestamp ?? 0), Number(chat.cleared_before ?? 0));
  }

  private async changed(chat: ChatRow, patch: ChatPatch): Promise<ChatSummary> {
    await this.link.state.patchChat(this.link.instanceId, chat.jid, patch);
    return this.get(chat.jid);
  }

  private async view(chat: ChatRow): Promise<ChatSummary> {
    const { instanceId } = this.link;
    const { items } = await this.link.messages.search(instanceId, { remoteJid: chat.jid, ...this.since(chat) }, { offset: 0, limit: 1 });
    const last = items[0];
    const labels = await this.link.state.labelsOn(instanceId, chat.jid, last ? ['', last.key.id] : ['']);
    const name = chat.name ?? (await this.contactName(chat.jid));
    return this.summary(chat, name, last, labels);
  }

  private summary(chat: ChatRow, name: string | null, last: StoredMessage | undefined, labels: Map<string, string[]>): ChatSummary {
    const now = this.link.now();
    const mutedUntil = chat.muted_until === null ? null : Number(chat.muted_until);
    const mutedForever = mutedUntil === -1;
    const muted = mutedForever || (mutedUntil !== null && mutedUntil > now);
    return {
      chatId: chat.jid,
      kind: kindOf(chat.jid),
      name,
      unreadCount: chat.unread_count,
      markedUnread: Boolean(chat.marked_unread),
      pinned: chat.pinned_at !== null,
      archived: Boolean(chat.archived),
      muted,
      mutedUntil: muted && !mutedForever ? mutedUntil : null,
      labels: labels.get('') ?? [],
      lastMessage: last ? chatMessageOf(last, labels.get(last.key.id) ?? []) : null,
      conversationTimestamp: chat.conversation_timestamp !== null ? Number(chat.conversation_timestamp) : null,
    };
  }

  private async contactName(jid: string): Promise<string | null> {
    const contact = await this.link.state.contact(this.link.instanceId, jid);
    return contact ? (contact.name ?? contact.notify ?? contact.verified_name) : null;
  }
}
