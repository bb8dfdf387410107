/** Schemas of the /user routes. */
import { Type } from 'typebox';
import { ImageField } from '../http/image-input.js';
import { PhoneNumber } from '../http/schemas.js';
import { PERSON_ADDRESS_PATTERN } from '../network/addressing.js';

export const NumberQuery = Type.Object({ number: PhoneNumber }, { additionalProperties: false });
export const NumberBody = Type.Object({ number: PhoneNumber }, { additionalProperties: false });

const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(schema: T) =>
  Type.Union([schema, Type.Null()]);

export const BusinessProfileSchema = Type.Object(
  {
    description: Nullable(Type.String()),
    category: Nullable(Type.String()),
    email: Nullable(Type.String()),
    website: Type.Array(Type.String()),
    address: Nullable(Type.String()),
  },
  { title: 'BusinessProfile' },
);

export const UserInfoSchema = Type.Object(
  {
    jid: Type.String(),
    number: Type.String(),
    name: Nullable(Type.String({ description: 'The profile name (push name) the user set.' })),
    about: Nullable(Type.String({ description: "null when unset or hidden by the user's privacy." })),
    aboutTimestamp: Nullable(Type.Integer({ description: 'Unix seconds when the about text was set.' })),
    pictureUrl: Nullable(
      Type.String({ description: "null when unset or hidden by the user's privacy; a data: URL on the sandbox network." }),
    ),
    isBusiness: Type.Boolean(),
    businessProfile: Type.Union([BusinessProfileSchema, Type.Null()]),
    blocked: Type.Boolean({ description: 'Whether this instance blocked the user.' }),
  },
  { title: 'UserInfo' },
);

export const PictureReply = Type.Object({
  jid: Type.String(),
  pictureId: Nullable(Type.String()),
  url: Nullable(Type.String({ description: "null when there is no picture or the user's privacy hides it." })),
});

export const ContactSchema = Type.Object(
  {
    jid: Type.String(),
    number: Type.String(),
    name: Nullable(Type.String()),
    isBusiness: Type.Boolean(),
  },
  { title: 'Contact' },
);

const NullableString = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const ResolveBody = Type.Object(
  {
    ids: Type.Array(
      Type.String({
        pattern: PERSON_ADDRESS_PATTERN,
        description: 'A phone number (digits with country code), a phone JID (`<number>@s.whatsapp.net`) or a LID (`<id>@lid`).',
        examples: ['200000000000011@lid'],
      }),
      { minItems: 1, maxItems: 100, description: 'The addresses to resolve, 1 to 100.' },
    ),
  },
  { additionalProperties: false, examples: [{ ids: ['200000000000011@lid', '5511999990000'] }] },
);

export const AddressPairSchema = Type.Object({
  id: Type.String({ description: 'The address as asked.' }),
  jid: NullableString('The phone JID (`<number>@s.whatsapp.net`); null when the network has not revealed the number behind a LID.'),
  number: NullableString('The phone number (digits); null with `jid`.'),
  lid: NullableString('The LID (`<id>@lid`); null when unknown (e.g. a number not on the network).'),
});

export const ResolveReply = Type.Object({ items: Type.Array(AddressPairSchema, { description: 'One per asked id, in order.' }) });

const audience = (what: string) =>
  Type.Enum(['all', 'contacts', 'contact_blacklist', 'none'] as const, { description: `Who sees ${what}.` });

export const PrivacySchema = Type.Object({
  lastSeen: audience('your last seen'),
  online: Type.Enum(['all', 'match_last_seen'] as const, {
    description: 'Who sees you online: everyone, or the same people as last seen.',
  }),
  profilePicture: audience('your profile picture'),
  about: audience('your about text'),
  groupAdd: Type.Enum(['all', 'contacts', 'contact_blacklist'] as const, {
    description: 'Who may add you to groups; others must send an invite.',
  }),
  readReceipts: Type.Enum(['all', 'none'] as const, { description: "Whether you send read receipts (and see others')." }),
  calls: Type.Enum(['all', 'known'] as const, { description: 'Who may call you: everyone, or known contacts only.' }),
});

export const PrivacyBody = Type.Partial(PrivacySchema, { additionalProperties: false, minProperties: 1 });

export const BlockReply = Type.Object({ jid: Type.String(), number: Type.String(), blocked: Type.Boolean() });

export const BlockedSchema = Type.Object({ jid: Type.String(), number: Type.String() });

export const ProfileSchema = Type.Object({
  jid: Type.String(),
  number: Type.String(),
  name: Nullable(Type.String()),
  about: Nullable(Type.String()),
  pictureUrl: Nullable(Type.String()),
  isBusiness: Type.Boolean(),
  businessProfile: Type.Union([BusinessProfileSchema, Type.Null()]),
});

export const NameBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 25,
      description: 'Profile name (WhatsApp allows 25 characters).',
      examples: ['Loja Central'],
    }),
  },
  { additionalProperties: false },
);
export const AboutBody = Type.Object(
  {
    about: Type.String({
      maxLength: 139,
      description: 'The "about" text (up to 139 characters).',
      examples: ['Open Mon–Sat, 9:00 to 19:00'],
    }),
  },
  { additionalProperties: false },
);
export const ProfilePictureBody = Type.Object({ image: ImageField }, { additionalProperties: false });

export const PresenceSchema = Type.Object({
  jid: Type.String(),
  presence: Type.Enum(['available', 'unavailable'] as const),
  lastSeen: Nullable(Type.Integer({ description: 'Unix seconds; null when unknown or hidden.' })),
});

export const SubscribeReply = Type.Object({
  jid: Type.String(),
  subscribed: Type.Literal(true),
  presence: Type.Union([PresenceSchema, Type.Null()], {
    description: 'The current presence when known and visible; it also comes as a PRESENCE event.',
  }),
});

export const SetPresenceBody = Type.Object(
  {
    presence: Type.Enum(['available', 'unavailable'] as const, {
      description: '`available`: online; `unavailable`: offline (sets last seen).',
    }),
  },
  { additionalProperties: false },
);

export const SetPresenceReply = Type.Object({ presence: Type.Enum(['available', 'unavailable'] as const) });
