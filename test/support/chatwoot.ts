/**
 * A Chatwoot contract server for tests: a real HTTP server that answers the subset of Chatwoot's
 * application API the integration uses, with Chatwoot's paths, `api_access_token` header, status
 * codes and JSON shapes, keeping its state in memory. It also sends Chatwoot-style webhooks
 * (`message_created`, `message_updated`) to an API inbox's `webhook_url`, as Chatwoot does for
 * every message of an API-channel inbox (also those created through the API: the echo the
 * integration must ignore).
 *
 * Built from Chatwoot's published API description, repository chatwoot/chatwoot, folder swagger/:
 *   - swagger/tag_groups/application_swagger.json (OpenAPI 3.0.4, info.version 1.1.0) at commit
 *     199f6d0f52210a6e21c7094bd5825fcb8a0a0504, and swagger/swagger.json at 2953efeb3a900e0e691035d98556418b0404126f;
 *   - swagger/paths/application/{contacts,conversation,inboxes}/*.yml and
 *     swagger/definitions/request/inbox/channels/create_api_channel_payload.yml (channel {type: api, webhook_url});
 *   - VERSION_CW of that snapshot: Chatwoot 4.14.2.
 * Webhook payloads follow Chatwoot's Message#webhook_data (event, id, content, message_type as a
 * string, private, source_id, sender {type: user}, conversation {contact_inbox, meta.sender},
 * inbox, account, attachments [{file_type, data_url}]) and, when the inbox has a signing secret,
 * `X-Chatwoot-Signature: sha256=<hex HMAC-SHA256 of "{timestamp}.{body}">` with `X-Chatwoot-Timestamp`.
 * Attachment `data_url`s answer with a redirect to the storage URL, as Chatwoot's Active Storage does.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CwContactInbox {
  source_id: string;
  inbox_id: number;
}

export interface CwContact {
  id: number;
  name: string;
  phone_number: string | null;
  identifier: string | null;
  email: string | null;
  avatar_url: string;
  custom_attributes: Record<string, unknown>;
  contact_inboxes: CwContactInbox[];
}

export interface CwConversation {
  id: number;
  account_id: number;
  inbox_id: number;
  contact_id: number;
  source_id: string;
  status: 'open' | 'resolved' | 'pending' | 'snoozed';
  created_at: number;
}

export interface CwAttachment {
  id: number;
  file_type: string;
  mimetype: string;
  file_name: string;
  bytes: Buffer;
}

export interface CwMessage {
  id: number;
  conversation_id: number;
  inbox_id: number;
  content: string | null;
  /** 0 incoming, 1 outgoing, 2 activity (as the API answers); webhooks send the name. */
  message_type: 0 | 1 | 2;
  private: boolean;
  source_id: string | null;
  content_attributes: Record<string, unknown>;
  sender_type: 'Contact' | 'User';
  sender_id: number;
  created_at: number;
  attachments: CwAttachment[];
  deleted: boolean;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  external_error?: string;
}

type NewCwMessage = Omit<CwMessage, 'id' | 'conversation_id' | 'inbox_id' | 'created_at' | 'deleted' | 'status'>;

export interface CwInbox {
  id: number;
  name: string;
  channel_type: string;
  webhook_url: string | null;
  /** Signs webhooks when set (X-Chatwoot-Signature). */
  secret: string | null;
}

export interface WebhookDelivery {
  url: string;
  status: number | null;
  body: any;
}

const TYPES = ['incoming', 'outgoing', 'activity'] as const;

export class ChatwootContract {
  readonly accountId = 7;
  readonly token = 'cw-token-0123456789abcdef';
  readonly inboxes: CwInbox[] = [];
  readonly contacts: CwContact[] = [];
  readonly conversations: CwConversation[] = [];
  readonly messages: CwMessage[] = [];
  readonly webhooks: WebhookDelivery[] = [];
  /** Every API request, as `METHOD path`. */
  readonly requests: string[] = [];
  /** While true every API request answers 503 (Chatwoot down). */
  down = false;
  /** False: webhooks leave out `source_id`, as some Chatwoot versions do for API messages. */
  echoSourceId = true;
  /** Messages to store and then answer 503 to (Chatwoot failing after its write: the retry must not double it). */
  failAfterCreate = 0;
  url = '';
  private seq = 100;
  private server: http.Server;
  private readonly pendingHooks = new Set<Promise<void>>();

  constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.handle(req, Buffer.concat(chunks)).then(
          ({ status, body, headers }) => {
            res.writeHead(status, { ...(body instanceof Buffer ? {} : { 'content-type': 'application/json; charset=utf-8' }), ...headers });
            res.end(body instanceof Buffer ? body : JSON.stringify(body));
          },
          (error: unknown) => {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: String(error) }));
          },
        );
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.pendingHooks]);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** An existing inbox, as a Chatwoot admin would have created it. */
  addInbox(name: string, webhookUrl: string | null = null, secret: string | null = null): CwInbox {
    const inbox = { id: this.next(), name, channel_type: 'Channel::Api', webhook_url: webhookUrl, secret };
    this.inboxes.push(inbox);
    return inbox;
  }

  contactByPhone(phone: string): CwContact[] {
    return this.contacts.filter((c) => c.phone_number === phone);
  }

  conversationsOf(contactId: number): CwConversation[] {
    return this.conversations.filter((c) => c.contact_id === contactId);
  }

  messagesOf(conversationId: number): CwMessage[] {
    return this.messages.filter((m) => m.conversation_id === conversationId && !m.deleted);
  }

  /** An admin deletes a contact (with its conversations and messages) in Chatwoot. */
  deleteContact(contactId: number): void {
    const conversations = new Set(this.conversationsOf(contactId).map((c) => c.id));
    this.contacts.splice(
      this.contacts.findIndex((c) => c.id === contactId),
      1,
    );
    for (let i = this.conversations.length - 1; i >= 0; i -= 1)
      if (conversations.has(this.conversations[i]!.id)) this.conversations.splice(i, 1);
    for (const message of this.messages) if (conversations.has(message.conversation_id)) message.deleted = true;
  }

  resolve(conversationId: number): void {
    this.conversation(conversationId)!.status = 'resolved';
  }

  /**
   * An agent writes in a conversation (the Chatwoot UI): the message is stored and the inbox's
   * webhook receives `message_created`. Resolves with the webhook's delivery.
   */
  async agentReply(
    conversationId: number,
    reply: {
      content?: string;
      private?: boolean;
      agentName?: string;
      inReplyTo?: number;
      attachments?: { bytes: Buffer; mimetype: string; fileName: string }[];
    },
  ): Promise<{ message: CwMessage; delivery: WebhookDelivery | undefined }> {
    const conversation = this.conversation(conversationId)!;
    const message = this.addMessage(conversation, {
      content: reply.content ?? null,
      message_type: 1,
      private: reply.private ?? false,
      source_id: null,
      content_attributes: reply.inReplyTo ? { in_reply_to: reply.inReplyTo } : {},
      sender_type: 'User',
      sender_id: 1,
      attachments: (reply.attachments ?? []).map((a) => ({
        id: this.next(),
        file_type: fileType(a.mimetype),
        mimetype: a.mimetype,
        file_name: a.fileName,
        bytes: a.bytes,
      })),
    });
    const delivery = await this.sendWebhook('message_created', message, reply.agentName ?? 'Agent Smith');
    return { message, delivery };
  }

  /** An agent deletes a message in the Chatwoot UI: `message_updated` with `content_attributes.deleted`. */
  async agentDelete(messageId: number): Promise<WebhookDelivery | undefined> {
    const message = this.messages.find((m) => m.id === messageId)!;
    message.deleted = true;
    message.content = 'This message was deleted';
    message.content_attributes = { ...message.content_attributes, deleted: true };
    return this.sendWebhook('message_updated', message, 'Agent Smith');
  }

  /** An agent resolves the conversation: `conversation_status_changed`. */
  async agentResolve(conversationId: number): Promise<WebhookDelivery | undefined> {
    const conversation = this.conversation(conversationId)!;
    conversation.status = 'resolved';
    return this.sendConversationWebhook(conversation, {
      event: 'conversation_status_changed',
      ...this.conversationWebhookData(conversation),
      changed_attributes: [{ status: { previous_value: 'open', current_value: 'resolved' } }],
    });
  }

  /** An agent starts or stops typing in the reply box: `conversation_typing_on` / `conversation_typing_off`. */
  async agentTyping(conversationId: number, on: boolean): Promise<WebhookDelivery | undefined> {
    const conversation = this.conversation(conversationId)!;
    return this.sendConversationWebhook(conversation, {
      event: on ? 'conversation_typing_on' : 'conversation_typing_off',
      conversation: this.conversationWebhookData(conversation),
      user: { id: 1, name: 'Agent Smith', type: 'user' },
      is_private: false,
    });
  }

  private conversationWebhookData(conversation: CwConversation) {
    const contact = this.contacts.find((c) => c.id === conversation.contact_id)!;
    return {
      id: conversation.id,
      inbox_id: conversation.inbox_id,
      status: conversation.status,
      contact_inbox: { contact_id: contact.id, inbox_id: conversation.inbox_id, source_id: conversation.source_id },
      meta: {
        sender: { id: contact.id, name: contact.name, phone_number: contact.phone_number, identifier: contact.identifier, type: 'contact' },
      },
      messages: [],
    };
  }

  private async sendConversationWebhook(conversation: CwConversation, body: Record<string, unknown>): Promise<WebhookDelivery | undefined> {
    const inbox = this.inboxes.find((i) => i.id === conversation.inbox_id);
    if (!inbox?.webhook_url) return undefined;
    const delivery: WebhookDelivery = { url: inbox.webhook_url, status: null, body };
    delivery.status = await this.postWebhook(inbox.webhook_url, body, inbox.secret ? { secret: inbox.secret } : {}).catch(() => null);
    this.webhooks.push(delivery);
    return delivery;
  }

  /** Posts a raw webhook body to a URL, signed like Chatwoot when `secret` is given. */
  async postWebhook(
    url: string,
    body: unknown,
    options: { secret?: string; timestamp?: number; signature?: string } = {},
  ): Promise<number> {
    const text = JSON.stringify(body);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (options.secret) {
      const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
      headers['x-chatwoot-timestamp'] = timestamp;
      headers['x-chatwoot-signature'] =
        options.signature ?? `sha256=${createHmac('sha256', options.secret).update(`${timestamp}.${text}`).digest('hex')}`;
    }
    const response = await fetch(url, { method: 'POST', headers, body: text });
    await response.arrayBuffer();
    return response.status;
  }

  /** Waits until the webhooks fired so far were answered. */
  async settled(): Promise<void> {
    while (this.pendingHooks.size > 0) await Promise.allSettled([...this.pendingHooks]);
  }

  webhookBody(event: string, message: CwMessage, agentName = 'Agent Smith'): Record<string, unknown> {
    const conversation = this.conversation(message.conversation_id)!;
    const contact = this.contacts.find((c) => c.id === conversation.contact_id)!;
    const inbox = this.inboxes.find((i) => i.id === conversation.inbox_id)!;
    return {
      event,
      id: message.id,
      content: message.content,
      created_at: new Date(message.created_at * 1000).toISOString(),
      message_type: TYPES[message.message_type],
      content_type: 'text',
      content_attributes: message.content_attributes,
      source_id: this.echoSourceId ? message.source_id : null,
      private: message.private,
      additional_attributes: {},
      sender:
        message.sender_type === 'User'
          ? { id: message.sender_id, name: agentName, available_name: agentName, email: 'agent@example.com', type: 'user' }
          : { id: contact.id, name: contact.name, phone_number: contact.phone_number, identifier: contact.identifier, type: 'contact' },
      account: { id: this.accountId, name: 'Acme' },
      inbox: { id: inbox.id, name: inbox.name },
      conversation: {
        id: conversation.id,
        inbox_id: conversation.inbox_id,
        status: conversation.status,
        contact_inbox: { contact_id: contact.id, inbox_id: inbox.id, source_id: conversation.source_id },
        meta: {
          sender: {
            id: contact.id,
            name: contact.name,
            phone_number: contact.phone_number,
            identifier: contact.identifier,
            type: 'contact',
          },
        },
      },
      attachments: message.attachments.map((a) => this.attachmentView(a, message)),
    };
  }

  // --- the API ---

  private async handle(
    req: http.IncomingMessage,
    raw: Buffer,
  ): Promise<{ status: number; body: unknown; headers?: Record<string, string> }> {
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    const path = url.pathname;
    // Active Storage: the data_url redirects to the storage service, which serves the bytes without a token.
    let m = /^\/rails\/active_storage\/blobs\/redirect\/(\d+)\/.+$/.exec(path);
    if (m) return { status: 302, body: Buffer.alloc(0), headers: { location: `${this.url}/storage/${m[1]}` } };
    m = /^\/storage\/(\d+)$/.exec(path);
    if (m) {
      const attachment = this.messages.flatMap((x) => x.attachments).find((a) => a.id === Number(m![1]));
      return attachment
        ? { status: 200, body: attachment.bytes, headers: { 'content-type': attachment.mimetype } }
        : { status: 404, body: { error: 'not found' } };
    }
    this.requests.push(`${method} ${path}`);
    if (this.down) return { status: 503, body: { error: 'Service Unavailable' } };
    if (req.headers.api_access_token !== this.token)
      return { status: 401, body: { error: 'You need to sign in or sign up before continuing.' } };
    const prefix = `/api/v1/accounts/${this.accountId}`;
    if (!path.startsWith(prefix)) return { status: 404, body: { error: 'Resource could not be found' } };
    const route = path.slice(prefix.length).replace(/\/$/, '');
    const json = (): any =>
      raw.length > 0 && String(req.headers['content-type']).startsWith('application/json') ? JSON.parse(raw.toString('utf8')) : {};

    if (method === 'GET' && route === '/inboxes') return ok({ payload: this.inboxes.map((i) => this.inboxView(i)) });
    if (method === 'POST' && route === '/inboxes') {
      const body = json();
      if (typeof body.name !== 'string' || body.channel?.type !== 'api') return unprocessable('Channel type is not supported');
      const inbox = this.addInbox(body.name, body.channel.webhook_url ?? null);
      return ok(this.inboxView(inbox));
    }
    m = /^\/inboxes\/(\d+)$/.exec(route);
    if (m && method === 'GET') {
      const inbox = this.inboxes.find((i) => i.id === Number(m![1]));
      return inbox ? ok(this.inboxView(inbox)) : notFound();
    }
    if (m && method === 'PATCH') {
      const inbox = this.inboxes.find((i) => i.id === Number(m![1]));
      if (!inbox) return notFound();
      const body = json();
      if (typeof body.name === 'string') inbox.name = body.name;
      if (body.channel && 'webhook_url' in body.channel) inbox.webhook_url = body.channel.webhook_url;
      return ok(this.inboxView(inbox));
    }
    if (method === 'GET' && route === '/contacts/search') {
      const q = (url.searchParams.get('q') ?? '').toLowerCase();
      const found =
        q === ''
          ? []
          : this.contacts.filter((c) => [c.name, c.phone_number, c.identifier, c.email].some((v) => v?.toLowerCase().includes(q)));
      return ok({ meta: { count: found.length, current_page: 1 }, payload: found.slice(0, 15).map((c) => this.contactView(c)) });
    }
    if (method === 'POST' && route === '/contacts') {
      const body = json();
      const inbox = this.inboxes.find((i) => i.id === Number(body.inbox_id));
      if (!inbox) return unprocessable('Inbox must exist');
      if (body.identifier && this.contacts.some((c) => c.identifier === body.identifier))
        return unprocessable('Identifier has already been taken', ['identifier']);
      if (body.phone_number && this.contacts.some((c) => c.phone_number === body.phone_number))
        return unprocessable('Phone number has already been taken', ['phone_number']);
      if (body.phone_number && !/^\+[1-9]\d{1,14}$/.test(body.phone_number))
        return unprocessable('Phone number should be in e164 format', ['phone_number']);
      const contact: CwContact = {
        id: this.next(),
        name: body.name ?? '',
        phone_number: body.phone_number ?? null,
        identifier: body.identifier ?? null,
        email: body.email ?? null,
        avatar_url: body.avatar_url ?? '',
        custom_attributes: body.custom_attributes ?? {},
        contact_inboxes: [],
      };
      // An API inbox gives the contact inbox a generated source id when none is given.
      const contactInbox = { source_id: body.source_id ?? `gen-${this.next()}`, inbox_id: inbox.id };
      contact.contact_inboxes.push(contactInbox);
      this.contacts.push(contact);
      return ok({
        payload: { contact: this.contactView(contact), contact_inbox: { source_id: contactInbox.source_id, inbox: this.inboxView(inbox) } },
      });
    }
    m = /^\/contacts\/(\d+)\/(conversations|contact_inboxes)$/.exec(route);
    if (m) {
      const contact = this.contacts.find((c) => c.id === Number(m![1]));
      if (!contact) return notFound();
      if (m[2] === 'conversations' && method === 'GET') {
        return ok({ payload: this.conversationsOf(contact.id).map((c) => this.conversationView(c)) });
      }
      if (m[2] === 'contact_inboxes' && method === 'POST') {
        const body = json();
        const inbox = this.inboxes.find((i) => i.id === Number(body.inbox_id));
        if (!inbox) return unprocessable('Inbox must exist');
        const sourceId = body.source_id ?? `gen-${this.next()}`;
        let contactInbox = contact.contact_inboxes.find((ci) => ci.inbox_id === inbox.id && ci.source_id === sourceId);
        if (!contactInbox) {
          contactInbox = { source_id: sourceId, inbox_id: inbox.id };
          contact.contact_inboxes.push(contactInbox);
        }
        return ok({ source_id: contactInbox.source_id, inbox: this.inboxView(inbox) });
      }
    }
    if (method === 'POST' && route === '/conversations') {
      const body = json();
      const contact = this.contacts.find((c) => c.id === Number(body.contact_id));
      const inbox = this.inboxes.find((i) => i.id === Number(body.inbox_id));
      if (!contact || !inbox || !contact.contact_inboxes.some((ci) => ci.inbox_id === inbox.id && ci.source_id === body.source_id)) {
        return unprocessable('Contact inbox must exist');
      }
      const conversation: CwConversation = {
        id: this.next(),
        account_id: this.accountId,
        inbox_id: inbox.id,
        contact_id: contact.id,
        source_id: body.source_id,
        status: body.status ?? 'open',
        created_at: Math.floor(Date.now() / 1000),
      };
      this.conversations.push(conversation);
      return ok(this.conversationView(conversation));
    }
    m = /^\/conversations\/(\d+)(\/toggle_status|\/messages(?:\/(\d+))?)?$/.exec(route);
    if (m) {
      const conversation = this.conversation(Number(m[1]));
      if (!conversation) return notFound();
      if (!m[2] && method === 'GET') return ok(this.conversationView(conversation));
      if (m[2] === '/toggle_status' && method === 'POST') {
        const body = json();
        conversation.status = body.status ?? (conversation.status === 'open' ? 'resolved' : 'open');
        return ok({ meta: {}, payload: { success: true, current_status: conversation.status, conversation_id: conversation.id } });
      }
      if (m[2] === '/messages' && method === 'GET') {
        return ok({ meta: { contact: {}, assignee: {} }, payload: this.messagesOf(conversation.id).map((x) => this.messageView(x)) });
      }
      if (m[2] === '/messages' && method === 'POST') {
        const body = await this.messageBody(req, raw);
        if (body === undefined) return unprocessable('content or attachments required');
        const message = this.addMessage(conversation, body);
        void this.sendWebhook('message_created', message);
        if (this.failAfterCreate > 0) {
          this.failAfterCreate -= 1;
          return { status: 503, body: { error: 'Service Unavailable' } };
        }
        return ok(this.messageView(message));
      }
      if (m[3] && method === 'PATCH') {
        // update-message-status: API channel inboxes only; a read message stays read.
        const message = this.messages.find((x) => x.id === Number(m[3]) && x.conversation_id === conversation.id);
        if (!message) return notFound();
        const body = json();
        if (!['sent', 'delivered', 'read', 'failed'].includes(body.status)) return unprocessable('status is not valid');
        if (!(message.status === 'read' && body.status === 'delivered')) message.status = body.status;
        if (body.status === 'failed' && typeof body.external_error === 'string') message.external_error = body.external_error;
        return ok(this.messageView(message));
      }
      if (m[3] && method === 'DELETE') {
        const message = this.messages.find((x) => x.id === Number(m[3]) && x.conversation_id === conversation.id);
        if (!message) return notFound();
        message.deleted = true;
        message.content = 'This message was deleted';
        message.content_attributes = { ...message.content_attributes, deleted: true };
        return ok(this.messageView(message));
      }
    }
    return notFound();
  }

  private async messageBody(req: http.IncomingMessage, raw: Buffer): Promise<NewCwMessage | undefined> {
    const type = String(req.headers['content-type'] ?? '');
    let fields: Record<string, unknown>;
    const attachments: CwAttachment[] = [];
    if (type.startsWith('multipart/form-data')) {
      const form = await new Response(raw, { headers: { 'content-type': type } }).formData();
      fields = {};
      for (const [name, value] of form.entries()) {
        if (name === 'attachments[]' && typeof value !== 'string') {
          const bytes = Buffer.from(await value.arrayBuffer());
          attachments.push({ id: this.next(), file_type: fileType(value.type), mimetype: value.type, file_name: value.name, bytes });
        } else if (typeof value === 'string') {
          fields[name] = name === 'private' ? value === 'true' : name === 'content_attributes' ? JSON.parse(value) : value;
        }
      }
    } else {
      fields = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : {};
    }
    const content = typeof fields.content === 'string' ? fields.content : null;
    if (content === null && attachments.length === 0) return undefined;
    return {
      content,
      message_type: fields.message_type === 'outgoing' ? 1 : 0,
      private: fields.private === true,
      source_id: typeof fields.source_id === 'string' ? fields.source_id : null,
      content_attributes: (fields.content_attributes as Record<string, unknown> | undefined) ?? {},
      sender_type: fields.message_type === 'outgoing' ? 'User' : 'Contact',
      sender_id: 1,
      attachments,
    };
  }

  private addMessage(conversation: CwConversation, body: NewCwMessage): CwMessage {
    const message: CwMessage = {
      ...body,
      id: this.next(),
      conversation_id: conversation.id,
      inbox_id: conversation.inbox_id,
      created_at: Math.floor(Date.now() / 1000),
      deleted: false,
      status: 'sent',
    };
    this.messages.push(message);
    // Chatwoot reopens a resolved conversation when the contact writes in it.
    if (body.message_type === 0 && conversation.status === 'resolved') conversation.status = 'open';
    return message;
  }

  private sendWebhook(event: string, message: CwMessage, agentName?: string): Promise<WebhookDelivery | undefined> {
    const inbox = this.inboxes.find((i) => i.id === message.inbox_id);
    if (!inbox?.webhook_url) return Promise.resolve(undefined);
    const url = inbox.webhook_url;
    const body = this.webhookBody(event, message, agentName);
    const run = (async () => {
      const delivery: WebhookDelivery = { url, status: null, body };
      try {
        delivery.status = await this.postWebhook(url, body, inbox.secret ? { secret: inbox.secret } : {});
      } catch {
        delivery.status = null;
      }
      this.webhooks.push(delivery);
      return delivery;
    })();
    const tracked = run.then(() => undefined);
    this.pendingHooks.add(tracked);
    void tracked.finally(() => this.pendingHooks.delete(tracked));
    return run;
  }

  private conversation(id: number): CwConversation | undefined {
    return this.conversations.find((c) => c.id === id);
  }

  private next(): number {
    this.seq += 1;
    return this.seq;
  }

  private inboxView(inbox: CwInbox) {
    return {
      id: inbox.id,
      name: inbox.name,
      channel_type: inbox.channel_type,
      webhook_url: inbox.webhook_url,
      account_id: this.accountId,
      avatar_url: '',
      greeting_enabled: false,
    };
  }

  private contactView(contact: CwContact) {
    return {
      id: contact.id,
      name: contact.name,
      phone_number: contact.phone_number,
      identifier: contact.identifier,
      email: contact.email,
      thumbnail: contact.avatar_url,
      custom_attributes: contact.custom_attributes,
      additional_attributes: {},
      availability_status: 'offline',
      contact_inboxes: contact.contact_inboxes.map((ci) => ({
        source_id: ci.source_id,
        inbox: this.inboxView(this.inboxes.find((i) => i.id === ci.inbox_id)!),
      })),
    };
  }

  private conversationView(conversation: CwConversation) {
    const contact = this.contacts.find((c) => c.id === conversation.contact_id)!;
    return {
      id: conversation.id,
      account_id: conversation.account_id,
      inbox_id: conversation.inbox_id,
      status: conversation.status,
      contact_inbox: { source_id: conversation.source_id },
      created_at: conversation.created_at,
      meta: {
        sender: { id: contact.id, name: contact.name, phone_number: contact.phone_number, identifier: contact.identifier },
        assignee: null,
      },
      messages: [],
    };
  }

  private messageView(message: CwMessage) {
    return {
      id: message.id,
      content: message.content,
      account_id: this.accountId,
      inbox_id: message.inbox_id,
      conversation_id: message.conversation_id,
      message_type: message.message_type,
      created_at: message.created_at,
      private: message.private,
      status: message.status,
      source_id: message.source_id,
      content_type: 'text',
      content_attributes: message.content_attributes,
      sender_type: message.sender_type,
      sender_id: message.sender_id,
      attachments: message.attachments.map((a) => this.attachmentView(a, message)),
    };
  }

  private attachmentView(attachment: CwAttachment, message: CwMessage) {
    return {
      id: attachment.id,
      message_id: message.id,
      file_type: attachment.file_type,
      account_id: this.accountId,
      extension: attachment.file_name.split('.').pop() ?? null,
      data_url: `${this.url}/rails/active_storage/blobs/redirect/${attachment.id}/${encodeURIComponent(attachment.file_name)}`,
      thumb_url: '',
      file_size: attachment.bytes.length,
    };
  }
}

function fileType(mimetype: string): string {
  if (mimetype.startsWith('image/')) return 'image';
  if (mimetype.startsWith('video/')) return 'video';
  if (mimetype.startsWith('audio/')) return 'audio';
  return 'file';
}

const ok = (body: unknown) => ({ status: 200, body });
const notFound = () => ({ status: 404, body: { error: 'Resource could not be found' } });
const unprocessable = (message: string, attributes: string[] = []) => ({ status: 422, body: { message, attributes } });

export async function startChatwoot(): Promise<ChatwootContract> {
  const server = new ChatwootContract();
  await server.start();
  return server;
}
