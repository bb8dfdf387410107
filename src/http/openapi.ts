/** The OpenAPI 3.1 document's frame: every decision SPEC leaves open is written down here. */
import { VERSION } from '../version.js';

const DESCRIPTION = `
Waygate is a self-hosted REST gateway over the WhatsApp multi-device network.

## Keys
Every request carries the header \`apikey\`.
- **Admin key** (\`GLOBAL_API_KEY\`, or generated at first start and kept in \`DATA_DIR/admin-key\`): instance lifecycle, token rotation, forced reconnect, dead letters, \`/sandbox/*\`.
- **Instance token** (returned once by \`POST /instance/create\`): every route that acts as one instance (\`/instance/status\`, \`/send/*\`, ...). The instance is the token's owner; the admin key is refused on these routes (403) — admin operations on a given instance take its \`instance_id\` in the path.
- Tokens look like \`wgt_\` + 43 base64url characters (32 random bytes). A value of another shape is refused without any lookup with the same 401 \`invalid api key\`. Only SHA-256 hashes of tokens are stored.
- After \`POST /instance/rotate-token/{instance_id}\` the old token works for \`TOKEN_GRACE_SECONDS\` (default 86400 = 24 h), then gets 401 \`token expired, please use the new token\`.

## Errors
Every error is JSON \`{"error": "..."}\`; validation errors add \`details\` (every problem found). 401 \`invalid api key\` (missing, wrong or malformed key), 403 (right kind of key for another route), 404 (unknown route or resource), 409 (conflict with the current state, e.g. \`instance is not connected\`), 410 (unprefixed route after sunset), 413 (body over \`BODY_LIMIT_BYTES\`), 415 (body not JSON), 429 \`{"error":"rate limit exceeded","retryAfter":<s>}\` with a \`Retry-After\` header, 503 (network driver not available).

## Rate limits
Sliding window of \`RATE_LIMIT_WINDOW_SECONDS\` (default 60): \`RATE_LIMIT_PER_IP\` (default 1200) requests per client IP and \`RATE_LIMIT_PER_KEY\` (default 600) per API key. Kept in memory, or in Redis when \`KV_STORE_URL\` is set (shared by every gateway process).

## Versioning
Every route is served under \`/api/v1\` (documented here) and, deprecated, without the prefix. Unprefixed answers carry \`Deprecation: true\` and \`Sunset: 2027-01-01\`; from 2027-01-01 they answer 410. Every response carries \`X-Request-ID\` (a UUID; a valid incoming one is kept).

## Phone numbers
\`number\` fields take digits only with the country code, 7 to 15 digits; the gateway normalises them to \`<number>@s.whatsapp.net\`.

## Instance status
\`created\` → (connect) \`CONNECTING\` → \`QRCODE\` (pairing: QR or 8-digit code) → \`CONNECTED\`. A lost connection goes \`DISCONNECTED\` and reconnects by itself (\`CONNECTING\` → \`CONNECTED\`). QR attempts running out ends in \`DISCONNECTED\` (reason \`qr_attempts_exhausted\`). A logout (API or phone side) ends in \`LOGGED_OUT\`; connect again to pair anew. Connected instances come back connected after a gateway restart.

## Events
Envelope: \`event\`, \`instanceId\`, \`instanceName\`, \`data\`, plus \`eventId\` (UUID, the same on every retry and channel: deduplicate with it) and \`timestamp\` (ISO 8601 UTC). 13 types: MESSAGE, SEND_MESSAGE, READ_RECEIPT, PRESENCE, HISTORY_SYNC, CHAT_PRESENCE, CALL, CONNECTION, LABEL, CONTACT, GROUP, NEWSLETTER, QRCODE. The per-instance filter \`webhookEvents\` (\`"ALL"\` or a list; set at create or with \`POST /instance/webhook\`) applies to every channel; filtered events are not recorded.

Every event is written to a durable outbox before any delivery; delivery is at-least-once and survives a crash or restart.

### Webhooks
POST of the JSON envelope to \`webhookUrl\`. Headers: \`X-Webhook-Signature\` = lowercase hex HMAC-SHA256 of the exact body bytes keyed with the instance's webhook secret; \`X-Webhook-Event\`; \`X-Webhook-Event-Id\`. The secret is given (or generated) at create, returned once, and can be replaced (not read) with \`POST /instance/webhook\`. A 2xx within \`WEBHOOK_TIMEOUT_MS\` (5 s) is success; anything else is retried with exponential backoff and jitter, up to \`WEBHOOK_MAX_ATTEMPTS\` (default 5) attempts, then stored as a dead letter. Order is kept per instance: a retried event holds back that instance's later events. Redirects are not followed.

### WebSocket
\`GET /api/v1/ws?token=&instanceId=\` (also \`/ws\`, deprecated like every unprefixed route): live, best-effort, see the route.

### Sandbox
Instances created with \`network: "sandbox"\` live on a built-in simulated network: real QR PNGs, pairing codes, virtual contacts, drops and logouts, all driven through the admin \`/sandbox/*\` routes. A sandbox instance never reaches a real phone.
`;

export function openApiDocument() {
  return {
    openapi: '3.1.0',
    info: { title: 'Waygate API', version: VERSION, description: DESCRIPTION.trim() },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        apikey: { type: 'apiKey' as const, in: 'header' as const, name: 'apikey', description: 'Admin key or instance token.' },
      },
    },
    tags: [
      { name: 'server', description: 'Liveness and health' },
      { name: 'instance', description: 'Instances, tokens, webhook settings, connecting' },
      { name: 'send', description: 'Sending messages' },
      { name: 'events', description: 'Dead letters and the WebSocket stream' },
      { name: 'sandbox', description: 'Control of the simulated network (admin)' },
    ],
  };
}
