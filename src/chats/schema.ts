/** Schemas of the /chat routes, and the chat and message shapes other groups reuse. */
import { Type } from 'typebox';
import { ChatId, PagedQuery, PhoneNumber } from '../http/schemas.js';

export const ChatKindSchema = Type.Enum(['person', 'group', 'newsletter'] as const, { description: 'What the chat is with.' });

export const MessageKeySchema = Type.Object(
  {
    remoteJid: Type.String({ description: 'The chat.' }),
    fromMe: Type.Boolean(),
    id: Type.String(),
  },
  { title: 'MessageKey' },
);

export const ChatMessageSchema = Type.Object(
  {
    key: MessageKeySchema,
    participant: Type.Optional(Type.String({ description: 'The sender, in group and community chats.' })),
    pushName: Type.Optional(Type.String({ description: "The sender's display name (incoming messages)." })),
    message: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The content in the network payload shape (text: `conversation`).',
    }),
    messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
    labels: Type.Array(Type.String(), { description: 'Label ids on the message (business accounts).' }),
  },
  { title: 'ChatMessage' },
);

export const ChatSchema = Type.Object(
  {
    chatId: Type.String({ description: 'The chat JID.' }),
    kind: ChatKindSchema,
    name: Type.Union([Type.String(), Type.Null()], { description: 'Contact name, group subject or newsletter name.' }),
    unreadCount: Type.Integer({ description: 'Messages received since the chat was last read.' }),
    markedUnread: Type.Boolean({ description: 'Marked unread by hand (POST /chat/mark-unread).' }),
    pinned: Type.Boolean(),
    archived: Type.Boolean(),
    muted: Type.Boolean(),
    mutedUntil: Type.Union([Type.Integer(), Type.Null()], {
      description: 'Unix seconds when the mute ends; null when not muted or muted for ever.',
    }),
    labels: Type.Array(Type.String(), { description: 'Label ids on the chat (business accounts).' }),
    lastMessage: Type.Union([ChatMessageSchema, Type.Null()]),
    conversationTimestamp: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds of the last activity.' }),
  },
  { title: 'Chat' },
);

export const ChatBody = Type.Object({ chatId: ChatId }, { additionalProperties: false });

export const ChatQuery = Type.Object({ chatId: ChatId }, { additionalProperties: false });

export const ListQuery = PagedQuery({
  archived: Type.Optional(Type.Boolean({ description: 'Only archived (`true`) or only not archived (`false`) chats.' })),
  pinned: Type.Optional(Type.Boolean({ description: 'Only pinned or only not pinned chats.' })),
  unread: Type.Optional(Type.Boolean({ description: 'Only chats with (or without) unread messages or an unread mark.' })),
  labelId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only chats with this label.' })),
  kind: Type.Optional(ChatKindSchema),
});

export const SearchQuery = PagedQuery({
  query: Type.String({
    minLength: 1,
    maxLength: 256,
    description: 'Text to find (case-insensitive) in chat names, numbers/JIDs and message texts.',
  }),
});

export const HistoryQuery = PagedQuery({ chatId: ChatId });

export const MuteBody = Type.Object(
  {
    chatId: ChatId,
    duration: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: 31_536_000,
        description: 'Seconds to mute (e.g. 28800 = 8 h, 604800 = 1 week). Omitted: for ever.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const HistoryRequestBody = Type.Object(
  {
    chatId: ChatId,
    count: Type.Integer({ minimum: 1, maximum: 500, default: 50, description: 'How many of the latest messages to ask for.' }),
  },
  { additionalProperties: false },
);

export const CheckQuery = Type.Object(
  {
    numbers: Type.Array(PhoneNumber, {
      minItems: 1,
      maxItems: 100,
      description: 'Numbers to check; repeat the parameter (`?numbers=…&numbers=…`), up to 100.',
    }),
  },
  { additionalProperties: false },
);

export const CheckReply = Type.Object({
  items: Type.Array(
    Type.Object({
      number: Type.String(),
      jid: Type.String(),
      exists: Type.Boolean({ description: 'Whether the number has an account on the network.' }),
    }),
  ),
});

export const DeletedReply = Type.Object({ chatId: Type.String(), deleted: Type.Literal(true) });

export const HistoryRequestReply = Type.Object({
  chatId: Type.String(),
  requested: Type.Integer({ description: 'How many messages the HISTORY_SYNC event carries.' }),
});
