/** Schemas of the /group routes, and the group shape /community reuses. */
import { Type } from 'typebox';
import { ImageField } from '../http/image-input.js';
import { PagedQuery, PhoneNumber } from '../http/schemas.js';

export const GroupId = Type.String({
  pattern: '^[0-9]+(-[0-9]+)?@g\\.us$',
  description: 'A group JID, `<id>@g.us`.',
  examples: ['120363025246125888@g.us'],
});

export const InviteCode = Type.String({
  minLength: 1,
  maxLength: 256,
  description: 'An invite code, or the whole invite link (`https://chat.whatsapp.com/<code>`).',
  examples: ['HbmSZ9zVa0B1C2D3E4F5G6'],
});

const Participants = Type.Array(PhoneNumber, { minItems: 1, maxItems: 256, description: 'Phone numbers (digits only), up to 256.' });

export const GroupRoleSchema = Type.Enum(['superadmin', 'admin', 'member'] as const, {
  description: '`superadmin`: the creator; `admin`; `member`.',
});

export const EPHEMERAL_SECONDS = [0, 86_400, 604_800, 7_776_000] as const;

const settingsFields = {
  announce: Type.Boolean({ description: 'Only admins send messages.' }),
  locked: Type.Boolean({ description: 'Only admins edit the subject, description and picture.' }),
  joinApproval: Type.Boolean({ description: "People joining by invite link wait for an admin's approval." }),
  ephemeral: Type.Union(
    EPHEMERAL_SECONDS.map((s) => Type.Literal(s)),
    { description: 'Disappearing messages after 86400 (24 h), 604800 (7 days) or 7776000 (90 days) seconds; 0 is off.' },
  ),
  memberAddMode: Type.Enum(['admins', 'all'] as const, { description: 'Who may add participants.' }),
};

export const GroupSchema = Type.Object(
  {
    groupId: Type.String(),
    subject: Type.String(),
    subjectOwner: Type.Union([Type.String(), Type.Null()], { description: 'Who set the subject (JID).' }),
    subjectTimestamp: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds.' }),
    description: Type.Union([Type.String(), Type.Null()]),
    owner: Type.Union([Type.String(), Type.Null()], { description: 'The creator (JID).' }),
    creation: Type.Integer({ description: 'Unix seconds.' }),
    size: Type.Integer(),
    participants: Type.Array(Type.Object({ jid: Type.String(), number: Type.String(), role: GroupRoleSchema })),
    ...settingsFields,
    ephemeral: Type.Integer({ description: 'Disappearing-message timer in seconds; 0 is off.' }),
    communityId: Type.Union([Type.String(), Type.Null()], { description: 'The community the group is linked to.' }),
    isCommunityAnnounce: Type.Boolean({ description: 'Whether this is the announcement group of a community.' }),
  },
  { title: 'Group' },
);

export const ParticipantResultSchema = Type.Object(
  {
    number: Type.String(),
    jid: Type.String(),
    status: Type.Enum(
      [
        'ok',
        'already_participant',
        'not_participant',
        'not_on_network',
        'privacy_restricted',
        'not_allowed',
        'group_full',
        'no_request',
      ] as const,
      {
        description:
          '`ok` done; `already_participant`; `not_participant`; `not_on_network` (no account); `privacy_restricted` (their privacy does not let you add them: send them the invite link); `not_allowed` (the creator cannot be removed or demoted, and you leave with /group/leave); `group_full` (1024); `no_request` (no pending join request).',
      },
    ),
  },
  { title: 'ParticipantResult' },
);

export const ParticipantsReply = Type.Object(
  { groupId: Type.String(), results: Type.Array(ParticipantResultSchema) },
  { title: 'ParticipantsReply' },
);

export const CreateBody = Type.Object(
  {
    subject: Type.String({ minLength: 1, maxLength: 100, description: 'The group name.', examples: ['Loja Central team'] }),
    participants: Type.Array(PhoneNumber, { maxItems: 256, default: [], description: 'People to add besides the instance (up to 256).' }),
    description: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  {
    additionalProperties: false,
    examples: [{ subject: 'Loja Central team', participants: ['5511988887777', '5511977776666'], description: 'Shifts and deliveries.' }],
  },
);

export const CreateReply = Type.Object({ group: GroupSchema, results: Type.Array(ParticipantResultSchema) });

export const GroupQuery = Type.Object({ groupId: GroupId }, { additionalProperties: false });
export const GroupBody = Type.Object({ groupId: GroupId }, { additionalProperties: false });
export const PagedGroupQuery = PagedQuery({ groupId: GroupId });

export const ParticipantsBody = Type.Object({ groupId: GroupId, participants: Participants }, { additionalProperties: false });

export const PictureReply = Type.Object({
  jid: Type.String(),
  pictureId: Type.Union([Type.String(), Type.Null()]),
  url: Type.Union([Type.String(), Type.Null()], {
    description: 'Where to fetch the picture; on the sandbox network a data: URL. null when there is none (or you may not see it).',
  }),
});

export const PictureBody = Type.Object({ groupId: GroupId, image: ImageField }, { additionalProperties: false });

export const SubjectBody = Type.Object(
  { groupId: GroupId, subject: Type.String({ minLength: 1, maxLength: 100, examples: ['Loja Central team'] }) },
  { additionalProperties: false },
);

export const DescriptionBody = Type.Object(
  {
    groupId: GroupId,
    description: Type.String({
      maxLength: 2048,
      description: 'An empty string removes the description.',
      examples: ['Shifts, deliveries and store news. Be kind.'],
    }),
  },
  { additionalProperties: false },
);

export const SettingsBody = Type.Object(
  {
    groupId: GroupId,
    announce: Type.Optional(settingsFields.announce),
    locked: Type.Optional(settingsFields.locked),
    joinApproval: Type.Optional(settingsFields.joinApproval),
    ephemeral: Type.Optional(settingsFields.ephemeral),
    memberAddMode: Type.Optional(settingsFields.memberAddMode),
  },
  { additionalProperties: false, minProperties: 2 },
);

export const InviteReply = Type.Object({
  groupId: Type.String(),
  inviteCode: Type.String(),
  inviteLink: Type.String({ description: '`https://chat.whatsapp.com/<inviteCode>`' }),
});

export const InviteQuery = Type.Object({ inviteCode: InviteCode }, { additionalProperties: false });
export const InviteBody = Type.Object({ inviteCode: InviteCode }, { additionalProperties: false });

export const InvitePreviewSchema = Type.Object({
  groupId: Type.String(),
  subject: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  owner: Type.Union([Type.String(), Type.Null()]),
  creation: Type.Integer(),
  size: Type.Integer(),
  joinApproval: Type.Boolean({ description: 'Joining sends a request an admin must approve.' }),
  isCommunity: Type.Boolean(),
});

export const JoinReply = Type.Object({
  groupId: Type.String(),
  status: Type.Enum(['joined', 'requested'] as const, {
    description: "`requested`: the group needs an admin's approval (see /group/requests).",
  }),
});

export const LeaveReply = Type.Object({ groupId: Type.String(), left: Type.Literal(true) });

export const JoinRequestSchema = Type.Object({
  jid: Type.String(),
  number: Type.String(),
  requestedAt: Type.Integer({ description: 'Unix seconds.' }),
});
