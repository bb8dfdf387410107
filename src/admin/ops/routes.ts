/** /admin overview and bulk routes (admin key): stats, outbox backlog, dead letters, many reconnects. */
import { ADMIN, errorResponses, Page } from '../../http/schemas.js';
import type { RoutePlugin } from '../../http/types.js';
import { DeadLetterView } from '../../instances/schema.js';
import type { AdminOpsService } from './service.js';
import * as S from './schema.js';

const tags = ['admin'];
const admin = { access: 'admin' as const };

export function adminOpsRoutes(ops: AdminOpsService): RoutePlugin {
  return async (app) => {
    app.get(
      '/admin/stats',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Overview of the whole gateway',
          description:
            'Instances by status and by network, messages sent during the last minute (all instances), events waiting in the outbox per delivery channel, dead letters in total and per channel, and the connection state of each channel. Counts come straight from the database at the time of the call.',
          response: { 200: S.StatsReply, ...errorResponses(401, 403) },
        },
      },
      async () => ops.stats(),
    );

    app.get(
      '/admin/outbox',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Outbox backlog across instances',
          description:
            'Events waiting for delivery, grouped by (channel, instance), largest backlog first, paged. Filter with `instanceId` and `channel`. `maxAttempts` above 0 means the receiver is failing (its events are being retried in order).',
          querystring: S.OutboxQuery,
          response: { 200: Page(S.OutboxLane), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const { offset, limit, ...filter } = request.query;
        return ops.outbox(filter, offset, limit);
      },
    );

    app.get(
      '/admin/dead-letters',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Dead letters across instances',
          description:
            'Dead letters of every instance and channel, oldest first, paged. Filters (all optional, combined with AND): `instanceId`, `channel`, `event` (event type), `since` and `until` (ISO times, inclusive, on when the delivery gave up). Each item is the same as in `GET /instance/webhook-dead-letters/{instance_id}`.',
          querystring: S.DeadLetterQuery,
          response: { 200: Page(DeadLetterView), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const { offset, limit, ...filter } = request.query;
        return ops.deadLetters(filter, offset, limit);
      },
    );

    app.post(
      '/admin/dead-letters/retry',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Resend many dead letters',
          description:
            'Resends the dead letters matching the filter (same fields as the listing, plus `ids`), oldest first, at most `limit` (default 100, max 1000) per call, one after another, each exactly like `POST /instance/webhook-dead-letters/retry/{dead_letter_id}`: delivered ones are removed, failed ones stay with their attempt count raised. An empty filter is refused (400) unless `"all": true`. Call again while `matched` equals `limit` to go through more.',
          body: S.DeadLetterRetryBody,
          response: { 200: S.RetryManyReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => ops.retryDeadLetters(request.body),
    );

    app.post(
      '/admin/dead-letters/purge',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Delete many dead letters',
          description:
            'Deletes every dead letter matching the filter (same fields as the listing, plus `ids`) and answers how many. Irreversible. An empty filter is refused (400) unless `"all": true`.',
          body: S.DeadLetterPurgeBody,
          response: { 200: S.PurgeReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => ops.purgeDeadLetters(request.body),
    );

    app.post(
      '/admin/instances/reconnect',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Reconnect or restart many instances',
          description:
            'Acts on the instances given by `ids`, or on every instance matching `status` (a list) and `network`; an empty selection is refused (400) unless `"all": true`. `mode: "reconnect"` (default) drops each connection and connects again with the same credentials, as `POST /instance/reconnect/{instance_id}` does; `mode: "restart"` also closes and rebuilds the session first. Instances never linked to a phone are skipped (connecting them would start pairing), unknown ids too. Eight run at a time; the reply lists each outcome.',
          body: S.ReconnectManyBody,
          response: { 200: S.ReconnectManyReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => ops.reconnectMany(request.body),
    );
  };
}
