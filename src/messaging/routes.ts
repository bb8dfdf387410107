/** /send routes. */
import { errorResponses, INSTANCE } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import { SendReply, SendTextBody } from './schema.js';
import type { MessagingService } from './service.js';

const tags = ['send'];

export function sendRoutes(messaging: MessagingService): RoutePlugin {
  return async (app) => {
    app.post('/send/text', {
      config: { access: 'instance' },
      schema: {
        tags, security: INSTANCE, summary: 'Send a text message',
        description: 'Sends `text` to `number`. The reply carries the message `key`; a SEND_MESSAGE event follows. 409 `instance is not connected` when the instance is not CONNECTED.',
        body: SendTextBody, response: { 200: SendReply, ...errorResponses(401, 403, 409, 503) },
      },
    }, async (request) => messaging.send(callerInstance(request), { kind: 'text', to: request.body.number, text: request.body.text }));
  };
}
