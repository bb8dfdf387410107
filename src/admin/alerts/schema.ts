/** Alert rules and alerts (admin), and an instance's own open alerts. */
import { Type } from 'typebox';
import { PagedQuery } from '../../http/schemas.js';
import { ALERT_KINDS } from './service.js';

const Kind = Type.Enum(ALERT_KINDS, {
  description:
    '`instance_disconnected`: a linked instance is not connected (DISCONNECTED, CONNECTING or LOGGED_OUT) for `forSeconds`. `health_below`: its health score is below `threshold` for `forSeconds`. `dead_letters_above`: it has more than `threshold` dead letters. `channel_down`: a delivery channel (or the one named in `channel`) is down for `forSeconds`. `outbox_backlog_above`: more than `threshold` of its events wait for delivery.',
});

const Iso = Type.String({ format: 'date-time' });
const NullableIso = Type.Union([Iso, Type.Null()]);

export const RuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    kind: Kind,
    threshold: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000_000,
        description: 'Required by health_below (score 0-100), dead_letters_above and outbox_backlog_above.',
      }),
    ),
    forSeconds: Type.Optional(
      Type.Number({ minimum: 0, maximum: 604_800, default: 0, description: 'How long the condition must hold before the alert fires.' }),
    ),
    scope: Type.Optional(
      Type.Union([Type.Literal('all'), Type.Literal('instance'), Type.Literal('group')], {
        description:
          '`all` (default) watches every instance; `instance` only `instanceId`; `group` the members of failover group `groupId` (as they are at each evaluation). channel_down rules are always `all`.',
      }),
    ),
    instanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    groupId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A failover group (scope `group`).' })),
    channel: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'channel_down only: the channel to watch (`webhook`, `amqp`, `redis`, `nats`, `mqtt`, ...); all when omitted.',
      }),
    ),
    webhookUrl: Type.String({
      minLength: 1,
      maxLength: 2048,
      format: 'uri',
      description: 'Receives the signed notices. Private and loopback addresses only when set with the admin key itself.',
    }),
    webhookSecret: Type.Optional(
      Type.String({
        minLength: 16,
        maxLength: 256,
        description: "HMAC key of the notices' X-Webhook-Signature; generated when omitted and shown only in this reply.",
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'A sales number is offline',
        kind: 'instance_disconnected',
        forSeconds: 300,
        scope: 'all',
        webhookUrl: 'https://ops.example.com/waygate-alerts',
      },
    ],
  },
);

export const RuleView = Type.Object(
  {
    ruleId: Type.String(),
    name: Type.String(),
    kind: Kind,
    threshold: Type.Integer(),
    forSeconds: Type.Number(),
    scope: Type.Union([Type.Literal('all'), Type.Literal('instance'), Type.Literal('group')]),
    instanceId: Type.Union([Type.String(), Type.Null()]),
    groupId: Type.Union([Type.String(), Type.Null()]),
    channel: Type.Union([Type.String(), Type.Null()]),
    webhookUrl: Type.String(),
    muted: Type.Boolean(),
    mutedUntil: NullableIso,
    createdAt: Iso,
  },
  { title: 'AlertRule' },
);

export const RuleCreated = Type.Object({ ...RuleView.properties, webhookSecret: Type.String({ description: 'Shown only here.' }) });

export const RuleParams = Type.Object({ rule_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
export const AlertParams = Type.Object({ alert_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

export const MuteBody = Type.Object(
  { seconds: Type.Number({ minimum: 0, maximum: 31_536_000, description: 'Mute for this long from now; 0 unmutes.', examples: [3600] }) },
  { additionalProperties: false },
);

export const AlertView = Type.Object(
  {
    alertId: Type.String(),
    ruleId: Type.String(),
    ruleName: Type.String(),
    kind: Kind,
    status: Type.Union([Type.Literal('open'), Type.Literal('resolved')]),
    instanceId: Type.Union([Type.String(), Type.Null()]),
    channel: Type.Union([Type.String(), Type.Null()]),
    value: Type.Union([Type.Number(), Type.Null()], { description: 'The measured value when it fired (count or score).' }),
    message: Type.String(),
    notified: Type.Boolean({ description: 'false while the rule was muted when it fired (no notice sent yet).' }),
    firedAt: Iso,
    resolvedAt: NullableIso,
    acknowledged: Type.Boolean(),
    acknowledgedAt: NullableIso,
  },
  { title: 'Alert' },
);

export const AlertDetail = Type.Object({
  ...AlertView.properties,
  notices: Type.Array(
    Type.Object({
      kind: Type.Union([Type.Literal('fired'), Type.Literal('resolved')]),
      status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
      attempts: Type.Integer(),
      lastStatus: Type.Union([Type.Integer(), Type.Null()]),
      lastError: Type.Union([Type.String(), Type.Null()]),
      deliveredAt: NullableIso,
    }),
  ),
});

export const AlertQuery = PagedQuery({
  status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('resolved')])),
  ruleId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  instanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});
