/**
 * The one place that turns any error into `{ "error": "...", "code": "..." }`, every code declared
 * in src/errors.ts. No input may produce a 500.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errors } from '../errors.js';
import { isDatabaseUnavailable } from '../storage/db.js';
import { StaleOwnerError } from '../storage/fence.js';

/** Validation errors list every problem found, up to this many. */
export const MAX_VALIDATION_DETAILS = 20;

interface ValidationIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

function describe(context: string, issue: ValidationIssue): string {
  const where = `${context}${issue.instancePath ?? ''}`.replace(/\//g, '.');
  if (issue.keyword === 'required') return `${where}.${String(issue.params?.missingProperty)} is required`;
  if (issue.keyword === 'additionalProperties') {
    return `${where}.${String(issue.params?.additionalProperty)} is not an allowed field`;
  }
  return `${where} ${issue.message ?? 'is invalid'}`;
}

/** Every problem once, in the order Ajv found them, at most MAX_VALIDATION_DETAILS. */
export function validationError(context: string, issues: ValidationIssue[]): AppError {
  const details = [...new Set(issues.map((issue) => describe(context, issue)))];
  return errors.validationFailed(details.slice(0, MAX_VALIDATION_DETAILS));
}

/** A 4xx raised by Fastify itself (body parsing, limits), as a declared code. */
function httpLayerError(error: FastifyError, status: number): AppError {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidJson(error.message);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.bodyTooLarge(error.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedContentType(error.message);
    default:
      if (status === 413) return errors.bodyTooLarge(error.message);
      if (status === 415) return errors.unsupportedContentType(error.message);
      return errors.requestRejected(status, error.message);
  }
}

function send(reply: FastifyReply, error: AppError) {
  const retryAfter = error.extra?.retryAfter;
  if (typeof retryAfter === 'number' && !reply.hasHeader('Retry-After')) void reply.header('Retry-After', String(retryAfter));
  return reply.status(error.status).send({ error: error.message, code: error.code, ...error.extra });
}

/**
 * Cluster mode: a route that reached for a session another process holds (an admin route naming an
 * instance) is served there instead; answers false when it cannot be (then the error stands).
 */
export type ServeElsewhere = (error: AppError, request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;

export function registerErrorHandling(app: FastifyInstance, elsewhere?: ServeElsewhere): void {
  app.setErrorHandler(async (error: FastifyError | AppError | StaleOwnerError, request, reply) => {
    if (error instanceof AppError) {
      // (A boolean: a reply is thenable, so awaiting one would wait for the answer to finish.)
      if (elsewhere && (await elsewhere(error, request, reply))) return reply;
      if (error.status === 500) request.log.error({ err: error }, 'internal error');
      return send(reply, error);
    }
    // Cluster mode: the instance moved to another process while this one was writing for it.
    if (error instanceof StaleOwnerError) return send(reply, errors.instanceMoving(error.instanceIds[0] ?? '', 1));
    if (error.validation) {
      return send(reply, validationError(error.validationContext ?? 'body', error.validation));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) return send(reply, httpLayerError(error, status));
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      return send(reply, errors.databaseUnavailable());
    }
    request.log.error({ err: error }, 'unhandled error');
    return send(reply, errors.internal());
  });

  app.setNotFoundHandler((request, reply) => send(reply, errors.routeNotFound(request.method, request.url.split('?')[0] ?? '')));
}
