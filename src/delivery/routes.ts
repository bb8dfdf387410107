/** Dead-letter routes (admin) and the WebSocket event stream (/ws). */
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { errors } from '../errors.js';
import { ADMIN, errorResponses, errorResponsesOf, InstanceIdParams, Page, PagingQuery } from '../http/schemas.js';
import type { RoutePlugin } from '../http/types.js';
import { DeadLetterParams, DeadLetterView, RetryReply } from '../instances/schema.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { DeadLetterService } from '../events/dead-letter-service.js';
import { TOO_MANY_CLOSE, type WebSocketHub } from '../events/sinks/websocket.js';

/** The refusal of an upgrade that lacks its query parameters. */
const MISSING_PARAMS = 'token and instanceId query parameters are required';

/**
 * The query of an upgrade. Declared required for the document; the pre-upgrade check refuses a
 * missing one first, with its own message.
 */
const StreamQuery = Type.Object({
  token: Type.String({
    description:
      'The instance token (what instance routes take in the `apikey` header; a WebSocket upgrade from a browser cannot set headers). A token in its grace period after a rotation works until the grace ends.',
  }),
  instanceId: Type.String({ description: "The instance whose events to stream; the token must be this instance's." }),
});

const STREAM_DESCRIPTION = [
  'Upgrade to a WebSocket with `GET /api/v1/ws?token=<instance token>&instanceId=<id>` (also `/ws`, deprecated like every unprefixed route: its 101 answer carries the `Deprecation`, `Sunset` and `Link` headers). The admin key is not accepted here; every instance at once: `/admin/ws` with a user access token or the admin key.',
  '',
  "**Frames.** Each text frame from the server is one JSON event envelope (schema `EventEnvelope`: `event`, `instanceId`, `instanceName`, `data`, `eventId`, `timestamp`, `seq`), the same bytes a webhook receives; the `data` of each event type is described in the `webhooks` section of this document (one entry per type). Events pass the instance's `webhookEvents` filter. Frames from the client are not used; one over 64 KiB closes the stream (1009). The server pings every WS_PING_INTERVAL_MS and drops clients that do not answer.",
  '',
  '**Live and best-effort.** Events while the client is disconnected are not replayed here: use webhooks or a broker for every event, and `seq` to spot gaps.',
  '',
  '**Refusals before the upgrade** come as an HTTP answer in the usual error shape (`{ "error", "code" }`): 400 `validation_failed` (token or instanceId missing), 401 `invalid_api_key` or `token_expired`, 403 `wrong_instance`, 429 `too_many_streams`.',
  '',
  '**Close codes** of an open stream:',
  '- `4401` `token expired, please use the new token`: the token the stream was opened with was rotated (or was already in its grace period) and its grace ended; `invalid api key` when it stopped being valid at all. Reconnect with the current token.',
  '- `4404` `instance deleted`: the instance was deleted. Do not reconnect.',
  '- `1013` `client too slow`: more than WS_MAX_BUFFERED_BYTES were waiting to be sent to this client. Reconnect and read faster.',
  '- `4429`: another stream took the last place (WS_MAX_CONNECTIONS_PER_INSTANCE) between the check and the upgrade. Retry later.',
  '- `1001` `server shutting down`: the gateway is stopping; reconnect with backoff.',
  '- `4400` and `4403` (missing parameters, a token of another instance) are no longer sent: those refusals are the HTTP 400 and 403 above. Clients written for them (the typed client among them) still treat them as final.',
].join('\n');

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
          description: STREAM_DESCRIPTION,
          querystring: StreamQuery,
          response: {
            101: Type.Null({
              description:
                'Switching Protocols: the connection is now a WebSocket; every event of the instance follows as one JSON text frame (an event envelope).',
              headers: {
                Upgrade: Type.Literal('websocket', { description: 'The protocol switched to.' }),
                Connection: Type.Literal('Upgrade'),
                'Sec-WebSocket-Accept': Type.String({
                  description: "The handshake answer to the client's `Sec-WebSocket-Key` (RFC 6455).",
                }),
              },
            }),
            ...errorResponsesOf([401, 403], {
              400: '`token` or `instanceId` is missing (`validation_failed`); the refusal comes as an HTTP answer, before any upgrade.',
              401: 'The token is unknown (`invalid_api_key`) or a rotated token past its grace period (`token_expired`).',
              403: 'The token belongs to another instance than `instanceId` (`wrong_instance`).',
              429: 'The instance already has WS_MAX_CONNECTIONS_PER_INSTANCE streams open (`too_many_streams`, default 50), or the rate limit was exceeded (`rate_limited`).',
            }),
          },
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
