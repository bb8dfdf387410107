/** The Chatwoot integration's tables: settings per instance, chat mappings, message id mappings. */
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';

export interface ChatwootOptions {
  signAgentMessages: boolean;
  reopenConversation: boolean;
  conversationPending: boolean;
  ignoreGroups: boolean;
  ignore: string[];
  /** Sent to the WhatsApp chat when an agent resolves its conversation; empty sends nothing. */
  closingMessage: string;
}

export interface ChatwootSettings {
  instanceId: string;
  baseUrl: string;
  accountId: number;
  apiToken: string;
  inboxId: number;
  inboxName: string;
  webhookSecret: string;
  signingSecret: string | null;
  waygateUrl: string | null;
  options: ChatwootOptions;
  createdAt: number;
  updatedAt: number;
}

export interface ChatMapping {
  chatJid: string;
  contactId: number;
  sourceId: string;
  conversationId: number | null;
}

export interface MessageMapping {
  chatJid: string;
  waMessageId: string;
  cwMessageId: number | null;
}

/** PostgreSQL returns bigint columns as strings. */
const num = (value: unknown): number => Number(value);
const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export class ChatwootRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async all(): Promise<ChatwootSettings[]> {
    const rows = await this.db.selectFrom('chatwoot_configs').selectAll().execute();
    return rows.map(toSettings);
  }

  async find(instanceId: string): Promise<ChatwootSettings | undefined> {
    const row = await this.db.selectFrom('chatwoot_configs').selectAll().where('instance_id', '=', instanceId).executeTakeFirst();
    return row ? toSettings(row) : undefined;
  }

  async save(settings: ChatwootSettings): Promise<void> {
    const row = {
      instance_id: settings.instanceId,
      base_url: settings.baseUrl,
      account_id: settings.accountId,
      api_token: settings.apiToken,
      inbox_id: settings.inboxId,
      inbox_name: settings.inboxName,
      webhook_secret: settings.webhookSecret,
      signing_secret: settings.signingSecret,
      waygate_url: settings.waygateUrl,
      options: JSON.stringify(settings.options),
      created_at: settings.createdAt,
      updated_at: settings.updatedAt,
    };
    const { instance_id: _id, created_at: _created, ...changes } = row;
    await this.db
      .insertInto('chatwoot_configs')
      .values(row)
      .onConflict((oc) => oc.column('instance_id').doUpdateSet(changes))
      .execute();
  }

  /** Forgets the settings and every mapping of the instance. */
  async delete(instanceId: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('chatwoot_messages').where('instance_id', '=', instanceId).execute();
      await tx.deleteFrom('chatwoot_chats').where('instance_id', '=', instanceId).execute();
      const result = await tx.deleteFrom('chatwoot_configs').where('instance_id', '=', instanceId).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /** Mappings point at one inbox: a new inbox starts them afresh. */
  async forgetMappings(instanceId: string): Promise<void> {
    await this.db.deleteFrom('chatwoot_messages').where('instance_id', '=', instanceId).execute();
    await this.db.deleteFrom('chatwoot_chats').where('instance_id', '=', instanceId).execute();
  }

  async forgetChat(instanceId: string, chatJid: string): Promise<void> {
    await this.db.deleteFrom('chatwoot_chats').where('instance_id', '=', instanceId).where('chat_jid', '=', chatJid).execute();
  }

  async chat(instanceId: string, chatJid: string): Promise<ChatMapping | undefined> {
    const row = await this.db
      .selectFrom('chatwoot_chats')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('chat_jid', '=', chatJid)
      .executeTakeFirst();
    return row ? toChat(row) : undefined;
  }

  async chatByConversation(instanceId: string, conversationId: number): Promise<ChatMapping | undefined> {
    const row = await this.db
      .selectFrom('chatwoot_chats')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('conversation_id', '=', conversationId)
      .executeTakeFirst();
    return row ? toChat(row) : undefined;
  }

  async chatBySource(instanceId: string, sourceId: string): Promise<ChatMapping | undefined> {
    const row = await this.db
      .selectFrom('chatwoot_chats')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('source_id', '=', sourceId)
      .executeTakeFirst();
    return row ? toChat(row) : undefined;
  }

  async saveChat(instanceId: string, chat: ChatMapping, now: number): Promise<void> {
    const row = {
      instance_id: instanceId,
      chat_jid: chat.chatJid,
      contact_id: chat.contactId,
      source_id: chat.sourceId,
      conversation_id: chat.conversationId,
      updated_at: now,
    };
    await this.db
      .insertInto('chatwoot_chats')
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(['instance_id', 'chat_jid'])
          .doUpdateSet({ contact_id: row.contact_id, source_id: row.source_id, conversation_id: row.conversation_id, updated_at: now }),
      )
      .execute();
  }

  async byWhatsAppId(instanceId: string, waMessageId: string): Promise<MessageMapping | undefined> {
    const row = await this.db
      .selectFrom('chatwoot_messages')
      .select(['chat_jid', 'wa_message_id', 'cw_message_id'])
      .where('instance_id', '=', instanceId)
      .where('wa_message_id', '=', waMessageId)
      .executeTakeFirst();
    return row ? toMessage(row) : undefined;
  }

  /**
   * Claims a WhatsApp message before it is posted to Chatwoot, or (`cw:<id>`) an agent message
   * before it is sent to WhatsApp: the unique index makes a second claim (a retry, a redelivered
   * webhook) fail. Returns false when it was claimed before.
   */
  async claim(instanceId: string, chatJid: string, waMessageId: string, cwMessageId: number | null, now: number): Promise<boolean> {
    const result = await this.db
      .insertInto('chatwoot_messages')
      .values({ instance_id: instanceId, chat_jid: chatJid, wa_message_id: waMessageId, cw_message_id: cwMessageId, created_at: now })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Completes the claim of a WhatsApp message with the id Chatwoot gave it. */
  async posted(instanceId: string, waMessageId: string, cwMessageId: number): Promise<void> {
    await this.db
      .updateTable('chatwoot_messages')
      .set({ cw_message_id: cwMessageId })
      .where('instance_id', '=', instanceId)
      .where('wa_message_id', '=', waMessageId)
      .execute();
  }

  /** Is this Chatwoot message one Waygate posted (from WhatsApp)? */
  async postedByWaygate(instanceId: string, cwMessageId: number): Promise<boolean> {
    const row = await this.db
      .selectFrom('chatwoot_messages')
      .select('wa_message_id')
      .where('instance_id', '=', instanceId)
      .where('cw_message_id', '=', cwMessageId)
      .executeTakeFirst();
    // Agent messages have a `cw:` claim row; Waygate's posts have only WhatsApp ids.
    if (!row) return false;
    const claim = await this.db
      .selectFrom('chatwoot_messages')
      .select('id')
      .where('instance_id', '=', instanceId)
      .where('wa_message_id', '=', `${AGENT_CLAIM}${cwMessageId}`)
      .executeTakeFirst();
    return claim === undefined;
  }

  /** The WhatsApp messages an agent message became (claims excluded). */
  async whatsAppIdsOf(instanceId: string, cwMessageId: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('chatwoot_messages')
      .select('wa_message_id')
      .where('instance_id', '=', instanceId)
      .where('cw_message_id', '=', cwMessageId)
      .execute();
    return rows.map((r) => r.wa_message_id).filter((id) => !id.startsWith(AGENT_CLAIM));
  }
}

/** Prefix of the claim row of an agent message (never a WhatsApp id). */
export const AGENT_CLAIM = 'cw:';

function toSettings(row: Database['chatwoot_configs']): ChatwootSettings {
  return {
    instanceId: row.instance_id,
    baseUrl: row.base_url,
    accountId: num(row.account_id),
    apiToken: row.api_token,
    inboxId: num(row.inbox_id),
    inboxName: row.inbox_name,
    webhookSecret: row.webhook_secret,
    signingSecret: row.signing_secret,
    waygateUrl: row.waygate_url,
    options: JSON.parse(row.options) as ChatwootOptions,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

function toChat(row: { chat_jid: string; contact_id: unknown; source_id: string; conversation_id: unknown }): ChatMapping {
  return { chatJid: row.chat_jid, contactId: num(row.contact_id), sourceId: row.source_id, conversationId: numOrNull(row.conversation_id) };
}

function toMessage(row: { chat_jid: string; wa_message_id: string; cw_message_id: unknown }): MessageMapping {
  return { chatJid: row.chat_jid, waMessageId: row.wa_message_id, cwMessageId: numOrNull(row.cw_message_id) };
}
