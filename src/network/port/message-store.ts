/**
 * Port: what a driver may read and write of the gateway's message store (src/message-store/store.ts
 * implements it; gateway.ts hands it to the drivers). Drivers never build the store themselves.
 */
import type { MessageKey, PageRequest } from '../port.js';

export interface StoredMedia {
  /** Key in the media store. */
  key: string;
  mimetype: string;
  size: number;
  fileName?: string;
  sha256: string;
}

/** A message an instance sent or received, as the message store keeps it. */
export interface StoredMessage {
  instanceId: string;
  key: MessageKey;
  participant?: string;
  pushName?: string;
  messageType: string;
  message: Record<string, unknown>;
  messageTimestamp: number;
  media?: StoredMedia;
  createdAt: number;
}

/** Keys of a message payload that wrap the content rather than being it. */
const WRAPPERS = new Set(['messageContextInfo']);

/** The content's kind: its first key that is not context, e.g. `conversation`, `imageMessage`. */
export function messageTypeOf(message: Record<string, unknown>): string {
  return Object.keys(message).find((key) => !WRAPPERS.has(key)) ?? 'unknown';
}

/** Filters of GET /message/find; every one optional, all combined. */
export interface MessageFilter {
  remoteJid?: string;
  messageId?: string;
  fromMe?: boolean;
  /** Case-insensitive text inside the message's text or caption. */
  text?: string;
  /** Unix seconds, inclusive. */
  since?: number;
  until?: number;
}

/** Lookup of a stored message by id (polls, retries and forwards of messages older than a driver's memory). */
export interface MessageLookup {
  find(instanceId: string, messageId: string): Promise<StoredMessage | undefined>;
}

/** Chat history: a driver reads it and adds the messages a history sync brings. */
export interface ChatMessages extends MessageLookup {
  save(message: StoredMessage): Promise<void>;
  search(instanceId: string, filter: MessageFilter, page: PageRequest): Promise<{ items: StoredMessage[]; total: number }>;
  /**
   * The newest message of each chat (poll votes not included), at or after its `since` (Unix
   * seconds) when given: what `search` with `{ remoteJid, since }` and a limit of 1 answers, for a
   * whole page of chats in one read. Chats without such a message are absent from the map.
   */
  latestOfChats(instanceId: string, chats: { remoteJid: string; since?: number }[]): Promise<Map<string, StoredMessage>>;
}
