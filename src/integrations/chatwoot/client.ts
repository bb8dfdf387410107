/**
 * The slice of Chatwoot's application API the integration uses (docs/chatwoot.md names the
 * version): `/api/v1/accounts/{account_id}/...` with the `api_access_token` header. Every call has
 * a time limit; failures throw ChatwootApiError with the HTTP status (null: no answer).
 */
import type { Dispatcher } from 'undici';

export class ChatwootApiError extends Error {
  constructor(
    message: string,
    /** HTTP status of Chatwoot's answer; null when it did not answer (down, refused, timed out). */
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'ChatwootApiError';
  }

  /** Worth retrying later: no answer, 5xx, 429, or the token/account being refused (fixable by the user). */
  get transient(): boolean {
    return this.status === null || this.status >= 500 || this.status === 429 || this.status === 401 || this.status === 403;
  }
}

export interface ChatwootTarget {
  baseUrl: string;
  accountId: number;
  apiToken: string;
}

export interface CwInbox {
  id: number;
  name: string;
  channel_type?: string;
  webhook_url?: string | null;
}

export interface CwContact {
  id: number;
  name?: string;
  phone_number?: string | null;
  identifier?: string | null;
  contact_inboxes?: { source_id: string; inbox?: { id: number } }[];
}

export interface CwConversation {
  id: number;
  inbox_id: number;
  status: string;
}

export interface CwMessage {
  id: number;
  source_id?: string | null;
}

export interface NewMessage {
  content: string;
  messageType: 'incoming' | 'outgoing';
  sourceId: string;
  contentAttributes?: Record<string, unknown>;
  attachment?: { data: Buffer; mimetype: string; fileName: string };
}

const TIMEOUT_MS = 15_000;

export class ChatwootClient {
  constructor(
    private readonly target: ChatwootTarget,
    private readonly userAgent: string,
    /** Connections to public addresses only (checked at connect time), unless private targets are allowed. */
    private readonly dispatcher?: Dispatcher,
  ) {}

  async listInboxes(): Promise<CwInbox[]> {
    return (await this.call<{ payload: CwInbox[] }>('GET', '/inboxes')).payload;
  }

  getInbox(id: number): Promise<CwInbox> {
    return this.call('GET', `/inboxes/${id}`);
  }

  /** An API-channel inbox whose webhook_url points back at Waygate. */
  createApiInbox(name: string, webhookUrl: string): Promise<CwInbox> {
    return this.call('POST', '/inboxes', { name, channel: { type: 'api', webhook_url: webhookUrl } });
  }

  /** Points an API inbox's webhook_url at Waygate (update_api_channel_payload). */
  updateInboxWebhook(id: number, webhookUrl: string): Promise<CwInbox> {
    return this.call('PATCH', `/inboxes/${id}`, { channel: { webhook_url: webhookUrl } });
  }

  async searchContacts(q: string): Promise<CwContact[]> {
    return (await this.call<{ payload: CwContact[] }>('GET', `/contacts/search?q=${encodeURIComponent(q)}&include_contact_inboxes=true`))
      .payload;
  }

  async createContact(body: {
    inbox_id: number;
    name: string;
    phone_number?: string;
    identifier: string;
    avatar_url?: string;
  }): Promise<{ contact: CwContact; sourceId: string }> {
    const reply = await this.call<{ payload: { contact: CwContact; contact_inbox?: { source_id: string } } }>('POST', '/contacts', body);
    const sourceId = reply.payload.contact_inbox?.source_id;
    if (!sourceId) throw new ChatwootApiError('Chatwoot created the contact without a contact inbox', 422);
    return { contact: reply.payload.contact, sourceId };
  }

  async createContactInbox(contactId: number, inboxId: number, sourceId: string): Promise<string> {
    return (
      await this.call<{ source_id: string }>('POST', `/contacts/${contactId}/contact_inboxes`, { inbox_id: inboxId, source_id: sourceId })
    ).source_id;
  }

  async contactConversations(contactId: number): Promise<CwConversation[]> {
    return (await this.call<{ payload: CwConversation[] }>('GET', `/contacts/${contactId}/conversations`)).payload;
  }

  createConversation(body: {
    source_id: string;
    inbox_id: number;
    contact_id: number;
    status: 'open' | 'pending';
  }): Promise<CwConversation> {
    return this.call('POST', '/conversations', body);
  }

  getConversation(id: number): Promise<CwConversation> {
    return this.call('GET', `/conversations/${id}`);
  }

  async setStatus(conversationId: number, status: 'open' | 'pending' | 'resolved'): Promise<void> {
    await this.call('POST', `/conversations/${conversationId}/toggle_status`, { status });
  }

  async listMessages(conversationId: number): Promise<CwMessage[]> {
    return (await this.call<{ payload: CwMessage[] }>('GET', `/conversations/${conversationId}/messages`)).payload;
  }

  /** JSON for text; multipart (`attachments[]`) when the message carries a file. */
  createMessage(conversationId: number, message: NewMessage): Promise<CwMessage> {
    const path = `/conversations/${conversationId}/messages`;
    if (!message.attachment) {
      return this.call('POST', path, {
        content: message.content,
        message_type: message.messageType,
        private: false,
        source_id: message.sourceId,
        ...(message.contentAttributes ? { content_attributes: message.contentAttributes } : {}),
      });
    }
    const form = new FormData();
    form.append('content', message.content);
    form.append('message_type', message.messageType);
    form.append('private', 'false');
    form.append('source_id', message.sourceId);
    if (message.contentAttributes) form.append('content_attributes', JSON.stringify(message.contentAttributes));
    const { data, mimetype, fileName } = message.attachment;
    form.append('attachments[]', new Blob([new Uint8Array(data)], { type: mimetype }), fileName);
    return this.call('POST', path, form);
  }

  /** Delivery status of a message of an API inbox (PATCH .../messages/{id}, `update-message-status`). */
  async setMessageStatus(
    conversationId: number,
    messageId: number,
    status: 'sent' | 'delivered' | 'read' | 'failed',
    externalError?: string,
  ): Promise<void> {
    await this.call('PATCH', `/conversations/${conversationId}/messages/${messageId}`, {
      status,
      ...(externalError ? { external_error: externalError } : {}),
    });
  }

  async deleteMessage(conversationId: number, messageId: number): Promise<void> {
    await this.call('DELETE', `/conversations/${conversationId}/messages/${messageId}`);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.target.baseUrl.replace(/\/+$/, '')}/api/v1/accounts/${this.target.accountId}${path}`;
    const headers: Record<string, string> = {
      api_access_token: this.target.apiToken,
      'user-agent': this.userAgent,
      accept: 'application/json',
    };
    let payload: string | FormData | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    let response: Response;
    try {
      const init = {
        method,
        headers,
        ...(payload !== undefined ? { body: payload } : {}),
        signal: AbortSignal.timeout(TIMEOUT_MS),
        redirect: 'error' as const,
      };
      // Node's fetch takes an undici dispatcher.
      response = await fetch(url, this.dispatcher ? { ...init, dispatcher: this.dispatcher } : init);
    } catch (error) {
      throw new ChatwootApiError(
        `Chatwoot did not answer ${method} ${path}: ${error instanceof Error ? error.message : String(error)}`,
        null,
      );
    }
    const text = await response.text();
    // Chatwoot's own error text is not repeated: the base URL is the caller's, and its answers are not shown back.
    if (!response.ok) throw new ChatwootApiError(`Chatwoot answered ${response.status} to ${method} ${path}`, response.status);
    try {
      return (text === '' ? {} : JSON.parse(text)) as T;
    } catch {
      throw new ChatwootApiError(`Chatwoot answered ${method} ${path} with something other than JSON`, response.status);
    }
  }
}
