/** /admin/backfill routes (admin key): start, follow and cancel re-delivery jobs. */
import { ADMIN, errorResponses, Page } from '../../http/schemas.js';
import type { RoutePlugin } from '../../http/types.js';
import * as S from './schema.js';
import type { BackfillService } from './service.js';

const tags = ['admin'];
const admin = { access: 'admin' as const };

export function backfillRoutes(backfill: BackfillService): RoutePlugin {
  return async (app) => {
    app.post(
      '/admin/backfill',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Re-deliver stored events (backfill)',
          description:
            'Starts a job (202) that re-delivers the instance\'s stored events in the range — the live outbox plus the event archive, which keeps delivered events EVENT_ARCHIVE_DAYS (default 7) — to `target`, in their original order, at `ratePerSecond`. Each envelope is the original one (same `eventId`, `timestamp`, `data`) with `"redelivered": true` added, signed afresh for webhooks. The range is fixed at creation (`total`); a restart resumes the job after the last event delivered. A failing receiver is retried with the channel\'s backoff; after its last attempt the job is `failed` with `error` and `lastEventId`. 400 for an unknown target, an instance without that delivery, or an eventId not stored for this instance; 404 for an unknown instance.',
          body: S.BackfillBody,
          response: { 202: S.JobView, ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) => reply.status(202).send(await backfill.create(request.body)),
    );

    app.get(
      '/admin/backfill',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'List backfill jobs',
          description: 'Jobs, newest first, paged; filter with `instanceId` and `status`.',
          querystring: S.JobQuery,
          response: { 200: Page(S.JobView), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const { offset, limit, ...filter } = request.query;
        return backfill.list(filter, offset, limit);
      },
    );

    app.get(
      '/admin/backfill/:job_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Progress of a backfill job',
          description:
            '`status` (`queued`, `running`, `completed`, `cancelled`, `failed`), `delivered` of `total`, the last event delivered. 404 for an unknown id.',
          params: S.JobParams,
          response: { 200: S.JobView, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => backfill.get(request.params.job_id),
    );

    app.post(
      '/admin/backfill/:job_id/cancel',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Cancel a backfill job',
          description:
            'Stops the job after the event in flight; events already re-delivered stay delivered. 409 when the job has already finished; 404 for an unknown id.',
          params: S.JobParams,
          response: { 200: S.JobView, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => backfill.cancel(request.params.job_id),
    );
  };
}
