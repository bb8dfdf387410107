import { Type } from 'typebox';

export const ConfigBody = Type.Object(
  {
    baseUrl: Type.String({
      pattern: '^https?://[^\\s/]+(/.*)?$',
      maxLength: 2048,
      description: 'Base URL of the Chatwoot server, e.g. `https://chatwoot.example.com` (no `/api/v1`).',
    }),
    accountId: Type.Integer({ minimum: 1, description: 'The Chatwoot account id (the number in `/app/accounts/{id}/...`).' }),
    apiAccessToken: Type.String({
      minLength: 1,
      maxLength: 512,
      description:
        'An access token of a Chatwoot user (agent or administrator: Profile settings → Access token), sent as the `api_access_token` header. Never shown again: GET masks it.',
    }),
    inboxId: Type.Optional(Type.Integer({ minimum: 1, description: 'An existing API-channel inbox to use. Give this or `inboxName`.' })),
    inboxName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description:
          "Use the inbox of this name, or create an API-channel inbox with this name whose `webhook_url` is this instance's webhook URL (needs `waygateUrl`).",
      }),
    ),
    waygateUrl: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s/]+(/.*)?$',
        maxLength: 2048,
        description:
          'The base URL at which Chatwoot reaches this Waygate (e.g. `https://waygate.example.com`). Needed to create an inbox; otherwise only used to show the full `webhookUrl`.',
      }),
    ),
    signingSecret: Type.Optional(
      Type.String({
        minLength: 8,
        maxLength: 512,
        description:
          "The inbox's webhook signing secret, when Chatwoot signs its webhooks: each call must then carry a valid `X-Chatwoot-Signature` (`sha256=` HMAC-SHA256 of `{timestamp}.{body}`) and an `X-Chatwoot-Timestamp` at most 5 minutes old.",
      }),
    ),
    signAgentMessages: Type.Boolean({
      default: true,
      description: 'Agent replies go to WhatsApp as `*Agent name:*` followed by the text.',
    }),
    reopenConversation: Type.Boolean({
      default: true,
      description:
        'A new WhatsApp message in a chat whose Chatwoot conversation is resolved reopens that conversation (true) or starts a new one (false).',
    }),
    conversationPending: Type.Boolean({ default: false, description: 'New conversations start as `pending` instead of `open`.' }),
    ignoreGroups: Type.Boolean({ default: false, description: 'Group chats are not brought to Chatwoot.' }),
    ignore: Type.Array(Type.String({ minLength: 3, maxLength: 128 }), {
      default: [],
      maxItems: 1000,
      description: 'Chats never brought to Chatwoot: phone numbers (digits) or chat ids (`<number>@s.whatsapp.net`, `<id>@g.us`).',
    }),
    closingMessage: Type.String({
      default: '',
      maxLength: 4096,
      description:
        'Sent to the WhatsApp chat when an agent resolves its conversation in Chatwoot (`conversation_status_changed` to `resolved`). Empty: nothing is sent.',
    }),
  },
  {
    additionalProperties: false,
    examples: [
      {
        baseUrl: 'https://chatwoot.example.com',
        accountId: 1,
        apiAccessToken: 'Xp2kW9qLmN4vB7cR1tY6zA3s',
        inboxName: 'WhatsApp',
        waygateUrl: 'https://waygate.example.com',
        signAgentMessages: true,
        reopenConversation: true,
        conversationPending: false,
        ignoreGroups: true,
        ignore: [],
        closingMessage: 'Thanks for talking to us!',
      },
    ],
  },
);

export const ImportBody = Type.Object(
  {
    contacts: Type.Boolean({
      default: true,
      description: 'Create a Chatwoot contact (found by phone number first) for every person chat the instance lists.',
    }),
    days: Type.Integer({
      minimum: 0,
      maximum: 365,
      default: 7,
      description: 'Messages of the last `days` days from the message store are posted (0: none).',
    }),
    maxMessages: Type.Integer({ minimum: 1, maximum: 100_000, default: 2000, description: 'At most this many messages, the newest kept.' }),
    intervalMs: Type.Integer({
      minimum: 0,
      maximum: 60_000,
      default: 500,
      description: 'Pause between two calls that create something in Chatwoot (pacing).',
    }),
  },
  { additionalProperties: false },
);

export const ImportStatus = Type.Object({
  state: Type.Enum(['idle', 'running', 'done', 'failed'] as const),
  contacts: Type.Integer({ description: 'Contacts found or created.' }),
  messages: Type.Integer({ description: 'Messages posted (already posted ones are skipped and not counted).' }),
  total: Type.Integer({ description: 'Messages selected for import.' }),
  lastError: Type.Union([Type.String(), Type.Null()]),
  startedAt: Type.Union([Type.String(), Type.Null()]),
  finishedAt: Type.Union([Type.String(), Type.Null()]),
});

export const ConfigView = Type.Object(
  {
    instanceId: Type.String(),
    baseUrl: Type.String(),
    accountId: Type.Integer(),
    apiAccessToken: Type.String({ description: 'Masked: the first 4 characters, then `****`.' }),
    inboxId: Type.Integer(),
    inboxName: Type.String(),
    inboxCreated: Type.Optional(Type.Boolean({ description: 'POST only: true when Waygate created the inbox in this call.' })),
    webhookPath: Type.String({ description: 'The path Chatwoot posts its webhooks to. GET masks its secret part; POST shows it whole.' }),
    webhookUrl: Type.Union([Type.String(), Type.Null()], { description: '`waygateUrl` + `webhookPath`, when `waygateUrl` is set.' }),
    waygateUrl: Type.Union([Type.String(), Type.Null()]),
    signingSecret: Type.Union([Type.String(), Type.Null()], { description: 'Masked when set.' }),
    signAgentMessages: Type.Boolean(),
    reopenConversation: Type.Boolean(),
    conversationPending: Type.Boolean(),
    ignoreGroups: Type.Boolean(),
    ignore: Type.Array(Type.String()),
    closingMessage: Type.String(),
    health: Type.Object(
      {
        up: Type.Boolean({ description: 'False after the last call to Chatwoot failed; events wait in the outbox and are retried.' }),
        lastError: Type.Union([Type.String(), Type.Null()]),
        lastSuccessAt: Type.Union([Type.String(), Type.Null()], {
          description: 'ISO 8601 time of the last successful delivery to Chatwoot (this process).',
        }),
      },
      { description: 'State of the WhatsApp → Chatwoot road in this process.' },
    ),
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { title: 'ChatwootConfig' },
);

export const DeletedReply = Type.Object({ deleted: Type.Literal(true), instanceId: Type.String() });

export const WebhookParams = Type.Object(
  {
    instance_id: Type.String({ minLength: 1, maxLength: 64 }),
    secret: Type.String({ minLength: 1, maxLength: 128, description: 'The per-instance secret of the webhook URL.' }),
  },
  { additionalProperties: false },
);

/** Chatwoot's webhook body: only the fields Waygate reads are described; the rest is accepted as is. */
export const WebhookBody = Type.Object(
  {
    event: Type.String(),
    id: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
    content: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    message_type: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
    private: Type.Optional(Type.Boolean()),
    source_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  {
    additionalProperties: true,
    examples: [
      {
        event: 'message_created',
        id: 4711,
        content: 'Hello Maria, your order #1042 ships today.',
        message_type: 'outgoing',
        private: false,
        source_id: null,
        conversation: { id: 12, meta: { sender: { phone_number: '+5511988887777' } } },
      },
    ],
  },
);

export const WebhookReply = Type.Object({ received: Type.Boolean(), ignored: Type.Optional(Type.String()) });
