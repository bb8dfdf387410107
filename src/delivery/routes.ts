/** Dead-letter routes (admin) and the WebSocket event stream (/ws). */
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { errors } from '../errors.js';
import { ADMIN, errorResponses, InstanceIdParams, Page, PagingQuery } from '../http/schemas.js';
import type { RoutePlugin } from '../http/types.js';
import { DeadLetterParams, DeadLetterView, RetryReply } from '../instances/schema.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { DeadLetterService } from '../events/dead-letter-service.js';
import { TOO_MANY_CLOSE, type WebSocketHub } from '../events/sinks/websocket.js';

/** The refusal of an upgrade that lacks its query parameters. */
const MISSING_PARAMS = 'token and instanceId query parameters are required';

export function eventRoutes(deadLetters: DeadLetterService, instances: InstanceService, hub: WebSocketHub): RoutePlugin {
  /** What the pre-upgrade check found, for the handler of the same request. */
  const streamGrants = new WeakMap<object, Awaited<ReturnType<InstanceService['authenticateToken']>>>();
  return async (app) => {
    app.get(
      '/instance/webhook-dead-letters/:instance_id',
      {
        config: { access: 'admin' },
        schema: {
          tags: ['events'],
          security: ADMIN,
          summary: 'List dead letters of an instance',
          description:
            'Webhook events that failed every automatic attempt (WEBHOOK_MAX_ATTEMPTS, default 5, with exponential backoff and jitter from WEBHOOK_RETRY_BASE_MS up to WEBHOOK_RETRY_MAX_MS). Oldest first, paged.',
          params: InstanceIdParams,
          querystring: PagingQuery,
          response: { 200: Page(DeadLetterView), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => deadLetters.list(request.params.instance_id, request.query.offset, request.query.limit),
    );

    app.post(
      '/instance/webhook-dead-letters/retry/:dead_letter_id',
      {
        config: { access: 'admin' },
        schema: {
          tags: ['events'],
          security: ADMIN,
          summary: 'Resend a dead letter',
          description:
            "Sends the stored envelope (same eventId, same body, fresh signature) to the instance's current webhook URL once, and waits for the answer. `delivered: true`: the dead letter is removed. `delivered: false`: it stays, `attempts` grows and `error` says why. Either way the reply is 200; 404 for an unknown id.",
          params: DeadLetterParams,
          response: { 200: RetryReply, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => deadLetters.retry(request.params.dead_letter_id),
    );

    app.get(
      '/ws',
      {
        websocket: true,
        schema: {
          tags: ['events'],
          summary: 'Event stream (WebSocket)',
          description:
            'Upgrade to a WebSocket with `?token=<instance token>&instanceId=<id>`. The server pushes each event envelope as a JSON text frame, pings every WS_PING_INTERVAL_MS and drops clients that do not answer. Live and best-effort: events while disconnected are not replayed here (use webhooks or a broker for that). An upgrade that cannot be served is refused before it happens with an HTTP answer in the usual error shape: 400 `validation_failed` (token or instanceId missing), 401 `invalid_api_key` or `token_expired`, 403 `wrong_instance` (a token of another instance), 429 `too_many_streams` (the instance already has WS_MAX_CONNECTIONS_PER_INSTANCE streams, default 50). Once open, a stream lives no longer than its token: when the token it was opened with is rotated (or was already in its grace period), the stream closes with 4401 `token expired, please use the new token` when the grace ends; deleting the instance closes it with 4404. A client that reads too slowly (more than WS_MAX_BUFFERED_BYTES unsent) is disconnected with 1013 `client too slow`. Frames from the client are not used; one over 64 KiB closes the stream (1009).',
          querystring: Type.Object({ token: Type.Optional(Type.String()), instanceId: Type.Optional(Type.String()) }),
          response: { ...errorResponses(401, 403, 429) },
        },
        // Checked before the upgrade: a refused client gets an HTTP status it can read, not an open
        // socket closed at once.
        preValidation: async (request) => {
          const { token, instanceId } = request.query;
          if (!token || !instanceId) throw errors.validationFailed([MISSING_PARAMS]);
          const grant = await instances.authenticateToken(token);
          if (grant.instance.id !== instanceId) throw errors.wrongInstance();
          if (!hub.hasRoom(instanceId)) throw errors.tooManyStreams();
          streamGrants.set(request, grant);
        },
      },
      async (socket: WebSocket, request) => {
        const grant = streamGrants.get(request)!;
        // Checked again: another stream may have taken the last place since the check above.
        if (!hub.hasRoom(grant.instance.id)) return socket.close(TOO_MANY_CLOSE.code, TOO_MANY_CLOSE.reason);
        // A grace token's stream closes when its grace ends; a primary's when a rotation's grace ends.
        hub.add(grant.instance.id, socket, { tokenHash: grant.tokenHash, validUntil: grant.validUntil });
      },
    );
  };
}
