/** Port capability: Chats of an instance: list, history, archive, pin, mute, read marks, number checks. */
import type { MessageKey, PageOf, PageRequest } from '../port.js';

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
