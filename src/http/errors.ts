/** The one place that turns any error into `{ "error": "..." }`. No input may produce a 500. */
import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

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

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      return reply.status(error.status).send({ error: error.message, ...error.extra });
    }
    if (error.validation) {
      const issues = error.validation as ValidationIssue[];
      const context = error.validationContext ?? 'body';
      const details = issues.map((issue) => describe(context, issue));
      return reply.status(400).send({ error: details[0] ?? 'invalid request', details });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send({ error: error.message });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.status(500).send({ error: 'internal error' });
  });

  app.setNotFoundHandler((request, reply) => {
    return reply.status(404).send({ error: `route ${request.method} ${request.url.split('?')[0]} not found` });
  });
}
