/** Schemas of the /sandbox routes that act in the sandbox world (accounts, groups, calls). */
import { Type } from 'typebox';
import { PhoneNumber } from '../http/schemas.js';

export const BusinessProfileSchema = Type.Object(
  {
    description: Type.Optional(Type.Union([Type.String({ maxLength: 512 }), Type.Null()])),
    category: Type.Optional(Type.Union([Type.String({ maxLength: 128 }), Type.Null()])),
    email: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
    website: Type.Optional(Type.Array(Type.String({ maxLength: 512 }), { maxItems: 2 })),
    address: Type.Optional(Type.Union([Type.String({ maxLength: 512 }), Type.Null()])),
  },
  { additionalProperties: false, description: 'The business profile others see in user info; given fields replace the stored ones.' },
);

export const AccountBody = Type.Object(
  {
    number: { ...PhoneNumber, description: 'The account: a virtual contact, or the number of a sandbox instance.' },
    pushName: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Profile name; also the `pushName` of its messages.' }),
    ),
    about: Type.Optional(Type.String({ maxLength: 139, description: 'The "about" text.' })),
    business: Type.Optional(
      Type.Boolean({ description: '`true` makes it a WhatsApp Business account (labels, business profile); `false` a personal one.' }),
    ),
    businessProfile: Type.Optional(BusinessProfileSchema),
  },
  { additionalProperties: false },
);

export const AccountReply = Type.Object({
  number: Type.String(),
  jid: Type.String(),
  pushName: Type.String(),
  about: Type.Union([Type.String(), Type.Null()]),
  isBusiness: Type.Boolean(),
  linked: Type.Boolean({ description: 'Whether a connected sandbox instance holds this number.' }),
});

export const ContactJoinBody = Type.Object(
  {
    number: { ...PhoneNumber, description: 'The virtual contact that uses the invite.', examples: ['5511988887777'] },
    inviteCode: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'Invite code or https://chat.whatsapp.com/<code> link.',
      examples: ['HbmSZ9zVa0B1C2D3E4F5G6'],
    }),
  },
  { additionalProperties: false },
);

export const ContactLeaveBody = Type.Object(
  {
    number: { ...PhoneNumber, examples: ['5511988887777'] },
    groupId: Type.String({
      pattern: '^[0-9]+(-[0-9]+)?@g\\.us$',
      description: 'The group to leave.',
      examples: ['120363025246125888@g.us'],
    }),
  },
  { additionalProperties: false },
);

export const CallEndBody = Type.Object(
  {
    callId: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'The `callId` returned by POST /sandbox/calls.',
      examples: ['F3A8B2C4D5E6F708192A3B4C5D6E7F80'],
    }),
    to: { ...PhoneNumber, description: 'The called instance number.' },
  },
  { additionalProperties: false },
);
