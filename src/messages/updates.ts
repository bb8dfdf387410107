/**
 * Keeps the message store in step with messages that change other messages, whoever sent them
 * (this instance through /message, its phone, or the other side of the chat), on every network:
 *   - `protocolMessage` REVOKE: the target becomes `revoked` (content and media dropped);
 *   - an edit (`protocolMessage` MESSAGE_EDIT, bare or inside `editedMessage`): the target's text changes;
 *   - a decrypted poll vote (`pollVote` on a MESSAGE): kept for GET /message/poll-results.
 * Runs inside each instance's event order (SessionRegistry.beforeQueue), after the recorder stored the
 * originals. Only the target's author may edit it, and only the author or someone in the same group
 * (an admin, as the network checked) may delete it; other claims are ignored.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { MediaStore } from '../media/store.js';
import { REVOKED_TYPE, type MessageStore } from '../message-store/store.js';
import { messageChangeOf, withEditedText } from '../network/payloads.js';
import { isGroupJid, type CanonicalEvent, type EventData, type EventMessageKey, type MessageKey } from '../network/port.js';

type Json = Record<string, unknown>;

export class MessageUpdates {
  constructor(
    private readonly store: MessageStore,
    private readonly media: MediaStore,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Nothing (not a promise) for a message that changes no other: most of them, every plain send. */
  record(instanceId: string, event: CanonicalEvent): Promise<void> | undefined {
    // A failed send carries no content and changes nothing.
    if (event.type !== 'MESSAGE' && !(event.type === 'SEND_MESSAGE' && event.data.message)) return undefined;
    const data: EventData<'MESSAGE'> | EventData<'SEND_MESSAGE'> = event.data;
    if (data.pollVote) return this.apply(instanceId, data, undefined);
    const change = data.message ? messageChangeOf(data.message) : undefined;
    return change ? this.apply(instanceId, data, change) : undefined;
  }

  private async apply(
    instanceId: string,
    data: EventData<'MESSAGE'> | EventData<'SEND_MESSAGE'>,
    change: ReturnType<typeof messageChangeOf>,
  ): Promise<void> {
    const { key } = data;
    try {
      if (data.pollVote) return await this.recordVote(instanceId, key, data, data.pollVote);
      if (!change) return;
      const author = typeof data.participant === 'string' ? data.participant : key.participant;
      if (change.kind === 'revoke') await this.revoke(instanceId, key, author, change.targetId);
      else await this.edit(instanceId, key, author, change.targetId, change.edited);
    } catch (error) {
      this.log.error({ err: error, instanceId, messageId: key.id }, 'could not apply a message update to the message store');
    }
  }

  private async revoke(
    instanceId: string,
    key: MessageKey & { remoteJidLid?: string },
    author: string | undefined,
    targetId: string,
  ): Promise<void> {
    const target = await this.store.find(instanceId, targetId);
    if (!target || !sameChat(target.key.remoteJid, key)) return;
    const byAuthor =
      target.key.fromMe === key.fromMe &&
      (key.fromMe || !isGroupJid(key.remoteJid) || !target.participant || target.participant === author);
    // In groups an admin may delete others' messages; the network only delivers what it allowed.
    if (!byAuthor && !isGroupJid(key.remoteJid)) return;
    const mediaKey = await this.store.replaceContent(instanceId, targetId, REVOKED_TYPE, {});
    if (mediaKey) await this.media.delete([mediaKey]);
  }

  private async edit(
    instanceId: string,
    key: MessageKey & { remoteJidLid?: string },
    author: string | undefined,
    targetId: string,
    edited: Json,
  ): Promise<void> {
    const target = await this.store.find(instanceId, targetId);
    if (!target || !sameChat(target.key.remoteJid, key) || target.key.fromMe !== key.fromMe) return;
    if (!key.fromMe && isGroupJid(key.remoteJid) && target.participant && target.participant !== author) return;
    const content = withEditedText(target.message, edited);
    if (content) await this.store.replaceContent(instanceId, targetId, target.messageType, content);
  }

  private async recordVote(
    instanceId: string,
    key: EventMessageKey,
    data: { participant?: unknown; messageTimestamp?: number | undefined },
    vote: NonNullable<EventData<'MESSAGE'>['pollVote']>,
  ): Promise<void> {
    if (vote.decrypted === false || !vote.selectedOptions) return;
    const pollMessageId = vote.pollMessageId ?? vote.pollKey?.id;
    if (pollMessageId === undefined) return;
    // WhatsApp names the voter (`me` for this account's own phone); the sandbox's voter is the sender.
    const named = typeof vote.voter === 'string' && vote.voter !== 'me' ? vote.voter : undefined;
    const voter = named ?? (typeof data.participant === 'string' ? data.participant : (key.participant ?? key.remoteJid));
    await this.store.savePollVote(instanceId, {
      key,
      pollMessageId,
      voter,
      selectedOptions: vote.selectedOptions,
      messageTimestamp: data.messageTimestamp ?? Math.floor(this.clock.now() / 1000),
      createdAt: this.clock.now(),
    });
  }
}

/** The update was sent in the target's chat (by phone address, or by the hidden id WhatsApp may use). */
function sameChat(targetChat: string, key: { remoteJid: string; remoteJidLid?: string }): boolean {
  return targetChat === key.remoteJid || targetChat === key.remoteJidLid;
}
