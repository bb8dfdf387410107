/** Port capability: Acting on messages already sent or received: react, delete, edit, read, presence. */
import type { MessageKey, SentMessage } from '../port.js';

/** WhatsApp lets the author edit a message for this long after sending it. */
export const EDIT_WINDOW_SECONDS = 15 * 60;

export type ChatPresenceState = 'composing' | 'recording' | 'paused';

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
