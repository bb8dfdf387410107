/** Backfill jobs (admin). */
import { Type } from 'typebox';
import { InstanceId, PagedQuery } from '../../http/schemas.js';
import { EVENT_TYPES } from '../../network/port.js';

const Iso = Type.String({ format: 'date-time' });
const Status = Type.Union([
  Type.Literal('queued'),
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('cancelled'),
  Type.Literal('failed'),
]);

export const BackfillBody = Type.Object(
  {
    instanceId: InstanceId,
    since: Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        'Start of the range, inclusive: an ISO 8601 time (e.g. `2026-11-23T10:00:00Z`) or the `eventId` of a stored event of this instance.',
      examples: ['2026-11-23T10:00:00Z'],
    }),
    until: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'End of the range, inclusive: an ISO time or an eventId. Omitted: up to the last event stored when the job is created.',
      }),
    ),
    events: Type.Optional(
      Type.Array(Type.Enum(EVENT_TYPES), {
        minItems: 1,
        maxItems: EVENT_TYPES.length,
        uniqueItems: true,
        description: 'Only these event types; all when omitted.',
      }),
    ),
    target: Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        "`webhook` (the instance's current webhookUrl, signed with its secret) or a delivery channel name (`amqp`, `redis`, `nats`, `mqtt`, ...).",
      examples: ['webhook'],
    }),
    ratePerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'Pace; default BACKFILL_RATE_PER_SECOND.' })),
  },
  { additionalProperties: false },
);

export const JobView = Type.Object(
  {
    jobId: Type.String(),
    instanceId: Type.String(),
    target: Type.String(),
    since: Type.String(),
    until: Type.Union([Type.String(), Type.Null()]),
    events: Type.Union([Type.Array(Type.String()), Type.Null()]),
    ratePerSecond: Type.Integer(),
    status: Status,
    total: Type.Integer({ description: 'Events in the range when the job was created.' }),
    delivered: Type.Integer(),
    lastEventId: Type.Union([Type.String(), Type.Null()], { description: 'The last event re-delivered (a new job can start after it).' }),
    error: Type.Union([Type.String(), Type.Null()]),
    createdAt: Iso,
    updatedAt: Iso,
    finishedAt: Type.Union([Iso, Type.Null()]),
  },
  { title: 'BackfillJob' },
);

export const JobParams = Type.Object({ job_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

export const JobQuery = PagedQuery({
  instanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  status: Type.Optional(Status),
});
