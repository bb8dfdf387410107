/**
 * The /message operations on stored messages: react, presence, read, delete, edit (over the session's
 * `messages` capability: 409 not connected, 501 driver lacks it), find and poll results (from the
 * message store alone, so they also answer while the instance is offline).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { errors } from '../errors.js';
import type { Instance } from '../instance-registry/service.js';
import { downloadPath } from '../message-store/recorder.js';
import { REVOKED_TYPE, type MessageFilter, type MessageStore, type StoredMessage } from '../message-store/store.js';
import { chatJidOf } from '../network/addressing.js';
import { capabilityOf } from '../sessions/capability.js';
import {
  EDIT_WINDOW_SECONDS,
  type ChatPresenceState,
  type MessageOperations,
  type MessageTarget,
  type PageRequest,
} from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';

/** One emoji: a single RGI emoji sequence (skin tones, flags, keycaps and ZWJ families included). */
const ONE_EMOJI = new RegExp('^\\p{RGI_Emoji}$', 'v');

/** The message kinds whose text can be edited. */
const TEXT_KINDS = new Set(['conversation', 'extendedTextMessage']);

export class MessageService {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly sessions: SessionRegistry,
    private readonly store: MessageStore,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  private operations(instance: Instance): Promise<MessageOperations> {
    return capabilityOf(this.sessions, instance, 'messages');
  }

  /** A stored message of the chat, or 404; 409 when it was deleted for everyone. */
  private async target(instance: Instance, chatId: string, messageId: string): Promise<MessageTarget & { stored: StoredMessage }> {
    const chat = chatJidOf(chatId);
    const stored = await this.store.find(instance.id, messageId);
    if (!stored || stored.key.remoteJid !== chat) {
      throw errors.messageNotFound(
        `message ${messageId} not found in chat ${chat} (only messages this instance sent or received, kept for MESSAGE_RETENTION_DAYS)`,
      );
    }
    if (stored.messageType === REVOKED_TYPE) throw errors.messageDeleted(messageId);
    return {
      key: stored.key,
      ...(stored.participant ? { participant: stored.participant } : {}),
      message: stored.message,
      messageTimestamp: stored.messageTimestamp,
      stored,
    };
  }

  async react(instance: Instance, input: { chatId: string; messageId: string; emoji: string }) {
    if (input.emoji !== '' && !ONE_EMOJI.test(input.emoji)) {
      throw errors.badRequest(`emoji must be one emoji (or "" to remove the reaction), got "${input.emoji}"`);
    }
    const operations = await this.operations(instance);
    return operations.react(await this.target(instance, input.chatId, input.messageId), input.emoji);
  }

  async delete(instance: Instance, input: { chatId: string; messageId: string }) {
    const operations = await this.operations(instance);
    return operations.delete(await this.target(instance, input.chatId, input.messageId));
  }

  async edit(instance: Instance, input: { chatId: string; messageId: string; text: string }) {
    const operations = await this.operations(instance);
    const target = await this.target(instance, input.chatId, input.messageId);
    if (!target.key.fromMe)
      throw errors.forbidden(`message ${input.messageId} was not sent by this instance; only your own messages can be edited`);
    if (!TEXT_KINDS.has(target.stored.messageType)) {
      throw errors.notATextMessage(input.messageId, target.stored.messageType);
    }
    const age = Math.floor(this.clock.now() / 1000) - target.messageTimestamp;
    if (age > EDIT_WINDOW_SECONDS) {
      throw errors.editWindowClosed(
        `message ${input.messageId} was sent ${Math.floor(age / 60)} minutes ago; WhatsApp allows edits for ${EDIT_WINDOW_SECONDS / 60} minutes after sending`,
      );
    }
    return operations.edit(target, input.text);
  }

  async markRead(instance: Instance, input: { chatId: string; messageIds: string[] }) {
    const operations = await this.operations(instance);
    const targets: MessageTarget[] = [];
    for (const id of input.messageIds) {
      const target = await this.target(instance, input.chatId, id);
      if (target.key.fromMe) throw errors.badRequest(`message ${id} was sent by this instance; only received messages can be marked read`);
      targets.push(target);
    }
    const chat = chatJidOf(input.chatId);
    await operations.markRead(chat, targets);
    return { chatId: chat, messageIds: input.messageIds };
  }

  async presence(instance: Instance, input: { chatId: string; presence: ChatPresenceState; durationMs?: number | undefined }) {
    const operations = await this.operations(instance);
    const chat = chatJidOf(input.chatId);
    await operations.sendPresence(chat, input.presence);
    const pausedAfterMs = input.presence !== 'paused' && input.durationMs !== undefined ? input.durationMs : null;
    if (pausedAfterMs !== null) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        operations
          .sendPresence(chat, 'paused')
          .catch((error: unknown) => this.log.warn({ err: error, instanceId: instance.id }, 'could not send paused presence'));
      }, pausedAfterMs);
      timer.unref();
      this.timers.add(timer);
    }
    return { chatId: chat, presence: input.presence, pausedAfterMs };
  }

  async find(
    instance: Instance,
    query: { chatId?: string; messageId?: string; fromMe?: boolean; text?: string; since?: number; until?: number },
    page: PageRequest,
  ) {
    if (query.since !== undefined && query.until !== undefined && query.since > query.until)
      throw errors.badRequest('since must not be after until');
    const filter: MessageFilter = {
      ...(query.chatId !== undefined ? { remoteJid: chatJidOf(query.chatId) } : {}),
      ...(query.messageId !== undefined ? { messageId: query.messageId } : {}),
      ...(query.fromMe !== undefined ? { fromMe: query.fromMe } : {}),
      ...(query.text !== undefined ? { text: query.text } : {}),
      ...(query.since !== undefined ? { since: query.since } : {}),
      ...(query.until !== undefined ? { until: query.until } : {}),
    };
    const { items, total } = await this.store.search(instance.id, filter, page);
    return { items: items.map(view), total, ...page };
  }

  async pollResults(instance: Instance, messageId: string) {
    const poll = await this.store.find(instance.id, messageId);
    const creation = poll ? pollCreationOf(poll.message) : undefined;
    if (!poll?.key.fromMe || !creation) throw errors.pollNotFound(`poll ${messageId} not found among the polls this instance sent`);
    const names = (creation.options ?? []).map((option) => option.optionName ?? '');
    const votes = await this.store.pollVotes(instance.id, messageId);
    const current = votes.filter((vote) => vote.selectedOptions.length > 0);
    return {
      pollMessageId: messageId,
      chatId: poll.key.remoteJid,
      name: creation.name ?? '',
      selectableCount: creation.selectableOptionsCount ?? 0,
      options: names.map((name) => {
        const voters = current.filter((vote) => vote.selectedOptions.includes(name)).map((vote) => vote.voter);
        return { name, votes: voters.length, voters };
      }),
      voters: current.length,
    };
  }

  /** Cancels pending `paused` presences (shutdown). */
  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

interface PollCreation {
  name?: string;
  options?: { optionName?: string }[];
  selectableOptionsCount?: number;
}

function pollCreationOf(message: Record<string, unknown>): PollCreation | undefined {
  return (message.pollCreationMessageV3 ?? message.pollCreationMessageV2 ?? message.pollCreationMessage) as PollCreation | undefined;
}

function view(message: StoredMessage) {
  return {
    key: message.key,
    ...(message.participant ? { participant: message.participant } : {}),
    ...(message.pushName ? { pushName: message.pushName } : {}),
    messageType: message.messageType,
    message: message.message,
    messageTimestamp: message.messageTimestamp,
    deleted: message.messageType === REVOKED_TYPE,
    ...(message.media
      ? {
          media: {
            mimetype: message.media.mimetype,
            fileLength: message.media.size,
            ...(message.media.fileName ? { fileName: message.media.fileName } : {}),
            sha256: message.media.sha256,
            downloadUrl: downloadPath(message.key.id),
          },
        }
      : {}),
  };
}
