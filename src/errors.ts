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
  /** A read-only caller (a viewer's session) on a route that changes something. */
  readOnlyCaller: () => new AppError('read_only', 403, 'this account may only read; ask an owner or operator'),
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
  /** The network refuses the operation to this account (not an admin, not the owner, blocked). */
  forbidden: (message: string) => new AppError('forbidden', 403, message),
  /** The instance's network driver lacks the capability (yet). */
  /** Another gateway process is the active one for this database (storage/active-lease.ts). */
  standby: () =>
    new AppError('standby', 503, 'this gateway process is on standby: another process is active for this database; send the request there'),
  notSupported: (operation: string, network: string) =>
    new AppError('not_supported', 501, `${operation} is not supported by the ${network} driver yet`),
  /** Media given to a /send route is malformed (bad base64, bad URL) or not allowed for its kind. */
  invalidMedia: (message: string) => new AppError('invalid_media', 400, message),
  mediaTooLarge: (message: string) => new AppError('media_too_large', 413, message),
  unsupportedMedia: (message: string) => new AppError('unsupported_media_type', 415, message),
  /** A media URL that could not be fetched, or that points where the gateway may not go (SSRF). */
  mediaUnreachable: (message: string) => new AppError('media_unreachable', 422, message),
  mediaUrlRefused: (message: string) => new AppError('media_url_refused', 422, message),
  // integrations/chatwoot: setup against a Chatwoot server, its webhook
  chatwootUnreachable: (message: string) => new AppError('chatwoot_unreachable', 502, `Chatwoot could not be reached: ${message}`),
  chatwootRefused: (message: string) => new AppError('chatwoot_refused', 422, message),
  chatwootWebhookRefused: (message: string) => new AppError('chatwoot_webhook_refused', 401, `webhook refused: ${message}`),
  // mcp/: the MCP server at /mcp
  mcpHostRefused: (host: string) =>
    new AppError('mcp_host_refused', 403, `host "${host}" is not allowed for /mcp (set MCP_ALLOWED_HOSTS)`),
  mcpOriginRefused: (origin: string) =>
    new AppError('mcp_origin_refused', 403, `origin "${origin}" is not allowed for /mcp (set MCP_ALLOWED_ORIGINS)`),
  mcpSessionUnknown: () => new AppError('mcp_session_unknown', 404, 'MCP session not found (expired or closed); initialise a new one'),
  mcpSessionNeeded: () =>
    new AppError('mcp_session_needed', 405, 'GET and DELETE on /mcp need an Mcp-Session-Id (open a session with initialize); POST works without one'),
  mcpTooManySessions: () => new AppError('mcp_too_many_sessions', 503, 'too many open MCP sessions; close one or retry later (MCP_MAX_SESSIONS)'),
  // admin/: failover groups
  failoverGroupNotFound: (groupId: string) => new AppError('failover_group_not_found', 404, `failover group ${groupId} not found`),
  failoverGroupNameTaken: (name: string) => new AppError('failover_group_name_taken', 409, `a failover group named ${name} already exists`),
  failoverUnknownMembers: (ids: string[]) => new AppError('failover_unknown_members', 400, `members: no instance with id ${ids.join(', ')}`),
  /** A failover-group token on an instance route other than /send/*. */
  groupTokenSendOnly: () =>
    new AppError('group_token_send_only', 403, 'a failover-group token may only call the /send/* routes; use an instance token for this route'),
  /** No member of the group is connected with health at or above minHealth (or every one refused the send). */
  failoverNoEligibleMember: (name: string, detail: string) =>
    new AppError('failover_no_eligible_member', 503, `no member of failover group ${name} can send now: ${detail}`),
  // admin/: alerts, backfill, bulk operations
  /** A bulk operation without any filter: it would act on everything. */
  filterRequired: (what: string) =>
    new AppError('filter_required', 400, `${what} needs at least one filter; send "all": true to act on everything`),
  /** A backfill's source or target cannot be used (unknown channel, no webhook URL, no events in range). */
  backfillRefused: (message: string) => new AppError('backfill_refused', 400, message),
  // auth/: users of the web interface, sessions (JWT + refresh tokens), invitations
  invalidCredentials: () => new AppError('invalid_credentials', 401, 'wrong email or password'),
  sessionRequired: () =>
    new AppError('session_required', 401, 'this route needs a signed-in user: send Authorization: Bearer <accessToken> from POST /auth/login'),
  invalidSession: () => new AppError('invalid_session', 401, 'invalid or expired access token; refresh it or sign in again'),
  invalidRefreshToken: () => new AppError('invalid_refresh_token', 401, 'invalid or expired refresh token; sign in again'),
  refreshTokenReused: () =>
    new AppError('refresh_token_reused', 401, 'this refresh token was already used; every session of that sign-in was ended, sign in again'),
  registrationClosed: () =>
    new AppError('registration_closed', 403, 'registration is closed: ask an owner for an invitation code'),
  invalidInvitation: () => new AppError('invalid_invitation', 403, 'invitation code is unknown, used or expired'),
  ownerOnly: () => new AppError('owner_only', 403, 'only an owner may do this'),
  loginLocked: (retryAfter: number) =>
    new AppError('login_locked', 429, 'too many failed sign-ins; wait before trying again', { retryAfter }),
  // security: outbound targets (webhooks) and request admission
  /** A webhook URL (instance webhook, alert rule) set by a caller other than the admin key points at a private or loopback address: syntactically valid, refused by policy. */
  webhookUrlRefused: (message: string) => new AppError('webhook_url_refused', 422, message),
  /** An integration's callback/base URL set with an instance token points at a private or loopback address. */
  callbackUrlRefused: (message: string) => new AppError('callback_url_refused', 422, message),
  /** Too many media bytes are being received at once (MEDIA_INFLIGHT_MAX_BYTES): try again shortly. */
  mediaBusy: (retryAfter: number) =>
    new AppError('media_busy', 503, 'too much media is being received right now; retry after retryAfter seconds (MEDIA_INFLIGHT_MAX_BYTES)', { retryAfter }),
  sunset: () =>
    new AppError('gone', 410, 'unprefixed routes were removed on 2027-01-01; use the same path under /api/v1'),
} as const;
