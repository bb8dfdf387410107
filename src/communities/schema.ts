/** Schemas of the /community routes. */
import { Type } from 'typebox';
import { MessageKeySchema } from '../chats/schema.js';
import { GroupId } from '../groups/schema.js';
import { PagedQuery } from '../http/schemas.js';

export const CommunityId = Type.String({
  pattern: '^[0-9]+(-[0-9]+)?@g\\.us$',
  description: 'A community JID, `<id>@g.us` (communities are parent groups on the network).',
  examples: ['120363041234567890@g.us'],
});

export const CommunitySchema = Type.Object(
  {
    communityId: Type.String(),
    subject: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    owner: Type.Union([Type.String(), Type.Null()]),
    creation: Type.Integer({ description: 'Unix seconds.' }),
    announceGroupId: Type.String({
      description: 'The announcement group: every member is in it and only admins write (POST /community/announce).',
    }),
    groups: Type.Array(Type.Object({ groupId: Type.String(), subject: Type.String() }), { description: 'Linked groups.' }),
    size: Type.Integer({ description: 'Members: community admins plus the participants of the linked groups.' }),
    role: Type.Enum(['admin', 'member'] as const),
  },
  { title: 'Community' },
);

export const CreateBody = Type.Object(
  {
    subject: Type.String({ minLength: 1, maxLength: 100, examples: ['Loja Central customers'] }),
    description: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

export const CommunityQuery = Type.Object({ communityId: CommunityId }, { additionalProperties: false });
export const PagedCommunityQuery = PagedQuery({ communityId: CommunityId });

export const LinkBody = Type.Object(
  { communityId: CommunityId, groupIds: Type.Array(GroupId, { minItems: 1, maxItems: 100 }) },
  { additionalProperties: false },
);

export const AnnounceBody = Type.Object(
  { communityId: CommunityId, text: Type.String({ minLength: 1, maxLength: 65536, examples: ['We open at 10:00 on Sunday.'] }) },
  { additionalProperties: false },
);

export const AnnounceReply = Type.Object({
  key: MessageKeySchema,
  messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
  status: Type.Enum(['SENT', 'PENDING'] as const),
  message: Type.Record(Type.String(), Type.Unknown()),
});
