/**
 * One access line per request, written when it is answered: method, path, status and time in one
 * line. Fastify's own logging writes two (one on arrival, one on the answer), and at the default
 * LOG_LEVEL=info each line costs the send road several per cent of its rate (bench/README, twentieth
 * run). The arrival line is kept at `debug`, for finding requests that never get an answer, and at
 * `info` for streams: a WebSocket taken over is never answered, and an event stream (MCP's) is
 * answered only when it closes, so their arrival is the line that says they are open.
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

export class AccessLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (opensStream(request)) request.log.info({ req: request }, 'incoming request');
    else request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

function opensStream(request: FastifyRequest): boolean {
  const { upgrade, accept } = request.headers;
  return upgrade !== undefined || (request.method === 'GET' && accept !== undefined && accept.includes('text/event-stream'));
}
