import { Type } from 'typebox';
import { EVENT_TYPES, INSTANCE_STATUSES, NETWORKS } from '../network/port.js';
import { PhoneNumber } from '../http/schemas.js';

export const InstanceName = Type.String({
  pattern: '^[A-Za-z0-9._-]{1,64}$',
  description: 'Unique; 1 to 64 letters, digits, `-`, `_` or `.`.',
  examples: ['shop-main'],
});

export const WebhookUrl = Type.String({
  pattern: '^https?://[^\\s\\x00-\\x1F\\x7F]+$',
  format: 'uri',
  maxLength: 2048,
  description: 'http(s) URL that receives every event as a signed POST. HTTPS is recommended.',
  examples: ['https://example.com/hooks/waygate'],
});

export const WebhookSecret = Type.String({
  minLength: 16,
  maxLength: 256,
  description: 'HMAC-SHA256 key for `X-Webhook-Signature`. Write-only: returned once at creation, never shown again.',
});

export const EventFilter = Type.Union(
  [Type.Literal('ALL'), Type.Array(Type.Enum(EVENT_TYPES), { maxItems: EVENT_TYPES.length, uniqueItems: true })],
  {
    title: 'EventFilter',
    description:
      '`"ALL"` (default at creation) or a list of event types. Applies to every channel (webhook, WebSocket, brokers); events outside it are not recorded.',
  },
);

export const Network = Type.Enum(NETWORKS, {
  description: '`whatsapp` (the real network, default) or `sandbox` (the built-in simulated network). Fixed at creation.',
});

export const Status = Type.Enum(INSTANCE_STATUSES, {
  description: 'created, CONNECTING, QRCODE, CONNECTED, DISCONNECTED or LOGGED_OUT (see the transitions in the API description).',
});

export const CreateBody = Type.Object(
  {
    instanceName: InstanceName,
    webhookUrl: Type.Optional(WebhookUrl),
    webhookSecret: Type.Optional(WebhookSecret),
    webhookEvents: Type.Optional(EventFilter),
    network: Type.Optional(Network),
  },
  { additionalProperties: false },
);

export const CreateReply = Type.Object({
  instanceId: Type.String(),
  instanceName: Type.String(),
  token: Type.String({ description: 'The instance API key. Shown only here; store it.' }),
  webhookUrl: Type.Union([Type.String(), Type.Null()]),
  webhookSecret: Type.String({ description: 'The webhook signing secret. Shown only here.' }),
  webhookEvents: EventFilter,
  network: Network,
  status: Type.Literal('created'),
});

export const Health = Type.Object(
  {
    score: Type.Integer({ minimum: 0, maximum: 100, description: '100 is healthy; the formula is in docs/operations.md.' }),
    reasons: Type.Array(Type.String(), {
      description: 'What lowered the score, each with its penalty, e.g. `disconnected: connection_lost (-70)`. Empty at 100.',
    }),
  },
  { title: 'Health', description: 'Health score of the instance (GET /instance/health gives the signals behind it).' },
);

export const InstanceView = Type.Object(
  {
    instanceId: Type.String(),
    instanceName: Type.String(),
    network: Network,
    status: Status,
    number: Type.Union([Type.String(), Type.Null()]),
    webhookUrl: Type.Union([Type.String(), Type.Null()]),
    webhookEvents: EventFilter,
    proxyUrl: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    health: Type.Optional(Health),
  },
  { title: 'Instance' },
);

export const StatusReply = Type.Object(
  {
    instanceId: Type.String(),
    instanceName: Type.String(),
    status: Status,
    number: Type.Optional(Type.String({ description: 'Present when the instance is linked to a number.' })),
    health: Type.Optional(Health),
  },
  { title: 'InstanceStatus' },
);

export const RotateReply = Type.Object({
  newToken: Type.String(),
  oldTokenValidUntil: Type.String({ format: 'date-time', description: 'ISO 8601 UTC; after it the old token gets 401.' }),
});

export const WebhookBatch = Type.Object(
  {
    maxEvents: Type.Integer({ minimum: 1, maximum: 1000, description: 'Envelopes per POST at most.' }),
    maxWaitMs: Type.Integer({
      minimum: 0,
      maximum: 60_000,
      description: 'How long the oldest waiting event may wait for the batch to fill before it is sent anyway (0: send what is there).',
    }),
  },
  {
    title: 'WebhookBatch',
    additionalProperties: false,
    description:
      'Batched webhook: each POST carries a JSON array of up to `maxEvents` envelopes, in `seq` order, signed as one body (`X-Webhook-Signature` over the array bytes, `X-Webhook-Batch` = the count). A failed batch is retried whole (the same events, same order) with the usual backoff; after the last attempt each of its events becomes its own dead letter.',
  },
);

export const WebhookBody = Type.Object(
  {
    webhookUrl: Type.Optional(Type.Union([WebhookUrl, Type.Null()], { description: 'New URL, or null to stop webhook delivery.' })),
    webhookEvents: Type.Optional(EventFilter),
    webhookSecret: Type.Optional(WebhookSecret),
    webhookBatch: Type.Optional(
      Type.Union([WebhookBatch, Type.Null()], { description: 'Batched delivery settings, or null for one POST per event (the default).' }),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ webhookUrl: 'https://example.com/hooks/waygate', webhookEvents: ['MESSAGE', 'SEND_MESSAGE', 'CONNECTION'] }],
  },
);

export const WebhookReply = Type.Object(
  {
    webhookUrl: Type.Union([Type.String(), Type.Null()]),
    webhookEvents: EventFilter,
    webhookBatch: Type.Union([WebhookBatch, Type.Null()]),
    secretSet: Type.Boolean({ description: 'Always true: a secret always exists; it is never shown after creation.' }),
  },
  { title: 'WebhookSettings' },
);

export const QrReply = Type.Object({
  qrcode: Type.String({ description: 'data:image/png;base64,... PNG of the QR code.' }),
  base64: Type.String({ description: 'The same PNG, base64 only (no data: prefix).' }),
  code: Type.String({ description: 'The text encoded in the QR.' }),
  attempt: Type.Integer({ description: 'Which QR of this pairing attempt (from 1).' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

export const PairBody = Type.Object({ number: PhoneNumber }, { additionalProperties: false });
export const PairReply = Type.Object({
  pairingCode: Type.String({ pattern: '^[0-9]{8}$', description: 'Enter it on the phone: Linked devices > Link with phone number.' }),
  number: Type.String(),
});

export const ConnectReply = Type.Object({
  status: Status,
  qrcode: Type.Optional(Type.String({ description: 'Current QR as a data URL, when one is shown.' })),
});

export const DeadLetterView = Type.Object(
  {
    id: Type.String({ description: 'dead_letter_id for the retry route.' }),
    instanceId: Type.String(),
    channel: Type.String({ description: 'The delivery channel that gave up (`webhook`, ...).' }),
    eventId: Type.String(),
    event: Type.String(),
    attempts: Type.Integer({ description: 'Delivery attempts so far, automatic and manual.' }),
    lastStatus: Type.Union([Type.Integer(), Type.Null()], {
      description: 'Receiver HTTP status of the last attempt; null when it did not answer.',
    }),
    lastError: Type.Union([Type.String(), Type.Null()]),
    firstAttemptAt: Type.String({ format: 'date-time' }),
    lastAttemptAt: Type.String({ format: 'date-time' }),
    createdAt: Type.String({ format: 'date-time' }),
    payload: Type.Unknown({ description: 'The event envelope as it was sent.' }),
  },
  { title: 'DeadLetter' },
);

export const RetryReply = Type.Object({
  id: Type.String(),
  delivered: Type.Boolean(),
  status: Type.Union([Type.Integer(), Type.Null()]),
  attempts: Type.Integer(),
  error: Type.Optional(Type.String()),
});

export const DeadLetterParams = Type.Object(
  { dead_letter_id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

export const InstanceSettingsBody = Type.Object(
  {
    interactiveMessages: Type.Optional(
      Type.Boolean({ description: 'Allow raw interactive messages (buttons, list, carousel, pix) on WhatsApp.' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const InstanceSettingsReply = Type.Object({ interactiveMessages: Type.Boolean() });
