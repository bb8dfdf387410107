/** Dead-letter routes (admin) and the WebSocket event stream (/ws). */
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { AppError } from '../errors.js';
import { ADMIN, errorResponses, InstanceIdParams, Page, PagingQuery } from '../http/schemas.js';
import type { RoutePlugin } from '../http/types.js';
import { DeadLetterParams, DeadLetterView, RetryReply } from '../instances/schema.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { DeadLetterService } from '../events/dead-letter-service.js';
import { TOO_MANY_CLOSE, type WebSocketHub } from '../events/sinks/websocket.js';

/** Close codes sent when a WebSocket is refused (4000 + the HTTP status it would have had). */
export const WS_CLOSE = {
  missingParams: { code: 4400, reason: 'token and instanceId query parameters are required' },
  invalidToken: { code: 4401, reason: 'invalid api key' },
  expiredToken: { code: 4401, reason: 'token expired, please use the new token' },
  wrongInstance: { code: 4403, reason: 'token does not belong to this instanceId' },
} as const;

export function eventRoutes(deadLetters: DeadLetterService, instances: InstanceService, hub: WebSocketHub): RoutePlugin {
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
            'Upgrade to a WebSocket with `?token=<instance token>&instanceId=<id>`. The server pushes each event envelope as a JSON text frame, pings every WS_PING_INTERVAL_MS and drops clients that do not answer. Live and best-effort: events while disconnected are not replayed here (use webhooks or a broker for that). Refusals close the socket with 4400 (missing parameters), 4401 (`invalid api key` or `token expired, please use the new token`), 4403 (token of another instance) or 4429 (the instance already has WS_MAX_CONNECTIONS_PER_INSTANCE streams, default 50). A stream lives no longer than its token: when the token it was opened with is rotated (or was already in its grace period), the stream closes with 4401 `token expired, please use the new token` when the grace ends; deleting the instance closes it with 4404. A client that reads too slowly (more than WS_MAX_BUFFERED_BYTES unsent) is disconnected with 1013 `client too slow`. Frames from the client are not used; one over 64 KiB closes the stream (1009).',
          querystring: Type.Object({ token: Type.Optional(Type.String()), instanceId: Type.Optional(Type.String()) }),
        },
      },
      async (socket: WebSocket, request) => {
        const { token, instanceId } = request.query;
        if (!token || !instanceId) return socket.close(WS_CLOSE.missingParams.code, WS_CLOSE.missingParams.reason);
        try {
          const { instance: owner, tokenHash, validUntil } = await instances.authenticateToken(token);
          if (owner.id !== instanceId) return socket.close(WS_CLOSE.wrongInstance.code, WS_CLOSE.wrongInstance.reason);
          if (!hub.hasRoom(instanceId)) return socket.close(TOO_MANY_CLOSE.code, TOO_MANY_CLOSE.reason);
          // A grace token's stream closes when its grace ends; a primary's when a rotation's grace ends.
          hub.add(instanceId, socket, { tokenHash, validUntil });
        } catch (error) {
          const refusal = error instanceof AppError && error.code === 'token_expired' ? WS_CLOSE.expiredToken : WS_CLOSE.invalidToken;
          socket.close(refusal.code, refusal.reason);
        }
      },
    );
  };
}
