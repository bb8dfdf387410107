/**
 * The one error type. Services throw AppError with a stable code; the HTTP error handler turns it
 * into `{ "error": message }` (plus `details` or extra fields when given) with its status.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const errors = {
  invalidApiKey: () => new AppError('invalid_api_key', 401, 'invalid api key'),
  tokenExpired: () => new AppError('token_expired', 401, 'token expired, please use the new token'),
  adminOnly: () => new AppError('admin_only', 403, 'this route needs the admin key'),
  instanceOnly: () =>
    new AppError(
      'instance_only',
      403,
      'this route needs an instance token; the admin key acts on an instance through the /instance/.../{instance_id} routes',
    ),
  rateLimited: (retryAfter: number) =>
    new AppError('rate_limited', 429, 'rate limit exceeded', { retryAfter }),
  notFound: (what: string) => new AppError('not_found', 404, `${what} not found`),
  conflict: (message: string) => new AppError('conflict', 409, message),
  badRequest: (message: string, details?: unknown[]) =>
    new AppError('bad_request', 400, message, details ? { details } : {}),
  notConnected: (status: string) =>
    new AppError('instance_not_connected', 409, `instance is not connected (status ${status}); connect it first`),
  sunset: () =>
    new AppError('gone', 410, 'unprefixed routes were removed on 2027-01-01; use the same path under /api/v1'),
} as const;
