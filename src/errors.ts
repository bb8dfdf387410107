/**
 * The one error registry. Every error code the API can answer is declared once in ERROR_CODES with
 * its HTTP status and what it means; services throw an AppError made by one of the `errors`
 * factories below, and the HTTP error handler (http/errors.ts) turns it into
 * `{ "error": message, "code": code }` (plus `details` or extra fields when given) with its status.
 * docs/errors.md and the OpenAPI `Error` schema list these codes; a test keeps all three in step.
 * `new AppError(` appears in this file only (ESLint enforces it).
 */
export const ERROR_CODES = {
  // keys and limits (http/auth.ts)
  invalid_api_key: { status: 401, meaning: 'The `apikey` header is missing, wrong or malformed (SPEC text: "invalid api key").' },
  token_expired: {
    status: 401,
    meaning: 'A rotated token used after its grace period (SPEC text: "token expired, please use the new token").',
  },
  admin_only: { status: 403, meaning: 'An instance token on a route that needs the admin key.' },
  instance_only: { status: 403, meaning: 'The admin key on a route that acts as one instance.' },
  read_only: { status: 403, meaning: 'A read-only caller on a route that changes something.' },
  rate_limited: { status: 429, meaning: 'Rate limit exceeded (SPEC text: "rate limit exceeded"); the body has `retryAfter` in seconds.' },
  standby: { status: 503, meaning: 'This gateway process is on standby; another process is active for the database.' },
  database_unavailable: {
    status: 503,
    meaning:
      'The database could not be reached (connection refused, closed or timed out, or SQLite busy past its timeout): the request was not carried out, or, when the connection dropped during its commit, its outcome is unknown; the body has `retryAfter` in seconds.',
  },
  forward_failed: {
    status: 502,
    meaning:
      "Cluster mode: the gateway process holding the instance took the request but gave no answer (it stopped, or passed CLUSTER_FORWARD_TIMEOUT_MS); the request may have been carried out, so check (e.g. the instance's events) before repeating a send.",
  },
  instance_moving: {
    status: 503,
    meaning:
      'Cluster mode: the instance is being handed over between gateway processes, or the process holding it cannot be reached (it will lose the instance at its lease expiry); the body has `retryAfter` in seconds.',
  },
  too_many_streams: {
    status: 429,
    meaning: 'The instance already has WS_MAX_CONNECTIONS_PER_INSTANCE event streams open (a /ws upgrade refused before it happens).',
  },
  wrong_instance: { status: 403, meaning: 'The token belongs to another instance than the `instanceId` asked for (a /ws upgrade).' },
  gone: { status: 410, meaning: 'An unprefixed route called after its sunset (2027-01-01).' },

  // the HTTP layer (http/errors.ts)
  validation_failed: {
    status: 400,
    meaning: 'The body, query or path does not match the schema; `details` lists every problem found (at most 20).',
  },
  invalid_json: { status: 400, meaning: 'The body is empty or not valid JSON while Content-Type says JSON.' },
  body_too_large: { status: 413, meaning: 'The body is larger than BODY_LIMIT_BYTES (MEDIA_BODY_LIMIT_BYTES on media routes).' },
  unsupported_content_type: {
    status: 415,
    meaning: 'The body is not application/json (routes that take media also take multipart/form-data).',
  },
  invalid_multipart: {
    status: 400,
    meaning:
      'A multipart/form-data body that cannot be read: malformed, a field given twice, a JSON field that is not JSON, a file in a field that takes none.',
  },
  request_rejected: {
    status: 400,
    meaning: 'Another rejection by the HTTP layer (malformed URL, wrong Content-Length, ...); the status says which.',
  },
  route_not_found: { status: 404, meaning: 'No route has this method and path.' },
  internal_error: { status: 500, meaning: 'A fault of the gateway; the request id is in the logs.' },

  // any feature
  bad_request: {
    status: 400,
    meaning: 'The input breaks a rule the schema cannot state (duplicate ids, a choice count above the options, ...).',
  },
  not_found: { status: 404, meaning: 'The addressed resource (instance, group, chat, label, call, ...) does not exist.' },
  conflict: { status: 409, meaning: 'The request conflicts with the current state (name taken, already a participant, a limit reached).' },
  forbidden: {
    status: 403,
    meaning: 'The network refuses the operation to this account (not an admin, not a participant, not the owner).',
  },
  not_supported: { status: 501, meaning: "The instance's network driver does not support this operation (yet)." },

  // instances and networks (instances/, sessions/, network/)
  instance_not_connected: { status: 409, meaning: 'The instance is not connected; connect it first.' },
  interactive_disabled: {
    status: 409,
    meaning: 'Buttons, lists, carousels and pix on WhatsApp need the instance setting interactiveMessages.',
  },
  network_unavailable: {
    status: 503,
    meaning: 'The network driver is not available, or the network did not offer what was needed (e.g. pairing); try again.',
  },
  network_error: { status: 502, meaning: 'The network failed the request or answered it in a way the gateway cannot use.' },
  network_rate_limited: { status: 429, meaning: 'The network rate-limited this account; try again later.' },

  // media (media/)
  invalid_media: { status: 400, meaning: 'Media is malformed (bad base64, bad URL, empty) or not allowed for its kind.' },
  media_too_large: { status: 413, meaning: "Media larger than its kind's limit (MEDIA_MAX_<KIND>_BYTES)." },
  unsupported_media_type: { status: 415, meaning: 'Media of a type its kind does not take, as sniffed from the bytes.' },
  media_unreachable: { status: 422, meaning: 'A media URL that could not be fetched (HTTP error, timeout, too many redirects).' },
  media_url_refused: { status: 422, meaning: 'A media URL that points where the gateway may not go (private address, plain http).' },

  // sending/ and messages/
  message_not_found: { status: 404, meaning: "The message is not in this instance's message store." },
  message_deleted: { status: 409, meaning: 'The message was deleted for everyone.' },
  not_a_text_message: { status: 409, meaning: 'Only text messages can be edited.' },
  edit_window_closed: { status: 409, meaning: 'The edit window of the message has passed.' },
  no_media: { status: 404, meaning: 'The message has no media.' },
  media_gone: { status: 404, meaning: 'The media of the message is no longer in the media store.' },
  poll_not_found: { status: 404, meaning: 'No poll with this id among the polls the instance sent.' },
  batch_not_found: { status: 404, meaning: 'No batch with this id for this instance.' },

  // network/sandbox/
  not_sandbox: { status: 409, meaning: 'A /sandbox route named an instance that is not on the sandbox network.' },
  pairing_number_mismatch: { status: 409, meaning: 'The pairing code was requested for another number.' },
  number_in_use: { status: 409, meaning: 'The number is already linked to another sandbox instance.' },
  sandbox_number_unknown: { status: 404, meaning: 'No connected sandbox instance has this number.' },
  not_a_poll_recipient: { status: 409, meaning: 'The poll was sent to another number.' },

  // integrations/chatwoot/
  chatwoot_unreachable: { status: 502, meaning: 'The Chatwoot server could not be reached.' },
  chatwoot_refused: { status: 422, meaning: 'The Chatwoot server refused the setup (wrong token, account or inbox).' },
  chatwoot_webhook_refused: { status: 401, meaning: 'A Chatwoot webhook call without the right secret.' },

  // mcp/
  mcp_host_refused: { status: 403, meaning: 'The Host of an /mcp request is not in MCP_ALLOWED_HOSTS.' },
  mcp_origin_refused: { status: 403, meaning: 'The Origin of an /mcp request is not in MCP_ALLOWED_ORIGINS.' },
  mcp_session_unknown: { status: 404, meaning: 'The Mcp-Session-Id names no open session (expired or closed).' },
  mcp_session_needed: { status: 405, meaning: 'GET and DELETE on /mcp need an Mcp-Session-Id.' },
  mcp_too_many_sessions: { status: 503, meaning: 'Too many open MCP sessions (MCP_MAX_SESSIONS).' },

  // admin/, auth/, security additions
  failover_group_not_found: { status: 404, meaning: 'No failover group has this id.' },
  failover_group_name_taken: { status: 409, meaning: 'A failover group with this name exists.' },
  failover_unknown_members: { status: 400, meaning: 'A failover group member is not an instance id.' },
  group_token_send_only: { status: 403, meaning: 'A failover-group token on an instance route other than /send/*.' },
  failover_no_eligible_member: {
    status: 503,
    meaning: 'No member of the failover group is connected with health at or above minHealth (or every one refused the send).',
  },
  filter_required: { status: 400, meaning: 'A bulk operation without any filter; send "all": true to act on everything.' },
  backfill_refused: {
    status: 400,
    meaning: 'A backfill whose source or target cannot be used (unknown channel, no webhook URL, nothing in range).',
  },
  invalid_credentials: { status: 401, meaning: 'Wrong email or password at sign-in.' },
  session_required: { status: 401, meaning: 'A route of the web interface called without the access token of a signed-in user.' },
  invalid_session: { status: 401, meaning: 'The access token (JWT) is invalid, tampered or expired.' },
  invalid_refresh_token: { status: 401, meaning: 'The refresh token is unknown or expired.' },
  refresh_token_reused: { status: 401, meaning: 'A refresh token used twice: every session of that sign-in was ended.' },
  registration_closed: { status: 403, meaning: 'Registration needs an invitation (or AUTH_OPEN_REGISTRATION).' },
  invalid_invitation: { status: 403, meaning: 'The invitation code is unknown, used or expired.' },
  owner_only: { status: 403, meaning: 'Only an owner may do this.' },
  login_locked: { status: 429, meaning: 'Too many failed sign-ins for the account or address; the body has `retryAfter`.' },
  webhook_url_refused: {
    status: 422,
    meaning:
      'A webhook URL set by a caller other than the admin key points at a private or loopback address (WEBHOOK_ALLOW_PRIVATE_URLS lifts it).',
  },
  callback_url_refused: {
    status: 422,
    meaning: 'The base or callback URL of an integration set with an instance token points at a private or loopback address.',
  },
  media_busy: {
    status: 503,
    meaning: 'Too many media bytes are being received at once (MEDIA_INFLIGHT_MAX_BYTES); the body has `retryAfter`.',
  },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Every declared code, in declaration order (for docs and the OpenAPI enum). */
export const ERROR_CODE_LIST = Object.keys(ERROR_CODES) as ErrorCode[];

/** The one error type. Make it with the `errors` factories; the handler sends `{ error, code }`. */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    const resume = status < 500 ? pauseStackTraces() : undefined;
    super(message);
    resume?.();
    this.name = 'AppError';
  }
}

/**
 * Errors made until the returned function is called capture no stack trace. For a request refused
 * as the caller's mistake (a 4xx: nothing of ours failed, so its stack would say nothing); capturing
 * one was an eighth of the CPU of a refused request.
 */
function pauseStackTraces(): () => void {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  return () => {
    Error.stackTraceLimit = limit;
  };
}

/** An Error without a stack trace, for a request refused as the caller's mistake (see pauseStackTraces). */
export function refusal(message: string): Error {
  const resume = pauseStackTraces();
  const error = new Error(message);
  resume();
  return error;
}

/** An AppError of a declared code, its status taken from the registry. */
function fail(code: ErrorCode, message: string, extra?: Record<string, unknown>): AppError {
  return new AppError(code, ERROR_CODES[code].status, message, extra);
}

export const errors = {
  invalidApiKey: () => fail('invalid_api_key', 'invalid api key'),
  tokenExpired: () => fail('token_expired', 'token expired, please use the new token'),
  tooManyStreams: () => fail('too_many_streams', 'too many WebSocket connections for this instance'),
  wrongInstance: () => fail('wrong_instance', 'token does not belong to this instanceId'),
  adminOnly: () => fail('admin_only', 'this route needs the admin key'),
  /** A read-only caller (a viewer's session) on a route that changes something. */
  readOnlyCaller: () => fail('read_only', 'this account may only read; ask an owner or operator'),
  instanceOnly: () =>
    fail(
      'instance_only',
      'this route needs an instance token; the admin key acts on an instance through the /instance/.../{instance_id} routes',
    ),
  rateLimited: (retryAfter: number) => fail('rate_limited', 'rate limit exceeded', { retryAfter }),
  /** Another gateway process is the active one for this database (storage/active-lease.ts). */
  databaseUnavailable: () => fail('database_unavailable', 'the database is unavailable; retry shortly', { retryAfter: 1 }),
  standby: () => fail('standby', 'this gateway process is on standby: another process is active for this database; send the request there'),
  /** Cluster mode: the owner took the forwarded request and never answered. */
  forwardFailed: () =>
    fail('forward_failed', 'the gateway process holding the instance did not answer; the request may have been carried out'),
  /** Cluster mode (src/cluster/): no process can serve the instance right now. */
  instanceMoving: (instanceId: string, retryAfter: number) =>
    fail('instance_moving', `instance ${instanceId} is moving between gateway processes; try again shortly`, { retryAfter }),

  // http/: what the HTTP layer itself refuses
  /** `details` lists every problem found; the message is the first. */
  validationFailed: (details: string[]) => fail('validation_failed', details[0] ?? 'invalid request', { details }),
  invalidJson: (message: string) => fail('invalid_json', message),
  bodyTooLarge: (message: string) => fail('body_too_large', message),
  unsupportedContentType: (message: string) => fail('unsupported_content_type', message),
  invalidMultipart: (message: string) => fail('invalid_multipart', message),
  /** Any other 4xx of the HTTP layer keeps its status; its code is request_rejected. */
  requestRejected: (status: number, message: string) => new AppError('request_rejected', status, message),
  routeNotFound: (method: string, path: string) => fail('route_not_found', `route ${method} ${path} not found`),
  internal: (message = 'internal error') => fail('internal_error', message),

  /** `what` names the missing thing: `instance` gives "instance not found". */
  notFound: (what: string) => fail('not_found', `${what} not found`),
  /** A 404 whose whole text is given (e.g. "invite code is invalid or was revoked"). */
  notFoundText: (message: string) => fail('not_found', message),
  conflict: (message: string) => fail('conflict', message),
  badRequest: (message: string, details?: string[]) => fail('bad_request', message, details ? { details } : {}),
  /** The network refuses the operation to this account (not an admin, not the owner, blocked). */
  forbidden: (message: string) => fail('forbidden', message),
  /** The instance's network driver lacks the capability (yet). */
  notSupported: (operation: string, network: string) => fail('not_supported', `${operation} is not supported by the ${network} driver yet`),
  notSupportedText: (message: string) => fail('not_supported', message),

  // instances/, sessions/, network/
  notConnected: (status: string) => fail('instance_not_connected', `instance is not connected (status ${status}); connect it first`),
  connectionNotOpen: (detail: string) => fail('instance_not_connected', `WhatsApp connection is not open (${detail})`),
  interactiveDisabled: (kind: string) =>
    fail(
      'interactive_disabled',
      `${kind} messages are sent as raw interactive messages that WhatsApp renders inconsistently and that add ban risk; enable the instance setting interactiveMessages to use them`,
    ),
  networkUnavailable: (message: string) => fail('network_unavailable', message),
  driverUnavailable: (network: string) =>
    fail(
      'network_unavailable',
      `the ${network} network driver is not available in this gateway; use a sandbox instance or enable the driver`,
    ),
  /** The network failed the request or gave an answer the gateway cannot use. */
  networkError: (message: string) => fail('network_error', message),
  networkRateLimited: (detail = '') => fail('network_rate_limited', `WhatsApp rate-limited this account; try again later${detail}`),

  // media/: media given to a /send route
  /** Malformed (bad base64, bad URL) or not allowed for its kind. */
  invalidMedia: (message: string) => fail('invalid_media', message),
  mediaTooLarge: (message: string) => fail('media_too_large', message),
  unsupportedMedia: (message: string) => fail('unsupported_media_type', message),
  /** A media URL that could not be fetched, or that points where the gateway may not go (SSRF). */
  mediaUnreachable: (message: string) => fail('media_unreachable', message),
  mediaUrlRefused: (message: string) => fail('media_url_refused', message),

  // sending/, messages/: stored messages, polls, batches
  messageNotFound: (message: string) => fail('message_not_found', message),
  messageDeleted: (messageId: string) => fail('message_deleted', `message ${messageId} was deleted for everyone`),
  notATextMessage: (messageId: string, type: string) =>
    fail('not_a_text_message', `message ${messageId} is a ${type}; only text messages can be edited`),
  editWindowClosed: (message: string) => fail('edit_window_closed', message),
  noMedia: (messageId: string) => fail('no_media', `message ${messageId} has no media`),
  mediaGone: (messageId: string) => fail('media_gone', `the media of message ${messageId} is no longer in the media store`),
  pollNotFound: (message: string) => fail('poll_not_found', message),
  batchNotFound: (batchId: string) => fail('batch_not_found', `batch ${batchId} not found`),

  // network/sandbox/
  notSandbox: (name: string, network: string) => fail('not_sandbox', `instance ${name} is on the ${network} network, not the sandbox`),
  pairingNumberMismatch: (expected: string, given: string) =>
    fail('pairing_number_mismatch', `pairing code was requested for number ${expected}, not ${given}`),
  numberInUse: (number: string, instanceName: string) =>
    fail('number_in_use', `number ${number} is already linked to sandbox instance ${instanceName}`),
  sandboxNumberUnknown: (number: string) => fail('sandbox_number_unknown', `no connected sandbox instance has number ${number}`),
  notAPollRecipient: (message: string) => fail('not_a_poll_recipient', message),

  // integrations/chatwoot: setup against a Chatwoot server, its webhook
  chatwootUnreachable: (message: string) => fail('chatwoot_unreachable', `Chatwoot could not be reached: ${message}`),
  chatwootRefused: (message: string) => fail('chatwoot_refused', message),
  chatwootWebhookRefused: (message: string) => fail('chatwoot_webhook_refused', `webhook refused: ${message}`),
  // mcp/: the MCP server at /mcp
  mcpHostRefused: (host: string) => fail('mcp_host_refused', `host "${host}" is not allowed for /mcp (set MCP_ALLOWED_HOSTS)`),
  mcpOriginRefused: (origin: string) => fail('mcp_origin_refused', `origin "${origin}" is not allowed for /mcp (set MCP_ALLOWED_ORIGINS)`),
  mcpSessionUnknown: () => fail('mcp_session_unknown', 'MCP session not found (expired or closed); initialise a new one'),
  mcpSessionNeeded: () =>
    fail('mcp_session_needed', 'GET and DELETE on /mcp need an Mcp-Session-Id (open a session with initialize); POST works without one'),
  mcpTooManySessions: () => fail('mcp_too_many_sessions', 'too many open MCP sessions; close one or retry later (MCP_MAX_SESSIONS)'),
  // admin/: failover groups
  failoverGroupNotFound: (groupId: string) => fail('failover_group_not_found', `failover group ${groupId} not found`),
  failoverGroupNameTaken: (name: string) => fail('failover_group_name_taken', `a failover group named ${name} already exists`),
  failoverUnknownMembers: (ids: readonly string[] | string) =>
    fail('failover_unknown_members', `members: no instance with id ${[ids].flat().join(', ')}`),
  /** A failover-group token on an instance route other than /send/*. */
  groupTokenSendOnly: () =>
    fail('group_token_send_only', 'a failover-group token may only call the /send/* routes; use an instance token for this route'),
  /** No member of the group is connected with health at or above minHealth (or every one refused the send). */
  failoverNoEligibleMember: (name: string, detail: string) =>
    fail('failover_no_eligible_member', `no member of failover group ${name} can send now: ${detail}`),
  // admin/: alerts, backfill, bulk operations
  /** A bulk operation without any filter: it would act on everything. */
  filterRequired: (what: string) => fail('filter_required', `${what} needs at least one filter; send "all": true to act on everything`),
  /** A backfill's source or target cannot be used (unknown channel, no webhook URL, no events in range). */
  backfillRefused: (message: string) => fail('backfill_refused', message),
  // auth/: users of the web interface, sessions (JWT + refresh tokens), invitations
  invalidCredentials: () => fail('invalid_credentials', 'wrong email or password'),
  sessionRequired: () =>
    fail('session_required', 'this route needs a signed-in user: send Authorization: Bearer <accessToken> from POST /auth/login'),
  invalidSession: () => fail('invalid_session', 'invalid or expired access token; refresh it or sign in again'),
  invalidRefreshToken: () => fail('invalid_refresh_token', 'invalid or expired refresh token; sign in again'),
  refreshTokenReused: () =>
    fail('refresh_token_reused', 'this refresh token was already used; every session of that sign-in was ended, sign in again'),
  registrationClosed: () => fail('registration_closed', 'registration is closed: ask an owner for an invitation code'),
  invalidInvitation: () => fail('invalid_invitation', 'invitation code is unknown, used or expired'),
  ownerOnly: () => fail('owner_only', 'only an owner may do this'),
  loginLocked: (retryAfter: number) => fail('login_locked', 'too many failed sign-ins; wait before trying again', { retryAfter }),
  // security: outbound targets (webhooks) and request admission
  /** A webhook URL (instance webhook, alert rule) set by a caller other than the admin key points at a private or loopback address: syntactically valid, refused by policy. */
  webhookUrlRefused: (message: string) => fail('webhook_url_refused', message),
  /** An integration's callback/base URL set with an instance token points at a private or loopback address. */
  callbackUrlRefused: (message: string) => fail('callback_url_refused', message),
  /** Too many media bytes are being received at once (MEDIA_INFLIGHT_MAX_BYTES): try again shortly. */
  mediaBusy: (retryAfter: number) =>
    fail('media_busy', 'too much media is being received right now; retry after retryAfter seconds (MEDIA_INFLIGHT_MAX_BYTES)', {
      retryAfter,
    }),
  sunset: () => fail('gone', 'unprefixed routes were removed on 2027-01-01; use the same path under /api/v1'),
} as const;
