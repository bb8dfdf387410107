/** Schemas of the /newsletter routes. */
import { Type } from 'typebox';
import { MessageKeySchema } from '../chats/schema.js';
import { ImageField } from '../http/image-input.js';
import { PagedQuery } from '../http/schemas.js';

export const NewsletterId = Type.String({
  pattern: '^[0-9]+@newsletter$',
  description: 'A newsletter (channel) JID, `<id>@newsletter`.',
  examples: ['120363012345678901@newsletter'],
});

const Role = Type.Enum(['owner', 'subscriber', 'guest'] as const, { description: "The instance's relation to the newsletter." });

export const NewsletterSchema = Type.Object(
  {
    newsletterId: Type.String(),
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    inviteCode: Type.String(),
    inviteLink: Type.String({ description: '`https://whatsapp.com/channel/<inviteCode>`' }),
    pictureUrl: Type.Union([Type.String(), Type.Null()]),
    role: Role,
    muted: Type.Boolean({ description: 'Whether the instance muted it (followers only).' }),
    followers: Type.Integer(),
    verified: Type.Boolean(),
    creation: Type.Integer({ description: 'Unix seconds.' }),
  },
  { title: 'Newsletter' },
);

export const NewsletterMessageSchema = Type.Object({
  key: MessageKeySchema,
  serverId: Type.Integer({ description: "The post's sequence number in its newsletter." }),
  message: Type.Record(Type.String(), Type.Unknown()),
  messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
});

const Name = Type.String({ minLength: 1, maxLength: 100, examples: ['Loja Central news'] });
const Description = Type.String({ maxLength: 2048, description: 'An empty string removes it.' });

export const CreateBody = Type.Object(
  { name: Name, description: Type.Optional(Description), picture: Type.Optional(ImageField) },
  { additionalProperties: false },
);

export const UpdateBody = Type.Object(
  {
    newsletterId: NewsletterId,
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    picture: Type.Optional(Type.Union([ImageField, Type.Null()], { description: 'A new picture, or null to remove it.' })),
  },
  { additionalProperties: false, minProperties: 2 },
);

export const ListQuery = PagedQuery({
  role: Type.Optional(Type.Enum(['owner', 'subscriber'] as const, { description: 'Only owned or only followed newsletters.' })),
});

export const InfoQuery = Type.Object(
  {
    newsletterId: Type.Optional(NewsletterId),
    inviteCode: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'Invite code or link (`https://whatsapp.com/channel/<code>`).' }),
    ),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);

export const NewsletterBody = Type.Object({ newsletterId: NewsletterId }, { additionalProperties: false });

export const MessagesQuery = PagedQuery({ newsletterId: NewsletterId });

export const SendBody = Type.Object(
  { newsletterId: NewsletterId, text: Type.String({ minLength: 1, maxLength: 65536, examples: ['New arrivals every Friday.'] }) },
  { additionalProperties: false },
);

export const SendReply = Type.Object({
  key: MessageKeySchema,
  serverId: Type.Integer(),
  messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
  status: Type.Enum(['SENT', 'PENDING'] as const),
  message: Type.Record(Type.String(), Type.Unknown()),
});

export const DeletedReply = Type.Object({ newsletterId: Type.String(), deleted: Type.Literal(true) });
