/** /admin overview and bulk operations: stats, outbox backlog, dead letters across instances, many reconnects. */
import { Type } from 'typebox';
import { PagedQuery } from '../../http/schemas.js';
import { INSTANCE_STATUSES, NETWORKS } from '../../network/port.js';

const Counts = Type.Record(Type.String(), Type.Integer());

export const StatsReply = Type.Object({
  instances: Type.Object({
    total: Type.Integer(),
    byStatus: Counts,
    byNetwork: Counts,
  }),
  sendsPerMinute: Type.Integer({ description: 'Messages the instances sent (stored with fromMe) during the last 60 seconds.' }),
  pendingByChannel: Type.Record(Type.String(), Type.Integer(), { description: 'Events waiting in the outbox, per delivery channel.' }),
  deadLetters: Type.Object({ total: Type.Integer(), byChannel: Counts }),
  channels: Type.Record(Type.String(), Type.Object({ up: Type.Boolean(), detail: Type.Optional(Type.String()) }), {
    description: 'Connection state of each configured delivery channel.',
  }),
});

const IsoTime = Type.String({ format: 'date-time', description: 'ISO 8601 time.' });

export const OutboxQuery = PagedQuery({
  instanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  channel: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Delivery channel: `webhook`, `amqp`, `redis`, `nats`, `mqtt`, ...' }),
  ),
});

export const OutboxLane = Type.Object({
  channel: Type.String(),
  instanceId: Type.String(),
  pending: Type.Integer({ description: 'Events waiting for this channel and instance.' }),
  oldestCreatedAt: IsoTime,
  maxAttempts: Type.Integer({ description: 'Most failed attempts of one waiting event (0: none failed yet).' }),
});

export const DeadLetterQuery = PagedQuery({
  instanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  event: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Event type, e.g. `MESSAGE`.' })),
  since: Type.Optional(IsoTime),
  until: Type.Optional(IsoTime),
});

const filterFields = {
  instanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  event: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  since: Type.Optional(IsoTime),
  until: Type.Optional(IsoTime),
  ids: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 1000, description: 'Dead-letter ids.' }),
  ),
  all: Type.Optional(Type.Boolean({ description: 'Required (true) when no other filter is given.' })),
};

export const DeadLetterRetryBody = Type.Object(
  {
    ...filterFields,
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'At most this many are resent per call, oldest first.' }),
    ),
  },
  { additionalProperties: false, examples: [{ instanceId: '7c9e6679-7425-40de-944b-e07fc1f90ae7', channel: 'webhook', limit: 100 }] },
);

export const DeadLetterPurgeBody = Type.Object(filterFields, {
  additionalProperties: false,
  examples: [{ instanceId: '7c9e6679-7425-40de-944b-e07fc1f90ae7', until: '2026-11-01T00:00:00Z' }],
});

export const RetryManyReply = Type.Object({
  matched: Type.Integer(),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  results: Type.Array(
    Type.Object({
      id: Type.String(),
      delivered: Type.Boolean(),
      status: Type.Union([Type.Integer(), Type.Null()]),
      attempts: Type.Integer(),
      error: Type.Optional(Type.String()),
    }),
  ),
});

export const PurgeReply = Type.Object({ purged: Type.Integer() });

export const ReconnectManyBody = Type.Object(
  {
    ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 1000 })),
    status: Type.Optional(Type.Array(Type.Enum(INSTANCE_STATUSES), { minItems: 1 })),
    network: Type.Optional(Type.Enum(NETWORKS)),
    all: Type.Optional(Type.Boolean({ description: 'Required (true) when no other filter is given.' })),
    mode: Type.Optional(
      Type.Union([Type.Literal('reconnect'), Type.Literal('restart')], {
        default: 'reconnect',
        description:
          '`reconnect` drops the connection and connects again; `restart` also rebuilds the session (driver state) before connecting.',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ status: ['DISCONNECTED'], network: 'whatsapp', mode: 'reconnect' }] },
);

export const ReconnectManyReply = Type.Object({
  matched: Type.Integer(),
  done: Type.Integer(),
  skipped: Type.Integer(),
  failed: Type.Integer(),
  results: Type.Array(
    Type.Object({
      instanceId: Type.String(),
      outcome: Type.Union([Type.Literal('done'), Type.Literal('skipped'), Type.Literal('failed')]),
      error: Type.Optional(Type.String()),
    }),
  ),
});
