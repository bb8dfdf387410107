/** Schemas of the /message routes that act on stored messages (react, presence, read, delete, edit, find, poll results). */
import { Type } from 'typebox';
import { ChatId, MessageId, PagedQuery } from '../http/schemas.js';
import { MessageKey } from '../outgoing/schema.js';
import { EDIT_WINDOW_SECONDS } from '../network/port.js';

const strict = { additionalProperties: false } as const;

/** The chat of the message: the `key.remoteJid` of the message, or a number for a person. */
const MessageChatId = ChatId;

export const ReactBody = Type.Object(
  {
    chatId: MessageChatId,
    messageId: MessageId,
    emoji: Type.String({
      maxLength: 64,
      description: "One emoji (modifiers and ZWJ sequences allowed, e.g. `👍🏽`, `👨‍👩‍👧`); an empty string removes this instance's reaction.",
      examples: ['👍', ''],
    }),
  },
  strict,
);

export const PresenceBody = Type.Object(
  {
    chatId: MessageChatId,
    presence: Type.Enum(['composing', 'recording', 'paused'] as const, {
      description: '`composing` shows "typing…", `recording` "recording audio…", `paused` stops either.',
    }),
    durationMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 300_000,
        description:
          'After this many milliseconds `paused` is sent by itself (not with `presence: paused`). Omitted: the state stays until changed (the phone shows it for about 25 s).',
      }),
    ),
  },
  strict,
);

export const ReadBody = Type.Object(
  {
    chatId: MessageChatId,
    messageIds: Type.Array(MessageId, {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: 'Received messages of the chat to mark read (1 to 100).',
    }),
  },
  strict,
);

export const MessageRefBody = Type.Object({ chatId: MessageChatId, messageId: MessageId }, strict);

export const EditBody = Type.Object(
  {
    chatId: MessageChatId,
    messageId: MessageId,
    text: Type.String({ minLength: 1, maxLength: 65_536, description: 'The new text.', examples: ['Your order #1042 ships tomorrow.'] }),
  },
  strict,
);

export const FindQuery = PagedQuery({
  chatId: Type.Optional(MessageChatId),
  messageId: Type.Optional(MessageId),
  fromMe: Type.Optional(Type.Boolean({ description: '`true`: only messages this instance sent; `false`: only received ones.' })),
  text: Type.Optional(
    Type.String({ minLength: 1, maxLength: 256, description: 'Case-insensitive text found in the message text or media caption.' }),
  ),
  since: Type.Optional(Type.Integer({ minimum: 0, description: 'Only messages at or after this time (Unix seconds).' })),
  until: Type.Optional(Type.Integer({ minimum: 0, description: 'Only messages at or before this time (Unix seconds).' })),
});

export const PollResultsQuery = Type.Object({ messageId: MessageId }, strict);

export const ActionReply = Type.Object(
  {
    key: MessageKey,
    messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
    status: Type.Union([Type.Literal('SENT'), Type.Literal('PENDING')]),
    message: Type.Record(Type.String(), Type.Unknown(), {
      description: 'What was sent, in the network payload shape: `reactionMessage`, `protocolMessage` (`type` REVOKE or MESSAGE_EDIT).',
    }),
  },
  { title: 'MessageActionReply' },
);

export const PresenceReply = Type.Object({
  chatId: Type.String(),
  presence: Type.String(),
  pausedAfterMs: Type.Union([Type.Integer(), Type.Null()], { description: 'When `paused` follows by itself, or null.' }),
});

export const ReadReply = Type.Object({
  chatId: Type.String(),
  messageIds: Type.Array(Type.String()),
});

export const StoredMessageSchema = Type.Object(
  {
    key: MessageKey,
    participant: Type.Optional(Type.String({ description: 'The sender, in group chats.' })),
    pushName: Type.Optional(Type.String({ description: "The sender's display name (received messages)." })),
    messageType: Type.String({
      description: "The content's kind (`conversation`, `imageMessage`, …), or `revoked` for a message deleted for everyone.",
    }),
    message: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The content in the network payload shape, as last edited; `{}` once deleted.',
    }),
    messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
    deleted: Type.Boolean({ description: 'Deleted for everyone (by its author, or by a group admin).' }),
    media: Type.Optional(
      Type.Object({
        mimetype: Type.String(),
        fileLength: Type.Integer(),
        fileName: Type.Optional(Type.String()),
        sha256: Type.String(),
        downloadUrl: Type.String({ description: 'GET it with the instance token.' }),
      }),
    ),
  },
  { title: 'StoredMessage' },
);

export const PollResultsReply = Type.Object({
  pollMessageId: Type.String(),
  chatId: Type.String(),
  name: Type.String({ description: 'The question.' }),
  selectableCount: Type.Integer({ description: 'How many options one voter may choose (0: any number).' }),
  options: Type.Array(
    Type.Object({
      name: Type.String(),
      votes: Type.Integer(),
      voters: Type.Array(Type.String(), { description: 'JIDs of the people whose latest vote includes this option.' }),
    }),
  ),
  voters: Type.Integer({ description: 'People with a current vote (a withdrawn vote does not count).' }),
});

export const EDIT_WINDOW_MINUTES = EDIT_WINDOW_SECONDS / 60;
