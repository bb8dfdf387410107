import { Type } from 'typebox';
import { Health, Status } from '../../instances/schema.js';

import { FAILOVER_POLICIES as POLICIES } from '../../vocabulary.js';

export { POLICIES };

const GroupName = Type.String({
  pattern: '^[A-Za-z0-9._-]{1,64}$',
  description: 'Unique; 1 to 64 letters, digits, `-`, `_` or `.`.',
  examples: ['sales-numbers'],
});
const Members = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description: 'Instance ids, in priority order (the `priority` policy tries the first eligible one first).',
  examples: [['7c9e6679-7425-40de-944b-e07fc1f90ae7', 'b3d1f0a2-5c4e-4f6a-9b8d-2e7f1a0c3d45']],
});
const Policy = Type.Enum(POLICIES, {
  description:
    '`priority`: the first eligible member in `members` order. `round-robin`: eligible members in turn. `least-loaded`: the eligible member with the fewest group sends in flight, then the fewest in the last minute.',
});
const MinHealth = Type.Integer({ minimum: 0, maximum: 100, description: 'Members with a lower health score are not used (default 50).' });
const Sticky = Type.Boolean({
  description: 'A recipient keeps the member that last served it while that member is eligible (default true).',
});
const WebhookUrl = Type.String({
  pattern: '^https?://[^\\s]+$',
  format: 'uri',
  maxLength: 2048,
  description:
    "Receives the events of every member, signed (`X-Webhook-Signature`) with the group's `webhookSecret`, with the retries and dead letters of instance webhooks.",
});
const WebhookSecret = Type.String({
  minLength: 16,
  maxLength: 256,
  description: 'HMAC-SHA256 key of the group webhook. Write-only: shown once at creation (generated when omitted).',
});

export const CreateGroupBody = Type.Object(
  {
    name: GroupName,
    members: Members,
    policy: Type.Optional(Policy),
    minHealth: Type.Optional(MinHealth),
    sticky: Type.Optional(Sticky),
    webhookUrl: Type.Optional(WebhookUrl),
    webhookSecret: Type.Optional(WebhookSecret),
  },
  { additionalProperties: false },
);

export const UpdateGroupBody = Type.Object(
  {
    name: Type.Optional(GroupName),
    members: Type.Optional(Members),
    policy: Type.Optional(Policy),
    minHealth: Type.Optional(MinHealth),
    sticky: Type.Optional(Sticky),
    webhookUrl: Type.Optional(Type.Union([WebhookUrl, Type.Null()], { description: 'A new URL, or null to stop the group webhook.' })),
    webhookSecret: Type.Optional(WebhookSecret),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const GroupParams = Type.Object(
  { groupId: Type.String({ minLength: 1, maxLength: 64, description: 'The groupId given at creation.' }) },
  { additionalProperties: false },
);

export const CreatedGroup = Type.Object({
  groupId: Type.String(),
  name: Type.String(),
  members: Type.Array(Type.String()),
  policy: Policy,
  minHealth: MinHealth,
  sticky: Sticky,
  webhookUrl: Type.Union([Type.String(), Type.Null()]),
  token: Type.String({
    description:
      'The group token (`wgg_…`): the `apikey` of every /send/* route for the group. Shown only here; only its SHA-256 is stored.',
  }),
  webhookSecret: Type.String({ description: 'The group webhook signing secret. Shown only here.' }),
  createdAt: Type.String({ format: 'date-time' }),
});

export const MemberView = Type.Object(
  {
    instanceId: Type.String(),
    instanceName: Type.Union([Type.String(), Type.Null()]),
    status: Type.Union([Status, Type.Null()]),
    health: Health,
    eligible: Type.Boolean({ description: 'Connected with a health score of at least `minHealth`.' }),
    serving: Type.Boolean({ description: 'This member takes the next send (a sticky recipient may still go to its own member).' }),
  },
  { title: 'FailoverMember' },
);

export const GroupView = Type.Object(
  {
    groupId: Type.String(),
    name: Type.String(),
    policy: Policy,
    minHealth: MinHealth,
    sticky: Sticky,
    webhookUrl: Type.Union([Type.String(), Type.Null()]),
    members: Type.Array(MemberView, { description: 'In priority order, with their health and eligibility.' }),
    serving: Type.Union([Type.String(), Type.Null()], {
      description: 'The instanceId of the member that takes the next send; null when none is eligible (sends get 503).',
    }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'FailoverGroup' },
);

export const RotateReply = Type.Object({
  newToken: Type.String(),
  oldTokenValidUntil: Type.String({ format: 'date-time', description: 'ISO 8601 UTC; after it the old group token gets 401.' }),
});
