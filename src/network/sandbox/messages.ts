/**
 * Acting on messages on the sandbox network: reactions, deletions for everyone, edits, read receipts
 * and chat presence. The acting instance gets SEND_MESSAGE (reactions, deletions, edits); the other
 * side of the chat — the person, or every group participant — gets what WhatsApp delivers: a MESSAGE
 * with `reactionMessage`, `protocolMessage` REVOKE or `editedMessage`, a READ_RECEIPT, a CHAT_PRESENCE.
 * Keys inside those payloads are shown as each recipient sees the target message (`fromMe` from the
 * recipient's side; `participant` for authors in groups). Accounts that blocked the actor get nothing.
 */
import { errors } from '../../errors.js';
import {
  isGroupJid,
  jidToNumber,
  toJid,
  type ChatPresenceState,
  type MessageOperations,
  type MessageTarget,
  type SentMessage,
  type EventData,
} from '../port.js';
import { isParticipant, participantNumbers } from './groups.js';
import { newMessageId } from './network.js';
import type { SandboxWorld } from './world.js';

type Payload = Record<string, unknown>;

export class SandboxMessages implements MessageOperations {
  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {}

  react(target: MessageTarget, emoji: string): Promise<SentMessage> {
    const senderTimestampMs = this.world.network.clock.now();
    return this.publish(target, (key) => ({ reactionMessage: { key, text: emoji, senderTimestampMs } }));
  }

  delete(target: MessageTarget): Promise<SentMessage> {
    if (!target.key.fromMe)
      throw errors.forbidden(
        `message ${target.key.id} was not sent by this instance; the sandbox network deletes only your own messages for everyone`,
      );
    return this.publish(target, (key) => ({ protocolMessage: { key, type: 'REVOKE' } }));
  }

  edit(target: MessageTarget, text: string): Promise<SentMessage> {
    const timestampMs = this.world.network.clock.now();
    const edit = (key: Payload) => ({ key, type: 'MESSAGE_EDIT', editedMessage: { conversation: text }, timestampMs });
    // The sender's copy is the protocol message; recipients get it wrapped in `editedMessage`, as WhatsApp delivers edits.
    return this.publish(target, (key, own) =>
      own ? { protocolMessage: edit(key) } : { editedMessage: { message: { protocolMessage: edit(key) } } },
    );
  }

  async markRead(chatJid: string, targets: MessageTarget[]): Promise<void> {
    const me = this.me();
    const group = isGroupJid(chatJid);
    if (this.updateUnread(me, chatJid, targets)) await this.world.saveChats(me);
    // As on the phone: no receipts when this account turned read receipts off.
    if (this.world.account(me).privacy.readReceipts !== 'all') return;
    const readTimestamp = this.world.now();
    for (const target of targets) {
      const sender = jidToNumber(target.participant ?? target.key.remoteJid);
      if (!sender || this.world.hasBlocked(sender, me)) continue;
      const data: EventData<'READ_RECEIPT'> = {
        key: { remoteJid: group ? chatJid : toJid(me), fromMe: true, id: target.key.id },
        receipt: 'read',
        readTimestamp,
      };
      if (group) data.participant = toJid(me);
      await this.world.emitTo(sender, { type: 'READ_RECEIPT', data });
    }
  }

  async sendPresence(chatJid: string, state: ChatPresenceState): Promise<void> {
    const me = this.me();
    const data: EventData<'CHAT_PRESENCE'> = {
      remoteJid: isGroupJid(chatJid) ? chatJid : toJid(me),
      participant: toJid(me),
      presence: state,
    };
    await this.world.emitToAll(this.recipients(chatJid, me), { type: 'CHAT_PRESENCE', data });
  }

  /**
   * Sends a message that acts on `target`: SEND_MESSAGE to this instance, MESSAGE to each recipient,
   * with the target's key as each side sees it.
   */
  private async publish(target: MessageTarget, build: (key: Payload, own: boolean) => Payload): Promise<SentMessage> {
    const me = this.me();
    const chat = target.key.remoteJid;
    const recipients = this.recipients(chat, me);
    const id = newMessageId();
    const messageTimestamp = this.world.now();
    const key = { remoteJid: chat, fromMe: true, id };
    const message = build(this.keyAsSeenBy(target, me), true);
    await this.world.emitTo(me, { type: 'SEND_MESSAGE', data: { key, message, messageTimestamp, status: 'SENT' } });
    const group = isGroupJid(chat);
    for (const recipient of recipients) {
      await this.world.emitTo(recipient, {
        type: 'MESSAGE',
        data: {
          key: { remoteJid: group ? chat : toJid(me), fromMe: false, id },
          ...(group ? { participant: toJid(me) } : {}),
          pushName: this.world.displayName(me),
          message: build(this.keyAsSeenBy(target, recipient), false),
          messageTimestamp,
        },
      });
    }
    return { key, message, messageTimestamp, status: 'SENT' };
  }

  /** Who hears about what this account does in `chat` (a person or a group's other participants). */
  private recipients(chat: string, me: string): string[] {
    let numbers: string[];
    if (isGroupJid(chat)) {
      const group = this.world.groups.get(chat);
      if (!group || !isParticipant(group, me)) throw errors.forbidden(`you are not a participant of group ${chat}`);
      numbers = participantNumbers(group).filter((n) => n !== me);
    } else {
      const number = jidToNumber(chat);
      numbers = number ? [number] : [];
    }
    return numbers.filter((n) => !this.world.hasBlocked(n, me));
  }

  /** The key of the target message as `viewer` sees it. */
  private keyAsSeenBy(target: MessageTarget, viewer: string): Payload {
    const me = this.me();
    const author = target.key.fromMe ? me : jidToNumber(target.participant ?? target.key.remoteJid);
    const chat = target.key.remoteJid;
    if (!isGroupJid(chat)) return { remoteJid: viewer === me ? chat : toJid(me), fromMe: author === viewer, id: target.key.id };
    return {
      remoteJid: chat,
      fromMe: author === viewer,
      id: target.key.id,
      ...(author && author !== viewer ? { participant: toJid(author) } : {}),
    };
  }

  /**
   * Reading a message reads the chat up to it: only later incoming messages stay unread. True when
   * the chat's read marker moved (the caller stores it).
   */
  private updateUnread(me: string, chatJid: string, targets: MessageTarget[]): boolean {
    const chat = this.world.chatsOf(me).get(chatJid);
    if (!chat || chat.unreadCount === 0) return false;
    const ids = new Set(targets.map((t) => t.key.id));
    const newestRead = chat.messages.findLastIndex((m) => ids.has(m.key.id));
    if (newestRead < 0) return false;
    const after = chat.messages.slice(newestRead + 1).filter((m) => !m.key.fromMe).length;
    if (after >= chat.unreadCount) return false;
    chat.unreadCount = after;
    chat.readThrough = chat.messages[newestRead]!.key.id;
    return true;
  }
}
