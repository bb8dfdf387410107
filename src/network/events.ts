/**
 * The canonical events both drivers emit: one `data` schema per SPEC event type, as TypeBox schemas
 * (so the OpenAPI document can show them) from which the TypeScript types are derived.
 *
 * The fields named here are the ones both drivers set (src/network/contract.test.ts compares their
 * shapes) or that consumers read. Objects stay open (`additionalProperties: true`): a driver may add
 * fields of its network (a LID beside a JID, a message payload's own keys), and receivers must accept
 * fields they do not know (SPEC).
 */
import { Type, type Static, type TSchema } from 'typebox';
import type { EVENT_TYPES } from './port.js';

/**
 * Instance status values and their transitions:
 *   created --connect--> CONNECTING --(needs pairing)--> QRCODE --(scan/pair)--> CONNECTED
 *   CONNECTED --(connection lost)--> DISCONNECTED --(automatic reconnect)--> CONNECTING --> CONNECTED
 *   QRCODE --(QR attempts exhausted)--> DISCONNECTED
 *   any --logout (API or phone side)--> LOGGED_OUT --connect--> CONNECTING --> QRCODE ...
 */
export const INSTANCE_STATUSES = ['created', 'CONNECTING', 'QRCODE', 'CONNECTED', 'DISCONNECTED', 'LOGGED_OUT'] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];

const open = { additionalProperties: true } as const;
/** Fields beyond the named ones, of any JSON type. */
type Open = { [field: string]: unknown };

const Jid = Type.String({ description: 'An address: `<digits>@s.whatsapp.net`, `<id>@g.us`, `<id>@newsletter` or `<id>@lid`.' });
const Seconds = Type.Integer({ description: 'Unix seconds.' });

/** A message key as events show it: the chat, the direction, the id, and the author in groups. */
export const EventMessageKey = Type.Object(
  {
    remoteJid: Jid,
    fromMe: Type.Boolean(),
    id: Type.String(),
    participant: Type.Optional(Jid),
    remoteJidLid: Type.Optional(Type.String({ description: "The chat's hidden id (`<id>@lid`) when WhatsApp used it." })),
    participantLid: Type.Optional(Type.String({ description: "The author's hidden id (`<id>@lid`) when WhatsApp used it." })),
  },
  open,
);
export type EventMessageKey = Static<typeof EventMessageKey> & Open;

/** A message payload in WhatsApp's JSON shape (`conversation`, `imageMessage`, ...). */
const MessagePayload = Type.Record(Type.String(), Type.Unknown(), { description: "The message content in WhatsApp's JSON shape." });

const PollVote = Type.Object(
  {
    pollMessageId: Type.Optional(Type.String()),
    selectedOptions: Type.Optional(Type.Array(Type.String())),
    pollKey: Type.Optional(EventMessageKey),
    decrypted: Type.Optional(Type.Boolean()),
    reason: Type.Optional(Type.String({ description: 'Why a vote could not be read: `poll_not_found`, `decryption_failed`.' })),
    voter: Type.Optional(Type.String()),
    results: Type.Optional(Type.Array(Type.Object({ name: Type.String(), votes: Type.Integer() }, open))),
  },
  { ...open, description: 'A poll vote: the option names chosen, or why they could not be read.' },
);

const MessageData = Type.Object(
  {
    key: EventMessageKey,
    pushName: Type.Optional(Type.String()),
    participant: Type.Optional(Jid),
    message: MessagePayload,
    messageTimestamp: Seconds,
    media: Type.Optional(
      Type.Object({ mimetype: Type.String() }, { ...open, description: 'Added by the gateway when it stored the media.' }),
    ),
    pollVote: Type.Optional(PollVote),
  },
  open,
);

const SendMessageData = Type.Object(
  {
    key: EventMessageKey,
    message: Type.Optional(MessagePayload),
    messageTimestamp: Type.Optional(Seconds),
    status: Type.Optional(Type.String({ description: '`FAILED` when the network refused a message after accepting it.' })),
    error: Type.Optional(Type.Object({ code: Type.Union([Type.String(), Type.Null()]), message: Type.String() }, open)),
    timestamp: Type.Optional(Seconds),
    pollVote: Type.Optional(PollVote),
  },
  open,
);

const ReadReceiptData = Type.Object(
  {
    key: EventMessageKey,
    receipt: Type.String({ description: '`delivered`, `read` or `played`.' }),
    participant: Type.Optional(Jid),
    deliveredTimestamp: Type.Optional(Seconds),
    readTimestamp: Type.Optional(Seconds),
    playedTimestamp: Type.Optional(Seconds),
  },
  open,
);

const PresenceData = Type.Object(
  {
    id: Jid,
    presence: Type.String({ description: '`available` or `unavailable`.' }),
    lastSeen: Type.Optional(Seconds),
  },
  open,
);

const ChatPresenceData = Type.Object(
  {
    remoteJid: Jid,
    participant: Jid,
    presence: Type.String({ description: '`composing`, `recording` or `paused`.' }),
  },
  open,
);

const HistorySyncData = Type.Object(
  {
    syncType: Type.Union([Type.String(), Type.Null()], { description: 'e.g. `INITIAL_BOOTSTRAP`, `RECENT`, `ON_DEMAND`.' }),
    progress: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
    isLatest: Type.Optional(Type.Boolean()),
    part: Type.Optional(Type.Integer({ minimum: 1 })),
    parts: Type.Optional(Type.Integer({ minimum: 1 })),
    /** An on-demand history of one chat names it. */
    chatId: Type.Optional(Jid),
    chats: Type.Optional(Type.Array(Type.Object({ id: Jid }, open))),
    contacts: Type.Optional(Type.Array(Type.Object({ id: Jid }, open))),
    messages: Type.Array(Type.Object({ key: EventMessageKey }, open)),
  },
  open,
);

const CallData = Type.Object(
  {
    id: Type.String(),
    from: Jid,
    status: Type.String({ description: '`offer`, `ringing`, `accept`, `reject`, `timeout` or `terminate`.' }),
    isVideo: Type.Boolean(),
    isGroup: Type.Boolean(),
    timestamp: Seconds,
    groupJid: Type.Optional(Jid),
  },
  open,
);

const ConnectionData = Type.Object(
  {
    status: Type.Unsafe<InstanceStatus>({ type: 'string', enum: [...INSTANCE_STATUSES] }),
    number: Type.Optional(Type.String()),
    reason: Type.Optional(
      Type.String({ description: 'Why the status changed (e.g. `qr_attempts_exhausted`, `connection_lost`, `logged_out_from_phone`).' }),
    ),
  },
  open,
);

/** LABEL, CONTACT, GROUP and NEWSLETTER events say what happened in `action`; the other fields depend on it. */
const actionData = (description: string) => Type.Object({ action: Type.String({ description }) }, open);

const QrCodeData = Type.Object(
  {
    qrcode: Type.String({ description: 'data:image/png;base64,...' }),
    code: Type.String({ description: 'The text encoded in the QR.' }),
    attempt: Type.Integer({ minimum: 1 }),
  },
  open,
);

/** The `data` schema of each event type. */
export const EVENT_DATA = {
  MESSAGE: MessageData,
  SEND_MESSAGE: SendMessageData,
  READ_RECEIPT: ReadReceiptData,
  PRESENCE: PresenceData,
  HISTORY_SYNC: HistorySyncData,
  CHAT_PRESENCE: ChatPresenceData,
  CALL: CallData,
  CONNECTION: ConnectionData,
  LABEL: actionData('`edit`, `delete`, `add` or `remove` (a label on a chat or message).'),
  CONTACT: actionData('`upsert` or `update`.'),
  GROUP: actionData('`join`, `update`, `add`, `remove`, `promote`, `demote`, ...'),
  NEWSLETTER: actionData('`reaction`, `view`, `participants` or `settings`.'),
  QRCODE: QrCodeData,
} satisfies Record<(typeof EVENT_TYPES)[number], TSchema>;

/**
 * The envelope of every event, the same bytes on every channel: the webhook body (or one item of a
 * batched webhook's array), the WebSocket frame and the broker payloads.
 */
export const EventEnvelope = Type.Object(
  {
    event: Type.Union(
      Object.keys(EVENT_DATA).map((type) => Type.Literal(type)),
      { description: 'The event type.' },
    ),
    instanceId: Type.String(),
    instanceName: Type.String(),
    data: Type.Object({}, { ...open, description: 'The event data; its shape depends on `event`.' }),
    eventId: Type.String({
      description: 'Time-ordered UUID (version 7), unique per event; the same on every retry and every channel: deduplicate with it.',
    }),
    timestamp: Type.String({ format: 'date-time', description: 'ISO 8601 UTC time the event was recorded.' }),
    seq: Type.Integer({
      minimum: 1,
      description:
        "The instance's event number: 1, 2, 3, ... in the order its events were recorded, kept across restarts, the same on every channel. Order by it; a gap means events this channel did not receive (the webhook was unset meanwhile, or they became dead letters). Retries and dead-letter resends carry the same number.",
    }),
  },
  { description: 'Event envelope (webhook body, WebSocket frame, broker payload).' },
);

/** One of the 13 SPEC event types (EVENT_TYPES in port.ts lists them in order). */
export type EventType = keyof typeof EVENT_DATA;
export type EventData<T extends EventType> = Static<(typeof EVENT_DATA)[T]> & Open;
export type ConnectionData = EventData<'CONNECTION'>;

export interface EventMedia {
  mimetype: string;
  fileName?: string;
  /** Produces the plain bytes (a driver downloads and decrypts here). */
  load(): Promise<Buffer>;
}

/** One event of one type; `CanonicalEvent` is the union of all of them, discriminated by `type`. */
export type EventOf<T extends EventType> = {
  type: T;
  data: EventData<T>;
  /**
   * The media bytes of a MESSAGE or SEND_MESSAGE event that carries an image, video, audio,
   * document or sticker. The registry loads them once, keeps them in the media store and adds
   * `data.media` (type, size, download route); they never travel inside the event itself.
   */
  media?: EventMedia;
};

export type CanonicalEvent = { [T in EventType]: EventOf<T> }[EventType];
