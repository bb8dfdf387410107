/**
 * The Chatwoot integration, both ways, exactly once (docs/chatwoot.md):
 *   WhatsApp -> Chatwoot: MESSAGE / SEND_MESSAGE events arrive through the durable outbox (a
 *   DurableSink, so Chatwoot being down delays them, in order, and loses nothing). Each chat maps
 *   to one contact (found by phone number before one is created), one contact inbox and one
 *   conversation (reused, reopened or renewed per the settings); each message is claimed in the
 *   mapping table before it is posted, so a redelivery never posts it twice.
 *   Chatwoot -> WhatsApp: the webhook of the instance (secret in the path, optional signature)
 *   accepts agents' outgoing, non-private messages and sends them through the MessagingService;
 *   the messages Waygate posted itself (source_id `WAID:`) and those already sent are ignored.
 */
import type { Dispatcher } from 'undici';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { randomToken, type Clock } from '../../clock.js';
import { errors } from '../../errors.js';
import type { EventEnvelope } from '../../events/envelope.js';
import type { Instance, InstanceService } from '../../instance-registry/service.js';
import { mediaKey, type MediaStore } from '../../media/store.js';
import { jidToNumber, type SentMessage } from '../../network/port.js';
import type { MessagingService } from '../../outgoing/service.js';
import type { MessageStore, StoredMessage } from '../../message-store/store.js';
import type { SessionRegistry } from '../../sessions/registry.js';
import { ChatwootApiError, ChatwootClient, type CwConversation, type CwInbox } from './client.js';
import { AGENT_CLAIM, type ChatMapping, type ChatwootOptions, type ChatwootRepo, type ChatwootSettings } from './repo.js';

/** source_id of every message Waygate posts: Chatwoot echoes it back in its webhook. */
export const SOURCE_PREFIX = 'WAID:';
/** A signed webhook older (or newer) than this is refused. */
const SIGNATURE_TOLERANCE_S = 300;
/** Looking up a new contact's picture or group subject never holds a message up longer than this. */
const PROFILE_TIMEOUT_MS = 3000;

export interface ConfigInput extends ChatwootOptions {
  baseUrl: string;
  accountId: number;
  apiAccessToken: string;
  inboxId?: number | undefined;
  inboxName?: string | undefined;
  waygateUrl?: string | undefined;
  signingSecret?: string | undefined;
}

export interface ImportRequest {
  contacts: boolean;
  days: number;
  maxMessages: number;
  intervalMs: number;
}

export interface ImportStatus {
  state: 'idle' | 'running' | 'done' | 'failed';
  contacts: number;
  messages: number;
  total: number;
  lastError: string | null;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface Health {
  up: boolean;
  lastError: string | null;
  lastSuccessAt: number | null;
}

export interface ServiceDeps {
  repo: ChatwootRepo;
  instances: InstanceService;
  sending: MessagingService;
  sessions: SessionRegistry;
  messages: MessageStore;
  media: MediaStore;
  clock: Clock;
  log: FastifyBaseLogger;
  userAgent: string;
  /** The API prefix routes live under (for the webhook URL). */
  apiPrefix: string;
  /** Pacing of imports (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Why a Chatwoot base URL may not be used (a private or loopback target), or undefined; absent
   * when private targets are allowed (WEBHOOK_ALLOW_PRIVATE_URLS). The base URL is set with an
   * instance token, so it follows the rule of webhook URLs set that way.
   */
  targetGuard?: (url: string) => Promise<string | undefined>;
  /** With targetGuard: connections to Chatwoot reach public addresses only, checked at connect time (no DNS rebinding). */
  dispatcher?: Dispatcher;
}

type Data = Record<string, unknown>;

export class ChatwootService {
  private readonly settings = new Map<string, ChatwootSettings>();
  private readonly health = new Map<string, Health>();
  /** Agent messages being sent, per instance: their SEND_MESSAGE waits until their ids are mapped. */
  private readonly sending = new Map<string, Set<Promise<unknown>>>();
  /** Messages being posted to Chatwoot, per instance. */
  private readonly posting = new Map<string, Set<Promise<unknown>>>();
  private readonly background = new Set<Promise<void>>();
  private readonly locks = new Map<string, Promise<void>>();
  private readonly imports = new Map<string, ImportStatus>();

  constructor(private readonly deps: ServiceDeps) {}

  async load(): Promise<void> {
    for (const settings of await this.deps.repo.all()) this.settings.set(settings.instanceId, settings);
  }

  /** Synchronous, for DurableSink.wants: is Chatwoot set up for this instance? */
  configured(instanceId: string): boolean {
    return this.settings.has(instanceId);
  }

  // --- settings ---

  async configure(instance: Instance, input: ConfigInput): Promise<{ settings: ChatwootSettings; inboxCreated: boolean }> {
    if (input.inboxId === undefined && input.inboxName === undefined)
      throw errors.badRequest('give inboxId (an existing inbox) or inboxName');
    if (input.inboxId !== undefined && input.inboxName !== undefined) throw errors.badRequest('give either inboxId or inboxName, not both');
    const previous = this.settings.get(instance.id) ?? (await this.deps.repo.find(instance.id));
    const webhookSecret = previous?.webhookSecret ?? randomToken(24);
    const baseUrl = input.baseUrl.replace(/\/+$/, '');
    const refused = this.deps.targetGuard ? await this.deps.targetGuard(baseUrl).catch(() => 'not a valid URL') : undefined;
    if (refused) throw errors.callbackUrlRefused(`baseUrl: ${refused}; private and loopback targets need WEBHOOK_ALLOW_PRIVATE_URLS=true`);
    const waygateUrl = input.waygateUrl ? input.waygateUrl.replace(/\/+$/, '') : null;
    const client = new ChatwootClient(
      { baseUrl, accountId: input.accountId, apiToken: input.apiAccessToken },
      this.deps.userAgent,
      this.deps.dispatcher,
    );
    let inbox: CwInbox;
    let inboxCreated = false;
    const webhookUrl = waygateUrl ? `${waygateUrl}${this.webhookPath(instance.id, webhookSecret)}` : undefined;
    try {
      if (input.inboxId !== undefined) {
        inbox = await client.getInbox(input.inboxId);
      } else {
        const name = input.inboxName!;
        // Reuse an inbox of that name (a second POST, a re-setup) rather than create a duplicate.
        const existing = (await client.listInboxes()).find((i) => i.name === name);
        if (existing) inbox = existing;
        else {
          if (!webhookUrl) throw errors.badRequest('waygateUrl is needed to create an inbox (its webhook_url points back at Waygate)');
          inbox = await client.createApiInbox(name, webhookUrl);
          inboxCreated = true;
        }
      }
      // An existing API inbox pointing elsewhere (an older setup, another secret) is pointed back at this instance.
      if (!inboxCreated && webhookUrl && inbox.channel_type === 'Channel::Api' && inbox.webhook_url !== webhookUrl) {
        inbox = await client.updateInboxWebhook(inbox.id, webhookUrl);
      }
    } catch (error) {
      if (error instanceof ChatwootApiError) {
        if (error.status === 404)
          throw errors.chatwootRefused(`Chatwoot has no inbox ${input.inboxId ?? input.inboxName} in account ${input.accountId}`);
        if (error.status === 401 || error.status === 403)
          throw errors.chatwootRefused('Chatwoot refused the api access token for this account');
        throw errors.chatwootUnreachable(error.message);
      }
      throw error;
    }
    const now = this.deps.clock.now();
    const settings: ChatwootSettings = {
      instanceId: instance.id,
      baseUrl,
      accountId: input.accountId,
      apiToken: input.apiAccessToken,
      inboxId: inbox.id,
      inboxName: inbox.name,
      webhookSecret,
      signingSecret: input.signingSecret ?? null,
      waygateUrl,
      options: {
        signAgentMessages: input.signAgentMessages,
        reopenConversation: input.reopenConversation,
        conversationPending: input.conversationPending,
        ignoreGroups: input.ignoreGroups,
        ignore: input.ignore,
        closingMessage: input.closingMessage,
      },
      createdAt: previous?.createdAt ?? now,
      updatedAt: now,
    };
    // Contacts, conversations and message ids belong to one account and inbox.
    if (
      previous &&
      (previous.inboxId !== settings.inboxId || previous.accountId !== settings.accountId || previous.baseUrl !== settings.baseUrl)
    ) {
      await this.deps.repo.forgetMappings(instance.id);
    }
    await this.deps.repo.save(settings);
    this.settings.set(instance.id, settings);
    return { settings, inboxCreated };
  }

  async read(instance: Instance): Promise<ChatwootSettings> {
    const settings = await this.deps.repo.find(instance.id);
    if (!settings) throw errors.notFound('Chatwoot settings of this instance');
    return settings;
  }

  async remove(instance: Instance): Promise<void> {
    const deleted = await this.deps.repo.delete(instance.id);
    this.settings.delete(instance.id);
    this.health.delete(instance.id);
    if (!deleted) throw errors.notFound('Chatwoot settings of this instance');
  }

  forget(instanceId: string): void {
    this.settings.delete(instanceId);
    this.health.delete(instanceId);
  }

  webhookPath(instanceId: string, secret: string): string {
    return `${this.deps.apiPrefix}/chatwoot/webhook/${encodeURIComponent(instanceId)}/${secret}`;
  }

  healthOf(instanceId: string): Health {
    return this.health.get(instanceId) ?? { up: true, lastError: null, lastSuccessAt: null };
  }

  /** Number of instances whose last call to Chatwoot failed (for /metrics). */
  failing(): number {
    return [...this.health.values()].filter((h) => !h.up).length;
  }

  // --- WhatsApp -> Chatwoot ---

  /**
   * Brings one stored event to Chatwoot. Throws ChatwootApiError when Chatwoot should be tried
   * again later (the outbox retries, in order); a message Chatwoot refuses for good is logged and skipped.
   */
  async deliver(envelope: EventEnvelope): Promise<void> {
    const settings = this.settings.get(envelope.instanceId);
    if (!settings) return;
    if (envelope.event !== 'MESSAGE' && envelope.event !== 'SEND_MESSAGE' && envelope.event !== 'READ_RECEIPT') return;
    try {
      if (envelope.event === 'READ_RECEIPT') await this.deliverReceipt(settings, envelope.data);
      else await this.locked(settings.instanceId, () => this.deliverMessage(settings, envelope.data, envelope.event === 'SEND_MESSAGE'));
      this.health.set(settings.instanceId, { up: true, lastError: null, lastSuccessAt: this.deps.clock.now() });
    } catch (error) {
      if (!(error instanceof ChatwootApiError)) throw error;
      const previous = this.healthOf(settings.instanceId);
      if (error.transient) {
        this.health.set(settings.instanceId, { up: false, lastError: error.message, lastSuccessAt: previous.lastSuccessAt });
        throw error;
      }
      this.health.set(settings.instanceId, { up: true, lastError: error.message, lastSuccessAt: previous.lastSuccessAt });
      this.deps.log.warn(
        { instanceId: settings.instanceId, eventId: envelope.eventId, err: error.message },
        'Chatwoot refused a message; skipped',
      );
    }
  }

  /** One instance's chats are created one at a time (the outbox lane and a history import share them). */
  private locked<T>(instanceId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(instanceId) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(instanceId, tail);
    void tail.then(() => {
      if (this.locks.get(instanceId) === tail) this.locks.delete(instanceId);
    });
    return run;
  }

  /** Read receipts of messages in Chatwoot: their status follows (API inboxes; older Chatwoot answers 404, skipped). */
  private async deliverReceipt(settings: ChatwootSettings, data: Data): Promise<void> {
    const key = data.key as { id?: string } | undefined;
    const status = data.receipt === 'delivered' ? 'delivered' : data.receipt === 'read' || data.receipt === 'played' ? 'read' : undefined;
    if (!key?.id || !status) return;
    const mapping = await this.deps.repo.byWhatsAppId(settings.instanceId, key.id);
    if (!mapping?.cwMessageId) return;
    const chat = await this.deps.repo.chat(settings.instanceId, mapping.chatJid);
    if (!chat?.conversationId) return;
    await this.client(settings).setMessageStatus(chat.conversationId, mapping.cwMessageId, status);
  }

  private async deliverMessage(settings: ChatwootSettings, data: Data, sentEvent: boolean, importedAt?: number): Promise<void> {
    const key = data.key as { remoteJid?: string; fromMe?: boolean; id?: string; participant?: string } | undefined;
    const message = data.message as Data | undefined;
    if (!key?.remoteJid || !key.id || !message) return;
    const chatJid = key.remoteJid;
    if (!this.wantsChat(settings.options, chatJid)) return;
    const instanceId = settings.instanceId;
    // An agent message being sent right now: its ids are mapped when the send returns.
    const inFlight = this.sending.get(instanceId);
    if (inFlight && inFlight.size > 0) await Promise.allSettled([...inFlight]);

    const existing = await this.deps.repo.byWhatsAppId(instanceId, key.id);
    if (existing && existing.cwMessageId !== null) return; // posted before, or sent by an agent from Chatwoot

    const fromMe = key.fromMe === true || sentEvent;
    const client = this.client(settings);
    const protocol = message.protocolMessage as { type?: string; key?: { id?: string }; editedMessage?: Data } | undefined;
    const edited = (message.editedMessage as { message?: { protocolMessage?: typeof protocol } } | undefined)?.message?.protocolMessage;
    if (protocol?.type === 'REVOKE') {
      await this.deleteInChatwoot(settings, client, protocol.key?.id);
      return;
    }
    if (message.reactionMessage || (protocol && protocol.type !== 'MESSAGE_EDIT' && !edited)) return;

    const group = chatJid.endsWith('@g.us');
    const number = group ? undefined : jidToNumber(chatJid);
    let content = textOf(message);
    const edit = protocol?.type === 'MESSAGE_EDIT' ? protocol : edited;
    let replyTo = quotedIdOf(message);
    if (edit) {
      content = `✏️ ${textOf(edit.editedMessage ?? {}) || ''}`.trim();
      replyTo = edit.key?.id;
    }
    if (group && !fromMe) {
      const author = (typeof data.participant === 'string' ? data.participant : key.participant) ?? '';
      const authorNumber = jidToNumber(author);
      const name = typeof data.pushName === 'string' && data.pushName ? data.pushName : authorNumber ? `+${authorNumber}` : author;
      content = `**${name}**${authorNumber && name !== `+${authorNumber}` ? ` (+${authorNumber})` : ''}:\n${content}`;
    }
    if (importedAt !== undefined)
      content = `🕓 ${new Date(importedAt * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC\n${content}`;
    const inReplyTo = replyTo ? (await this.deps.repo.byWhatsAppId(instanceId, replyTo))?.cwMessageId : null;
    const waId = key.id;
    const sourceId = `${SOURCE_PREFIX}${waId}`;
    const attachment = await this.attachmentOf(instanceId, key.id, data);
    const who = {
      name: group
        ? `Group ${chatJid.split('@')[0] ?? chatJid}`
        : (!fromMe && typeof data.pushName === 'string' && data.pushName) || (number ? `+${number}` : chatJid),
      ...(number ? { phone: `+${number}` } : {}),
    };

    for (let attempt = 1; ; attempt += 1) {
      try {
        const chat = await this.chatOf(settings, client, chatJid, who);
        const conversationId = await this.conversationOf(settings, client, chat, fromMe);
        if (existing) {
          // Claimed by an attempt that may have reached Chatwoot before failing: look there first.
          const found = (await client.listMessages(conversationId)).find((m) => m.source_id === sourceId);
          if (found) {
            await this.deps.repo.posted(instanceId, key.id, found.id);
            return;
          }
        } else {
          await this.deps.repo.claim(instanceId, chatJid, key.id, null, this.deps.clock.now());
        }
        const post = async () => {
          const posted = await client.createMessage(conversationId, {
            content: content || (attachment ? '' : '[media]'),
            messageType: fromMe ? 'outgoing' : 'incoming',
            sourceId,
            ...(inReplyTo ? { contentAttributes: { in_reply_to: inReplyTo } } : {}),
            ...(attachment ? { attachment } : {}),
          });
          await this.deps.repo.posted(instanceId, waId, posted.id);
        };
        // Chatwoot echoes the new message to the webhook, maybe before it answers: the webhook waits for this.
        await this.tracked(instanceId, post(), this.posting);
        return;
      } catch (error) {
        // The stored contact or conversation was deleted in Chatwoot: find or create them again, once.
        const stale = error instanceof ChatwootApiError && (error.status === 404 || error.status === 422);
        if (!stale || attempt > 1) throw error;
        await this.deps.repo.forgetChat(instanceId, chatJid);
      }
    }
  }

  private wantsChat(options: ChatwootOptions, chatJid: string): boolean {
    if (chatJid === 'status@broadcast' || chatJid.endsWith('@newsletter') || chatJid.endsWith('@broadcast')) return false;
    if (chatJid.endsWith('@g.us') && options.ignoreGroups) return false;
    const number = jidToNumber(chatJid);
    return !options.ignore.some((entry) => entry === chatJid || (number !== undefined && entry === number));
  }

  /** The chat's contact and contact inbox: stored, else found by phone number (or chat id), else created. */
  private async chatOf(
    settings: ChatwootSettings,
    client: ChatwootClient,
    chatJid: string,
    who: { name: string; phone?: string },
  ): Promise<ChatMapping> {
    const stored = await this.deps.repo.chat(settings.instanceId, chatJid);
    if (stored) return stored;
    const candidates = await client.searchContacts(who.phone ? who.phone.slice(1) : chatJid);
    let contact = candidates.find((c) => (who.phone && c.phone_number === who.phone) || c.identifier === chatJid);
    let sourceId: string | undefined;
    if (!contact) {
      const profile = await this.profileOf(settings.instanceId, chatJid);
      const created = await client.createContact({
        inbox_id: settings.inboxId,
        name: profile.name ?? who.name,
        identifier: chatJid,
        ...(who.phone ? { phone_number: who.phone } : {}),
        ...(profile.avatarUrl ? { avatar_url: profile.avatarUrl } : {}),
      });
      contact = created.contact;
      sourceId = created.sourceId;
    } else {
      // One contact inbox per contact and inbox: reuse the one Chatwoot already has.
      sourceId = contact.contact_inboxes?.find((ci) => ci.inbox?.id === settings.inboxId)?.source_id;
      sourceId ??= await client.createContactInbox(
        contact.id,
        settings.inboxId,
        `waygate-${createHash('sha256').update(chatJid).digest('hex').slice(0, 24)}`,
      );
    }
    const chat: ChatMapping = { chatJid, contactId: contact.id, sourceId, conversationId: null };
    await this.deps.repo.saveChat(settings.instanceId, chat, this.deps.clock.now());
    return chat;
  }

  /** A group's subject and a chat's picture for a new contact: best effort (the contact is created without them). */
  private async profileOf(instanceId: string, chatJid: string): Promise<{ name?: string; avatarUrl?: string }> {
    const lookup = async (): Promise<{ name?: string; avatarUrl?: string }> => {
      const instance = await this.deps.instances.find(instanceId);
      if (!instance) return {};
      const session = await this.deps.sessions.connected(instance);
      if (chatJid.endsWith('@g.us')) {
        const info = await session.groups?.info(chatJid);
        const picture = await session.groups?.picture(chatJid).catch(() => undefined);
        return {
          ...(info?.subject ? { name: info.subject } : {}),
          ...(picture?.url?.startsWith('https://') ? { avatarUrl: picture.url } : {}),
        };
      }
      const number = jidToNumber(chatJid);
      const picture = number ? await session.users?.avatar(number) : undefined;
      // Chatwoot downloads the avatar itself: only a public https URL is of use (the sandbox serves data: URLs).
      return picture?.url?.startsWith('https://') ? { avatarUrl: picture.url } : {};
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<{ name?: string; avatarUrl?: string }>((resolve) => {
      timer = setTimeout(() => resolve({}), PROFILE_TIMEOUT_MS);
    });
    try {
      return await Promise.race([lookup().catch(() => ({})), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The one conversation of the chat: kept, reopened or started anew per the settings. */
  private async conversationOf(settings: ChatwootSettings, client: ChatwootClient, chat: ChatMapping, fromMe: boolean): Promise<number> {
    const { options } = settings;
    if (chat.conversationId !== null) {
      let current: CwConversation | undefined;
      try {
        current = await client.getConversation(chat.conversationId);
      } catch (error) {
        if (!(error instanceof ChatwootApiError) || error.status !== 404) throw error;
      }
      if (current && current.status !== 'resolved') return current.id;
      // Our own messages (phone, API) never reopen a conversation: they go into the last one.
      if (current && fromMe) return current.id;
      if (current && options.reopenConversation) {
        await client.setStatus(current.id, 'open');
        return current.id;
      }
    } else {
      // A conversation may exist from before the mapping (a lost mapping, an agent who started it): reuse it.
      const open = (await client.contactConversations(chat.contactId)).find(
        (c) => c.inbox_id === settings.inboxId && c.status !== 'resolved',
      );
      if (open) {
        await this.deps.repo.saveChat(settings.instanceId, { ...chat, conversationId: open.id }, this.deps.clock.now());
        return open.id;
      }
    }
    const created = await client.createConversation({
      source_id: chat.sourceId,
      inbox_id: settings.inboxId,
      contact_id: chat.contactId,
      status: options.conversationPending ? 'pending' : 'open',
    });
    await this.deps.repo.saveChat(settings.instanceId, { ...chat, conversationId: created.id }, this.deps.clock.now());
    chat.conversationId = created.id;
    return created.id;
  }

  private async deleteInChatwoot(settings: ChatwootSettings, client: ChatwootClient, waMessageId: string | undefined): Promise<void> {
    if (!waMessageId) return;
    const mapping = await this.deps.repo.byWhatsAppId(settings.instanceId, waMessageId);
    if (!mapping?.cwMessageId) return;
    const chat = await this.deps.repo.chat(settings.instanceId, mapping.chatJid);
    if (!chat?.conversationId) return;
    try {
      await client.deleteMessage(chat.conversationId, mapping.cwMessageId);
    } catch (error) {
      if (!(error instanceof ChatwootApiError) || error.status !== 404) throw error;
    }
  }

  private async attachmentOf(
    instanceId: string,
    messageId: string,
    data: Data,
  ): Promise<{ data: Buffer; mimetype: string; fileName: string } | undefined> {
    const media = data.media as { mimetype?: string; fileName?: string; stored?: boolean } | undefined;
    if (!media || media.stored === false) return undefined;
    const bytes = await this.deps.media.read(mediaKey(instanceId, messageId));
    if (!bytes) return undefined;
    const mimetype = media.mimetype ?? 'application/octet-stream';
    return { data: bytes, mimetype, fileName: media.fileName ?? `${messageId}.${extensionOf(mimetype)}` };
  }

  private client(settings: ChatwootSettings): ChatwootClient {
    return new ChatwootClient(
      { baseUrl: settings.baseUrl, accountId: settings.accountId, apiToken: settings.apiToken },
      this.deps.userAgent,
      this.deps.dispatcher,
    );
  }

  // --- import (through Chatwoot's API, paced; never into its database) ---

  importStatus(instanceId: string): ImportStatus {
    return (
      this.imports.get(instanceId) ?? {
        state: 'idle',
        contacts: 0,
        messages: 0,
        total: 0,
        lastError: null,
        startedAt: null,
        finishedAt: null,
      }
    );
  }

  /** Starts importing contacts and recent history in the background; 409 while one runs. */
  startImport(instance: Instance, request: ImportRequest): ImportStatus {
    const settings = this.settings.get(instance.id);
    if (!settings) throw errors.notFound('Chatwoot settings of this instance');
    if (this.imports.get(instance.id)?.state === 'running')
      throw errors.conflict('an import of this instance is running; see GET /chatwoot/import');
    const status: ImportStatus = {
      state: 'running',
      contacts: 0,
      messages: 0,
      total: 0,
      lastError: null,
      startedAt: this.deps.clock.now(),
      finishedAt: null,
    };
    this.imports.set(instance.id, status);
    const work = this.runImport(settings, instance, request, status)
      .then(
        () => {
          status.state = 'done';
        },
        (error: unknown) => {
          status.state = 'failed';
          status.lastError = error instanceof Error ? error.message : String(error);
          this.deps.log.warn(
            { instanceId: instance.id, err: status.lastError },
            'Chatwoot import stopped; run it again to continue (nothing is posted twice)',
          );
        },
      )
      .finally(() => {
        status.finishedAt = this.deps.clock.now();
      });
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
    return { ...status };
  }

  private async runImport(settings: ChatwootSettings, instance: Instance, request: ImportRequest, status: ImportStatus): Promise<void> {
    const sleep = this.deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
    const client = this.client(settings);
    if (request.contacts) {
      const session = await this.deps.sessions.connected(instance);
      for (let offset = 0; session.chats;) {
        const page = await session.chats.list({ kind: 'person' }, { offset, limit: 100 });
        for (const chat of page.items) {
          if (!this.wantsChat(settings.options, chat.chatId) || !this.settings.has(instance.id)) continue;
          const number = jidToNumber(chat.chatId);
          await this.locked(instance.id, () =>
            this.chatOf(settings, client, chat.chatId, {
              name: chat.name ?? (number ? `+${number}` : chat.chatId),
              ...(number ? { phone: `+${number}` } : {}),
            }),
          );
          status.contacts += 1;
          if (request.intervalMs > 0) await sleep(request.intervalMs);
        }
        offset += page.items.length;
        if (page.items.length === 0 || offset >= page.total) break;
      }
    }
    if (request.days === 0) return;
    const since = Math.floor(this.deps.clock.now() / 1000) - request.days * 86_400;
    const selected: StoredMessage[] = [];
    // The store answers newest first: keep the newest maxMessages, then post them oldest first.
    for (let offset = 0; selected.length < request.maxMessages;) {
      const page = await this.deps.messages.search(
        instance.id,
        { since },
        { offset, limit: Math.min(500, request.maxMessages - selected.length) },
      );
      selected.push(...page.items);
      offset += page.items.length;
      if (page.items.length === 0 || offset >= page.total) break;
    }
    selected.reverse();
    status.total = selected.length;
    for (const message of selected) {
      if (!this.settings.has(instance.id)) return;
      const before = await this.deps.repo.byWhatsAppId(instance.id, message.key.id);
      if (before?.cwMessageId != null) continue;
      const data: Data = {
        key: message.key,
        message: message.message,
        messageTimestamp: message.messageTimestamp,
        ...(message.participant ? { participant: message.participant } : {}),
        ...(message.pushName ? { pushName: message.pushName } : {}),
        ...(message.media
          ? { media: { mimetype: message.media.mimetype, ...(message.media.fileName ? { fileName: message.media.fileName } : {}) } }
          : {}),
      };
      await this.locked(instance.id, () => this.deliverMessage(settings, data, message.key.fromMe, message.messageTimestamp));
      if ((await this.deps.repo.byWhatsAppId(instance.id, message.key.id))?.cwMessageId != null) status.messages += 1;
      if (request.intervalMs > 0) await sleep(request.intervalMs);
    }
  }

  // --- Chatwoot -> WhatsApp ---

  /**
   * Checks a webhook call (secret of the path, then the signature when the inbox signs) and
   * schedules its work; answers at once. Throws 401 when the call is not Chatwoot's.
   */
  async acceptWebhook(
    instanceId: string,
    secret: string,
    headers: Record<string, string | string[] | undefined>,
    rawBody: string,
    body: Data,
  ): Promise<{ ignored?: string }> {
    const settings = this.settings.get(instanceId) ?? (await this.deps.repo.find(instanceId));
    if (!settings || !sameSecret(secret, settings.webhookSecret))
      throw errors.chatwootWebhookRefused('unknown instance or wrong webhook secret');
    if (settings.signingSecret) {
      const timestamp = String(headers['x-chatwoot-timestamp'] ?? '');
      const signature = String(headers['x-chatwoot-signature'] ?? '');
      const age = Math.abs(Math.floor(this.deps.clock.now() / 1000) - Number(timestamp));
      if (!/^\d+$/.test(timestamp) || !(age <= SIGNATURE_TOLERANCE_S))
        throw errors.chatwootWebhookRefused('X-Chatwoot-Timestamp missing or stale');
      const expected = `sha256=${createHmac('sha256', settings.signingSecret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
      if (!sameSecret(signature, expected)) throw errors.chatwootWebhookRefused('X-Chatwoot-Signature does not match');
    }
    const ignored = whyIgnored(settings, body);
    if (ignored) return { ignored };
    const work = this.handleWebhook(settings, body).catch((error: unknown) =>
      this.deps.log.error({ err: error, instanceId, chatwootMessageId: body.id }, 'could not bring a Chatwoot message to WhatsApp'),
    );
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
    return {};
  }

  private async handleWebhook(settings: ChatwootSettings, body: Data): Promise<void> {
    const instance = await this.deps.instances.find(settings.instanceId);
    if (!instance) return;
    const cwId = Number(body.id);
    const conversation = (body.conversation ?? {}) as {
      id?: number;
      contact_inbox?: { source_id?: string };
      meta?: { sender?: { phone_number?: string | null; identifier?: string | null } };
    };
    if (body.event === 'message_updated') {
      await this.deleteOnWhatsApp(instance, cwId);
      return;
    }
    if (
      body.event === 'conversation_status_changed' ||
      body.event === 'conversation_typing_on' ||
      body.event === 'conversation_typing_off'
    ) {
      await this.conversationEvent(settings, instance, body);
      return;
    }
    const chat = await this.chatOfConversation(settings, conversation);
    if (!chat) {
      this.deps.log.warn(
        { instanceId: instance.id, conversationId: conversation.id },
        'Chatwoot message in a conversation without a WhatsApp chat; ignored',
      );
      return;
    }
    // Our own post echoed back (a Chatwoot that does not return source_id): known once the post has ended.
    const posting = this.posting.get(instance.id);
    if (posting && posting.size > 0) await Promise.allSettled([...posting]);
    if (await this.deps.repo.postedByWaygate(instance.id, cwId)) return;
    // A redelivered webhook finds the claim and stops here.
    if (!(await this.deps.repo.claim(instance.id, chat.chatJid, `${AGENT_CLAIM}${cwId}`, cwId, this.deps.clock.now()))) return;
    try {
      await this.tracked(instance.id, this.sendAgentMessage(settings, instance, chat.chatJid, cwId, body));
    } catch (error) {
      // The agent sees the failed mark and the reason on the message in Chatwoot.
      const reason = error instanceof Error ? error.message : String(error);
      if (typeof conversation.id === 'number') {
        await this.client(settings)
          .setMessageStatus(conversation.id, cwId, 'failed', `not sent to WhatsApp: ${reason}`)
          .catch((statusError: unknown) =>
            this.deps.log.warn({ err: statusError, instanceId: instance.id }, 'could not mark the Chatwoot message failed'),
          );
      }
      throw error;
    }
  }

  /**
   * Work whose ids are mapped when it ends: agent sends (their SEND_MESSAGE waits in deliverMessage)
   * and posts to Chatwoot (their webhook echo waits in handleWebhook).
   */
  private async tracked(instanceId: string, run: Promise<void>, table = this.sending): Promise<void> {
    let set = table.get(instanceId);
    if (!set) table.set(instanceId, (set = new Set()));
    set.add(run);
    try {
      await run;
    } finally {
      set.delete(run);
    }
  }

  private async sendAgentMessage(settings: ChatwootSettings, instance: Instance, chatJid: string, cwId: number, body: Data): Promise<void> {
    const to = chatJid.endsWith('@g.us') ? chatJid : (jidToNumber(chatJid) ?? chatJid);
    const sender = (body.sender ?? {}) as { name?: string; available_name?: string };
    const agent = sender.available_name ?? sender.name;
    const content = typeof body.content === 'string' ? body.content.trim() : '';
    const text = content && settings.options.signAgentMessages && agent ? `*${agent}:*\n${content}` : content;
    const attachments = (Array.isArray(body.attachments) ? body.attachments : []) as {
      data_url?: string;
      file_type?: string;
      extension?: string | null;
    }[];
    // The agent replied to a message: the first WhatsApp message quotes the one it maps to (when still stored).
    const replyTo = Number((body.content_attributes as { in_reply_to?: unknown } | undefined)?.in_reply_to);
    const quotedId = Number.isInteger(replyTo) && replyTo > 0 ? (await this.deps.repo.whatsAppIdsOf(instance.id, replyTo))[0] : undefined;
    let quote: { quoted?: { id: string } } =
      quotedId && (await this.deps.messages.find(instance.id, quotedId)) ? { quoted: { id: quotedId } } : {};
    const record = async (message: SentMessage) => {
      quote = {};
      await this.deps.repo.claim(instance.id, chatJid, message.key.id, cwId, this.deps.clock.now());
    };
    let captioned = false;
    // Audio takes no caption: the text goes first, on its own.
    if (text && (attachments.length === 0 || attachments[0]?.file_type === 'audio')) {
      await record(await this.deps.sending.sendText(instance, { number: to, text, ...quote }));
      captioned = true;
    }
    for (const attachment of attachments) {
      if (!attachment.data_url) continue;
      const caption = !captioned && text ? text : undefined;
      captioned = true;
      await record(
        await this.deps.sending.sendMedia(instance, {
          number: to,
          media: { url: attachment.data_url },
          ...(attachment.file_type === 'audio'
            ? { type: 'audio' as const }
            : attachment.file_type === 'file'
              ? { type: 'document' as const }
              : {}),
          ...(caption ? { caption } : {}),
          ...quote,
        }),
      );
    }
  }

  private async chatOfConversation(
    settings: ChatwootSettings,
    conversation: {
      id?: number;
      contact_inbox?: { source_id?: string };
      meta?: { sender?: { phone_number?: string | null; identifier?: string | null } };
    },
  ): Promise<ChatMapping | undefined> {
    if (typeof conversation.id === 'number') {
      const byConversation = await this.deps.repo.chatByConversation(settings.instanceId, conversation.id);
      if (byConversation) return byConversation;
    }
    const sourceId = conversation.contact_inbox?.source_id;
    const bySource = sourceId ? await this.deps.repo.chatBySource(settings.instanceId, sourceId) : undefined;
    if (bySource) {
      if (typeof conversation.id === 'number')
        await this.deps.repo.saveChat(settings.instanceId, { ...bySource, conversationId: conversation.id }, this.deps.clock.now());
      return bySource;
    }
    // A conversation an agent started in Chatwoot with a contact that has a phone number.
    const phone = conversation.meta?.sender?.phone_number;
    const identifier = conversation.meta?.sender?.identifier;
    const chatJid =
      identifier && /@(s\.whatsapp\.net|g\.us)$/.test(identifier)
        ? identifier
        : phone && /^\+\d{7,15}$/.test(phone)
          ? `${phone.slice(1)}@s.whatsapp.net`
          : undefined;
    if (!chatJid || !sourceId || typeof conversation.id !== 'number') return undefined;
    const sender = conversation.meta?.sender as { id?: number } | undefined;
    const chat: ChatMapping = { chatJid, contactId: Number(sender?.id ?? 0), sourceId, conversationId: conversation.id };
    await this.deps.repo.saveChat(settings.instanceId, chat, this.deps.clock.now());
    return chat;
  }

  /** An agent typing (shown as "typing…" on WhatsApp), or resolving the conversation (the closing message). */
  private async conversationEvent(settings: ChatwootSettings, instance: Instance, body: Data): Promise<void> {
    // conversation_status_changed carries the conversation itself; typing events carry it under `conversation`.
    const conversation = (body.event === 'conversation_status_changed' ? body : (body.conversation ?? {})) as Parameters<
      ChatwootService['chatOfConversation']
    >[1] & { status?: string };
    const chat = await this.chatOfConversation(settings, conversation);
    if (!chat) return;
    const to = chat.chatJid.endsWith('@g.us') ? chat.chatJid : (jidToNumber(chat.chatJid) ?? chat.chatJid);
    if (body.event === 'conversation_status_changed') {
      if (conversation.status !== 'resolved' || !settings.options.closingMessage) return;
      const text = settings.options.closingMessage;
      const send = async () => {
        const sent = await this.deps.sending.sendText(instance, { number: to, text });
        // Known as Waygate's own (cw id 0): its SEND_MESSAGE is not posted back into the resolved conversation.
        await this.deps.repo.claim(instance.id, chat.chatJid, sent.key.id, 0, this.deps.clock.now());
      };
      await this.tracked(instance.id, send());
      return;
    }
    const session = await this.deps.sessions.connected(instance);
    await session.messages?.sendPresence(chat.chatJid, body.event === 'conversation_typing_on' ? 'composing' : 'paused');
  }

  private async deleteOnWhatsApp(instance: Instance, cwId: number): Promise<void> {
    const session = await this.deps.sessions.connected(instance);
    if (!session.messages) return;
    for (const id of await this.deps.repo.whatsAppIdsOf(instance.id, cwId)) {
      const stored = await this.deps.messages.find(instance.id, id);
      if (!stored) continue;
      await session.messages.delete({
        key: stored.key,
        ...(stored.participant ? { participant: stored.participant } : {}),
        message: stored.message,
        messageTimestamp: stored.messageTimestamp,
      });
    }
  }

  /** Waits for webhook work in progress (shutdown, tests). */
  async settled(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }
}

/** Why a webhook call needs no work (answered 200 all the same, so Chatwoot does not retry it). */
function whyIgnored(settings: ChatwootSettings, body: Data): string | undefined {
  const inbox = (body.inbox ?? {}) as { id?: number };
  const inboxId = inbox.id ?? (body as { inbox_id?: number }).inbox_id;
  if (inboxId !== undefined && Number(inboxId) !== settings.inboxId) return 'another inbox';
  if (body.event === 'message_updated') {
    const attributes = (body.content_attributes ?? {}) as { deleted?: boolean };
    return attributes.deleted === true && body.message_type === 'outgoing' ? undefined : 'not an agent deletion';
  }
  if (body.event === 'conversation_typing_on' || body.event === 'conversation_typing_off') {
    return (body as { is_private?: boolean }).is_private === true ? 'private typing' : undefined;
  }
  if (body.event === 'conversation_status_changed') {
    return body.status === 'resolved' && settings.options.closingMessage ? undefined : 'no closing message to send';
  }
  if (body.event !== 'message_created') return `event ${String(body.event)}`;
  if (body.message_type !== 'outgoing') return 'not an outgoing message';
  if (body.private === true) return 'private note';
  if (typeof body.source_id === 'string' && body.source_id.startsWith(SOURCE_PREFIX)) return 'posted by Waygate';
  const sender = (body.sender ?? {}) as { type?: string };
  if (sender.type !== undefined && sender.type !== 'user' && sender.type !== 'agent_bot') return 'not sent by an agent';
  if (!Number.isFinite(Number(body.id))) return 'no message id';
  const hasContent = typeof body.content === 'string' && body.content.trim() !== '';
  const hasAttachments = Array.isArray(body.attachments) && body.attachments.length > 0;
  return hasContent || hasAttachments ? undefined : 'empty message';
}

/** Constant-time comparison of two secrets of any length. */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The text Chatwoot shows for a WhatsApp message payload. */
export function textOf(message: Data): string {
  const inner = (name: string) => message[name] as Data | undefined;
  if (typeof message.conversation === 'string') return message.conversation;
  const extended = inner('extendedTextMessage');
  if (typeof extended?.text === 'string') return extended.text;
  for (const name of ['imageMessage', 'videoMessage', 'documentMessage']) {
    const media = inner(name);
    if (media) return typeof media.caption === 'string' ? media.caption : '';
  }
  if (inner('audioMessage') || inner('stickerMessage')) return '';
  const location = inner('locationMessage');
  if (location) {
    const name = typeof location.name === 'string' ? `${location.name}\n` : '';
    return `📍 ${name}https://maps.google.com/?q=${String(location.degreesLatitude)},${String(location.degreesLongitude)}`;
  }
  const contact = inner('contactMessage');
  if (contact) return `👤 ${str(contact.displayName)}\n${str(contact.vcard)}`.trim();
  const poll = inner('pollCreationMessage') ?? inner('pollCreationMessageV3');
  if (poll) return `📊 ${str(poll.name)}`;
  const kind = Object.keys(message).find((k) => k !== 'messageContextInfo');
  return kind ? `[${kind}]` : '';
}

/** The id of the message this one quotes (contextInfo.stanzaId of its content). */
function quotedIdOf(message: Data): string | undefined {
  for (const value of Object.values(message)) {
    if (value && typeof value === 'object') {
      const context = (value as { contextInfo?: { stanzaId?: unknown } }).contextInfo;
      if (typeof context?.stanzaId === 'string') return context.stanzaId;
    }
  }
  return undefined;
}

const str = (value: unknown): string => (typeof value === 'string' || typeof value === 'number' ? String(value) : '');

function extensionOf(mimetype: string): string {
  const sub = mimetype.split('/')[1]?.split(';')[0] ?? 'bin';
  return sub === 'jpeg' ? 'jpg' : sub.replace(/[^a-z0-9]/gi, '') || 'bin';
}
