/**
 * The port's MessageOperations on WhatsApp: reactions, deletions for everyone, edits, read receipts
 * and chat presence, translated to Baileys calls:
 *   react    -> sendMessage(jid, { react: { key, text } })        (text '' removes the reaction)
 *   delete   -> sendMessage(jid, { delete: key })                  (protocolMessage REVOKE)
 *   edit     -> sendMessage(jid, { text, edit: key })              (protocolMessage MESSAGE_EDIT)
 *   markRead -> readMessages(keys)                                 (receipt type read / read-self by privacy)
 *   presence -> sendPresenceUpdate(composing|recording|paused, jid) (a <chatstate> node)
 * The key of the target is the exact one Baileys saw when the driver still holds the message (LID
 * chats, group participants), otherwise it is rebuilt from the gateway's store. Sent actions are
 * reported like every send: SEND_MESSAGE, and their echo is not repeated as a MESSAGE.
 */
import type { AnyMessageContent, GroupMetadata, WAMessage, WAMessageKey, WASocket } from 'baileys';
import { errors } from '../../errors.js';
import {
  isGroupJid,
  type CanonicalEvent,
  type ChatPresenceState,
  type MessageOperations,
  type MessageTarget,
  type SentMessage,
} from '../port.js';
import { normalise } from './addresses.js';
import { refusal } from './refusals.js';
import { keyView, messageToJson, toSeconds, type AddressBook } from './translate-in.js';

/** What the operations get from their session. */
export interface MessageOpsContext {
  /** The socket when its connection is open. */
  socket(): WASocket | undefined;
  /** The session's status, for the 409 when the socket is not open. */
  status(): string;
  /** This account's own addresses (phone JID and LID). */
  ownJids(): string[];
  addresses(): AddressBook;
  /** The message as Baileys saw it, when the driver still holds it. */
  original(id: string): Promise<{ key: WAMessageKey } | undefined>;
  /** Records a message this session sent (for retries, and so its echo is not a new MESSAGE). */
  sent(message: WAMessage): Promise<void>;
  emit(event: CanonicalEvent): Promise<void>;
  /** Milliseconds since the epoch. */
  now(): number;
}

// --- translation (pure) ---

/** The WhatsApp key of a target: the original when known, else rebuilt (with the author in groups). */
export function waKeyOf(target: MessageTarget, original?: WAMessageKey): WAMessageKey {
  const source = original ?? {
    remoteJid: target.key.remoteJid,
    fromMe: target.key.fromMe,
    id: target.key.id,
    participant: target.participant,
  };
  const participant = source.fromMe ? undefined : (source.participant ?? undefined);
  return {
    remoteJid: source.remoteJid ?? target.key.remoteJid,
    fromMe: Boolean(source.fromMe),
    id: source.id ?? target.key.id,
    ...(participant ? { participant } : {}),
  };
}

export function reactionContent(key: WAMessageKey, emoji: string): AnyMessageContent {
  return { react: { key, text: emoji } };
}

export function revokeContent(key: WAMessageKey): AnyMessageContent {
  return { delete: key };
}

/** `linkPreview: null`: Baileys fetches no page for a URL in the new text. */
export function editContent(key: WAMessageKey, text: string): AnyMessageContent {
  return { text, edit: key, linkPreview: null };
}

/** Whether one of `own` is an admin (or the creator) of the group. */
export function isGroupAdmin(metadata: Pick<GroupMetadata, 'participants'>, own: string[]): boolean {
  const mine = new Set(own.map(normalise));
  return metadata.participants.some(
    (p) => Boolean(p.admin) && [p.id, p.lid, p.phoneNumber].some((jid) => typeof jid === 'string' && mine.has(normalise(jid))),
  );
}

// --- operations ---

export class WhatsAppMessageOps implements MessageOperations {
  constructor(private readonly ctx: MessageOpsContext) {}

  async react(target: MessageTarget, emoji: string): Promise<SentMessage> {
    const socket = this.open();
    const key = await this.keyOf(target);
    return this.sendAndReport(socket, key, reactionContent(key, emoji));
  }

  async delete(target: MessageTarget): Promise<SentMessage> {
    const socket = this.open();
    const key = await this.keyOf(target);
    if (!key.fromMe) await this.assertAdmin(socket, target.key.remoteJid, target.key.id);
    return this.sendAndReport(socket, key, revokeContent(key));
  }

  async edit(target: MessageTarget, text: string): Promise<SentMessage> {
    const socket = this.open();
    const key = await this.keyOf(target);
    return this.sendAndReport(socket, key, editContent(key, text));
  }

  async markRead(chatJid: string, targets: MessageTarget[]): Promise<void> {
    const socket = this.open();
    const keys = await Promise.all(targets.map((target) => this.keyOf(target)));
    try {
      await socket.readMessages(keys);
    } catch (error) {
      throw refusal(error, {
        notFound: `a message of chat ${chatJid}`,
        refused: `WhatsApp does not let this account mark messages of ${chatJid} read`,
      });
    }
  }

  async sendPresence(chatJid: string, state: ChatPresenceState): Promise<void> {
    const socket = this.open();
    try {
      await socket.sendPresenceUpdate(state, chatJid);
    } catch (error) {
      throw refusal(error, { notFound: `chat ${chatJid}`, refused: `WhatsApp does not let this account show presence in ${chatJid}` });
    }
  }

  private open(): WASocket {
    const socket = this.ctx.socket();
    if (!socket) throw errors.notConnected(this.ctx.status());
    return socket;
  }

  private async keyOf(target: MessageTarget): Promise<WAMessageKey> {
    return waKeyOf(target, (await this.ctx.original(target.key.id))?.key);
  }

  /** Others' messages can be deleted for everyone only by group admins. */
  private async assertAdmin(socket: WASocket, chat: string, id: string): Promise<void> {
    const refused = `message ${id} was not sent by this instance; only group admins can delete others' messages for everyone`;
    if (!isGroupJid(chat)) throw errors.forbidden(refused);
    let metadata: GroupMetadata;
    try {
      metadata = await socket.groupMetadata(chat);
    } catch (error) {
      throw refusal(error, { notFound: `group ${chat}`, refused });
    }
    if (!isGroupAdmin(metadata, this.ctx.ownJids())) throw errors.forbidden(refused);
  }

  private async sendAndReport(socket: WASocket, key: WAMessageKey, content: AnyMessageContent): Promise<SentMessage> {
    let sent: WAMessage | undefined;
    try {
      sent = await socket.sendMessage(key.remoteJid ?? '', content);
    } catch (error) {
      throw refusal(error, {
        notFound: `message ${key.id ?? ''} in chat ${key.remoteJid ?? ''}`,
        refused: `WhatsApp does not let this account change message ${key.id ?? ''}`,
      });
    }
    if (!sent?.key.id) throw errors.networkError('WhatsApp did not accept the message');
    await this.ctx.sent(sent);
    const view = keyView(sent.key, this.ctx.addresses()) as unknown as SentMessage['key'];
    const message = sent.message ? messageToJson(sent.message) : {};
    const messageTimestamp = toSeconds(sent.messageTimestamp) || Math.floor(this.ctx.now() / 1000);
    await this.ctx.emit({ type: 'SEND_MESSAGE', data: { key: view, message, messageTimestamp, status: 'SENT' } });
    return { key: view, message, messageTimestamp, status: 'SENT' };
  }
}
