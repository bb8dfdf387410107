/** TypeBox schemas of the /auth routes. */
import { Type } from 'typebox';

export const Role = Type.Enum(['owner', 'operator', 'viewer'], {
  description:
    '`owner`: everything, including users and invitations. `operator`: every admin route. `viewer`: read-only admin routes (GET).',
});

const Email = Type.String({
  format: 'email',
  maxLength: 254,
  description: 'The sign-in name (kept lowercased).',
  examples: ['maria@example.com'],
});
const Password = Type.String({
  minLength: 8,
  maxLength: 256,
  description: '8 to 256 characters.',
  examples: ['correct horse battery staple'],
});
const Name = Type.String({ minLength: 1, maxLength: 100, examples: ['Maria Souza'] });

export const UserView = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    name: Type.String(),
    role: Role,
    createdAt: Type.String({ description: 'ISO 8601.' }),
  },
  { title: 'User' },
);

export const SessionReply = Type.Object(
  {
    accessToken: Type.String({ description: 'A JWT (HS256). Send it as `Authorization: Bearer <accessToken>`.' }),
    tokenType: Type.Literal('Bearer'),
    expiresIn: Type.Integer({ description: 'Seconds the access token is valid (AUTH_ACCESS_TOKEN_SECONDS).' }),
    refreshToken: Type.String({ description: 'For clients without cookies; browsers use the httpOnly cookie set with it. Valid once.' }),
    refreshExpiresIn: Type.Integer({ description: 'Seconds the refresh token is valid (AUTH_REFRESH_TOKEN_DAYS).' }),
    user: UserView,
  },
  { title: 'Session' },
);

export const RegistrationReply = Type.Object({
  firstUser: Type.Boolean({ description: 'No user exists yet: the next registration creates the owner.' }),
  open: Type.Boolean({ description: 'Registration without an invitation is possible now (first user, or AUTH_OPEN_REGISTRATION).' }),
});

export const RegisterBody = Type.Object(
  {
    email: Email,
    password: Password,
    name: Type.Optional(Name),
    invitation: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'An invitation code from an owner (POST /auth/invitations).' }),
    ),
  },
  { additionalProperties: false },
);

export const LoginBody = Type.Object(
  { email: Email, password: Type.String({ minLength: 1, maxLength: 256, examples: ['correct horse battery staple'] }) },
  { additionalProperties: false },
);

export const RefreshBody = Type.Object(
  { refreshToken: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Omit when the refresh cookie is sent.' })) },
  { additionalProperties: false },
);

export const ProfileBody = Type.Object(
  { name: Type.Optional(Name), email: Type.Optional(Email) },
  { additionalProperties: false, minProperties: 1 },
);

export const PasswordBody = Type.Object(
  { currentPassword: Type.String({ minLength: 1, maxLength: 256 }), newPassword: Password },
  {
    additionalProperties: false,
    examples: [{ currentPassword: 'correct horse battery staple', newPassword: 'plum orchard quietly 42' }],
  },
);

export const UserIdParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

export const RoleBody = Type.Object({ role: Role }, { additionalProperties: false, examples: [{ role: 'operator' }] });

export const InvitationBody = Type.Object(
  {
    role: Type.Optional(
      Type.Enum(['owner', 'operator', 'viewer'], {
        default: 'operator',
        description: 'The role the invited person gets (default operator).',
      }),
    ),
    expiresInHours: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 720, default: 72, description: 'Hours the code stays valid (default 72).' }),
    ),
  },
  { additionalProperties: false, examples: [{ role: 'viewer', expiresInHours: 48 }] },
);

export const InvitationView = Type.Object({
  id: Type.String(),
  role: Role,
  createdBy: Type.String({ description: 'User id of the owner who created it.' }),
  createdAt: Type.String(),
  expiresAt: Type.String(),
  usedAt: Type.Union([Type.String(), Type.Null()]),
  usedBy: Type.Union([Type.String(), Type.Null()], { description: 'User id of the person who registered with it.' }),
});

export const CreatedInvitation = Type.Object({
  ...InvitationView.properties,
  code: Type.String({ description: 'Shown only here (only a SHA-256 is stored).' }),
  registerPath: Type.String({ description: 'Path of the web interface page that registers with this code.' }),
});

export const InvitationIdParams = Type.Object(
  { invitation_id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

export const AdminSocketQuery = Type.Object({
  token: Type.Optional(Type.String({ description: 'An owner or operator access token (JWT), or the admin key.' })),
  events: Type.Optional(Type.String({ description: 'Comma-separated event types to receive (default: all).' })),
  instanceId: Type.Optional(Type.String({ description: "Only this instance's events (default: every instance)." })),
});
