/** The OpenAPI 3.1 document's frame: every decision SPEC leaves open is written down here. */
import { EVENT_DATA, EventEnvelope, type EventType } from '../network/events.js';
import type { FastifyInstance } from 'fastify';
import { VERSION } from '../version.js';
import { ExampleComposer } from './examples.js';
import { isDeprecatedPath } from './versioning.js';

const DESCRIPTION = `
Waygate is a self-hosted REST gateway over the WhatsApp multi-device network.

## Keys
Every request carries the header \`apikey\`.
- **Admin key** (\`GLOBAL_API_KEY\`, or generated at first start and kept in \`DATA_DIR/admin-key\`): instance lifecycle, token rotation, forced reconnect, dead letters, \`/sandbox/*\`.
- **Instance token** (returned once by \`POST /instance/create\`): every route that acts as one instance (\`/instance/status\`, \`/send/*\`, ...). The instance is the token's owner; the admin key is refused on these routes (403) — admin operations on a given instance take its \`instance_id\` in the path.
- Tokens look like \`wgt_\` + 43 base64url characters (32 random bytes). A value of another shape is refused without any lookup with the same 401 \`invalid api key\`. Only SHA-256 hashes of tokens are stored.
- After \`POST /instance/rotate-token/{instance_id}\` the old token works for \`TOKEN_GRACE_SECONDS\` (default 86400 = 24 h), then gets 401 \`token expired, please use the new token\`.

## Errors
Every error is JSON \`{"error": "...", "code": "..."}\`: \`error\` in plain words (SPEC's texts kept), \`code\` stable for programs (the \`Error\` schema lists every code; their statuses and meanings: docs/errors.md). Validation errors (\`validation_failed\`) add \`details\` (every problem found, at most 20; \`error\` is the first). 401 \`invalid api key\` (missing, wrong or malformed key), 403 (right kind of key for another route), 404 (unknown route or resource), 409 (conflict with the current state, e.g. \`instance is not connected\`), 410 (unprefixed route after sunset), 413 (body over \`BODY_LIMIT_BYTES\`), 415 (body not JSON; media routes also take multipart/form-data), 429 \`{"error":"rate limit exceeded","code":"rate_limited","retryAfter":<s>}\` with a \`Retry-After\` header, 502 (the network refused or failed the request), 503 (network driver not available, \`standby\`: this process is not the active one for its database, or in cluster mode \`instance_moving\` with \`retryAfter\` and a \`Retry-After\` header: the instance is being handed between processes; try again), 502 \`forward_failed\` in cluster mode (the process holding the instance took the request and never answered: it may have been carried out).

## Rate limits
Sliding window of \`RATE_LIMIT_WINDOW_SECONDS\` (default 60): \`RATE_LIMIT_PER_IP\` (default 1200) requests per client IP (behind a reverse proxy named in \`TRUST_PROXY\`, the address it forwards in \`X-Forwarded-For\`) and \`RATE_LIMIT_PER_KEY\` (default 600) per API key. Kept in memory, or in Redis when \`KV_STORE_URL\` is set (shared by every gateway process).

## Versioning
Every operation's \`operationId\` is its HTTP method followed by the words of its path after \`/api/v1\`, each path parameter as \`By<Name>\` (\`POST /send/text\` → \`postSendText\`, \`DELETE /instance/delete/{instance_id}\` → \`deleteInstanceDeleteByInstanceId\`): it never changes while the route exists, and the typed client (\`@waygate/client\`) names its methods after it.

Every route is served under \`/api/v1\` (documented here) and, deprecated, without the prefix. Unprefixed answers carry \`Deprecation: true\` and \`Sunset: 2027-01-01\`; from 2027-01-01 they answer 410. Every response carries \`X-Request-ID\` (a UUID; a valid incoming one is kept).

## Phone numbers
\`number\` fields take digits only with the country code, 7 to 15 digits; the gateway normalises them to \`<number>@s.whatsapp.net\`.

## Instance status
\`created\` → (connect) \`CONNECTING\` → \`QRCODE\` (pairing: QR or 8-digit code) → \`CONNECTED\`. A lost connection goes \`DISCONNECTED\` and reconnects by itself (\`CONNECTING\` → \`CONNECTED\`). QR attempts running out ends in \`DISCONNECTED\` (reason \`qr_attempts_exhausted\`). A logout (API or phone side) ends in \`LOGGED_OUT\`; connect again to pair anew. Connected instances come back connected after a gateway restart.

## Chats, groups, users, labels, newsletters, communities, calls
One shape for all of these groups:
- **Verbs**: \`GET\` reads, with its inputs in the query string; \`POST\` changes, with a JSON body. Paths name the action (\`/group/participants/add\`, \`/chat/pin\`). A change answers the resource as it is afterwards (or a per-item result list); creations answer 201.
- **Addresses**: \`number\` is a phone number (digits). \`chatId\` takes a number or a JID (\`<number>@s.whatsapp.net\`, \`<id>@g.us\`, \`<id>@newsletter\`); \`groupId\`/\`communityId\` are \`<id>@g.us\`, \`newsletterId\` \`<id>@newsletter\`. Replies give JIDs.
- **Paging**: every list takes \`offset\` and \`limit\` (default 100, max 500) and answers \`{ items, total, offset, limit }\`.
- **Times** are Unix seconds, as in message payloads.
- **Refusals**: 409 \`instance is not connected\`; 403 when the network refuses the account (not a group admin, not a participant, not the owner, personal account using labels); 404 unknown group/chat/label/...; 409 a conflicting state (already a participant, 3 chats pinned, label limit); 501 when the instance's network driver does not support the operation yet. Per-person outcomes of participant operations come in \`results[].status\` with 200.
- **Pictures** are sent as base64 or data: URLs (JPEG or PNG) and read back as \`url\`.

## Sending and media
- **One shape for every kind** (\`/send/*\`): \`number\` (recipient digits), \`quoted: { id }\` (reply to a message from this instance's message store), \`mentions\` (numbers), \`delayMs\` (shows "typing…" first). The reply is the message \`key\` with the content as sent; a SEND_MESSAGE event follows and a recipient gets a MESSAGE whose \`data.message\` has the WhatsApp payload shape (\`imageMessage\`, \`locationMessage\`, \`pollCreationMessageV3\`, \`interactiveMessage\`, ...).
- **Media** is \`media: { url }\` (https; fetched by the gateway) or \`media: { base64 }\`, or a file of a \`multipart/form-data\` body (every media route takes both; docs/media.md), with optional \`filename\` and \`mimetype\` (a hint only). The type is sniffed from the bytes; size limits per kind: MEDIA_MAX_IMAGE_BYTES 16 MiB, MEDIA_MAX_VIDEO_BYTES 64 MiB, MEDIA_MAX_AUDIO_BYTES 16 MiB, MEDIA_MAX_DOCUMENT_BYTES 64 MiB, MEDIA_MAX_STICKER_BYTES 2 MiB. URL fetches: MEDIA_FETCH_TIMEOUT_MS (15 s), at most 5 redirects, every hop checked; loopback, private and link-local addresses are refused unless MEDIA_ALLOW_PRIVATE_URLS=true; plain http only with MEDIA_ALLOW_HTTP_URLS=true. Errors: 400 malformed, 413 too large, 415 wrong type, 422 URL refused or unreachable.
- **Stored messages and media**: every message sent or received is kept for MESSAGE_RETENTION_DAYS (30) for quotes, forwards and downloads; media bytes live in DATA_DIR/media or an S3-compatible bucket (S3_BUCKET, S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_FORCE_PATH_STYLE, S3_PREFIX). Events of messages with media carry \`data.media\` \`{ mimetype, fileLength, fileName?, sha256, downloadUrl }\` (plus \`base64\` with \`POST /message/media-settings\`); download with \`GET /message/download/{messageId}\`.
- **Batches** (\`/send/batch/text\`, up to 1000 texts) are sent in the background, one every BATCH_INTERVAL_MS (2 s); progress at \`GET /send/batch/{batchId}\`; they survive restarts.

## Events
Envelope (schema \`EventEnvelope\`): \`event\`, \`instanceId\`, \`instanceName\`, \`data\`, plus \`eventId\` (a time-ordered UUID, version 7; the same on every retry and channel: deduplicate with it), \`timestamp\` (ISO 8601 UTC) and \`seq\` (the instance's event number, 1, 2, 3, ... in recording order, kept across restarts, the same on every channel: order by it and detect gaps). 13 types: MESSAGE, SEND_MESSAGE, READ_RECEIPT, PRESENCE, HISTORY_SYNC, CHAT_PRESENCE, CALL, CONNECTION, LABEL, CONTACT, GROUP, NEWSLETTER, QRCODE. The per-instance filter \`webhookEvents\` (\`"ALL"\` or a list; set at create or with \`POST /instance/webhook\`) applies to every channel; filtered events are not recorded.

Every event is written to a durable outbox before any delivery; delivery is at-least-once and survives a crash or restart.

### Event data of chats, groups, users, labels, newsletters, communities and calls
- **GROUP** \`{ id, action, author, ... }\` to every participant's instance: \`create\` (+ \`subject\`, \`participants\`; communities add \`isCommunity\`, \`announceGroupId\`), \`add\` / \`remove\` / \`promote\` / \`demote\` / \`join\` / \`leave\` / \`join_request\` / \`join_request_rejected\` (+ \`participants\`), \`update\` (+ \`changes\`: subject, description, pictureId, announce, locked, joinApproval, ephemeral, memberAddMode, inviteLinkRevoked), \`link\` / \`unlink\` (+ \`groups\`, on a community id).
- **LABEL** \`{ action: create|edit|delete|apply|remove, label: { labelId, name, color }, chatId?, messageId? }\` to the instance.
- **CONTACT** \`{ id, action: "update", pushName? | about? | pictureId? }\` to those with a chat with the changed person; \`{ id, action: "block" | "unblock" }\` to the instance.
- **NEWSLETTER** \`{ id, action: create|update|delete|follow|unfollow|mute|unmute, ... }\`; posts reach followers as MESSAGE from the newsletter JID.
- **CALL** \`{ id, from, status: offer|reject|timeout, isVideo, isGroup, timestamp, reason? }\` (\`reason: "auto_reject"\` for automatic rejections).
- **MESSAGE** that acts on an earlier message (from \`/message/*\` or the other side): \`reactionMessage { key, text }\` (\`text: ""\` removes it), \`protocolMessage { key, type: "REVOKE" }\` (deleted for everyone), \`editedMessage.message.protocolMessage { key, type: "MESSAGE_EDIT", editedMessage }\`; \`key\` names the earlier message as the receiver sees it. **CHAT_PRESENCE** \`{ remoteJid, participant, presence: composing|recording|paused }\`.
- **PRESENCE** \`{ id, presence: available|unavailable, lastSeen? }\`; **READ_RECEIPT** \`{ key, receipt: "read", readTimestamp, participant? }\`; **HISTORY_SYNC** \`{ syncType: "ON_DEMAND", chatId, messages, progress }\` (after \`POST /chat/history/request\`), or, right after the CONNECTED of a pairing, the phone's initial sync \`{ syncType: "INITIAL_BOOTSTRAP", progress, isLatest, part, parts, chats: [{ id, name, unreadCount, conversationTimestamp, archived }], contacts, messages }\`: the account's chats, most recent first, with their latest messages (in the sandbox: up to 500 chats, 100 messages each, 200 messages and 100 chats per part; a chat never spans two parts; \`progress\` reaches 100 on the last part). A sandbox account without chats (a number never used) gets none.

### Webhooks
POST of the JSON envelope to \`webhookUrl\`. Headers: \`X-Webhook-Signature\` = lowercase hex HMAC-SHA256 of the exact body bytes keyed with the instance's webhook secret; \`X-Webhook-Event\`; \`X-Webhook-Event-Id\`. The secret is given (or generated) at create, returned once, and can be replaced (not read) with \`POST /instance/webhook\`. A 2xx within \`WEBHOOK_TIMEOUT_MS\` (5 s) is success; anything else is retried with exponential backoff and jitter, up to \`WEBHOOK_MAX_ATTEMPTS\` (default 5) attempts, then stored as a dead letter. Order is kept per instance: a retried event holds back that instance's later events. New events are POSTed by a worker thread in runs of up to 100 (\`WEBHOOK_DELIVERY_THREAD\`), so a replaced \`webhookUrl\` or secret applies from the next run. Redirects are not followed. Connections are kept alive between POSTs. **Batched webhooks** (opt-in per instance, \`webhookBatch: { maxEvents, maxWaitMs }\` on \`POST /instance/webhook\`): each POST carries a JSON array of up to \`maxEvents\` envelopes in \`seq\` order, sent when full or when the oldest has waited \`maxWaitMs\`; \`X-Webhook-Signature\` covers the array bytes, \`X-Webhook-Batch\` gives the count (no \`X-Webhook-Event\`/\`-Event-Id\`). A failed batch is retried whole (same events, same order); after the last attempt each event becomes its own dead letter.

### WebSocket
\`GET /api/v1/ws?token=&instanceId=\` (also \`/ws\`, deprecated like every unprefixed route): live, best-effort; each frame is one event envelope. The operation \`getWs\` (tag events) gives the query, the refusals before the upgrade and the close codes.

### Channels (brokers)
Every event also goes, as the same JSON envelope, to each configured broker; an event leaves the outbox for a broker only once the broker confirmed it, retried for ever (never a dead letter), in order per instance. Routing uses the instance id. Event id and type travel in each broker's metadata too.
- **RabbitMQ** (\`QUEUE_BROKER_URL\`): topic exchange \`waygate.events\`, routing key \`<instanceId>.<EVENT>\`, durable queues \`waygate.global\` (every event) and \`waygate.instance.<instanceId>\`; persistent messages, publisher confirms; \`message_id\` = eventId, \`type\` = event.
- **Redis** (\`KV_STORE_URL\` + \`KV_STORE_GLOBAL_EVENTS=true\`): pub/sub channels \`waygate:events:<instanceId>\` and \`waygate:events\`, plus the capped stream \`waygate:events:stream\` (fields eventId, event, instanceId, body) for consumers that must not miss events.
- **NATS** (\`LIGHT_BROKER_URL=nats://\`): subjects \`waygate.events.<instanceId>.<EVENT>\` (all: \`waygate.events.>\`), JetStream stream \`WAYGATE_EVENTS\` with PubAck when the server has JetStream.
- **MQTT 5** (\`LIGHT_BROKER_URL=mqtt://\`): topics \`waygate/events/<instanceId>/<EVENT>\` (all: \`waygate/events/#\`), QoS 1.

The RabbitMQ queues and the JetStream stream have limits (default 7 days; 1,000,000 events and 1 GiB for the global queue and the stream, 100,000 events and 100 MiB per instance queue; \`QUEUE_BROKER_*\` and \`LIGHT_BROKER_STREAM_*\` settings, 0 for none): at a limit the oldest events are dropped, so consumers must keep up; the gateway's outbox and event archive remain the durable record (resend with \`POST /admin/backfill\`). Prefixes are settings (\`QUEUE_BROKER_PREFIX\`, \`KV_STORE_PREFIX\`, \`LIGHT_BROKER_PREFIX\`). A broker that is down (or a wrong URL) does not stop the gateway: \`GET /server/ok\` shows each channel's state under \`channels\`, \`/metrics\` has \`waygate_channel_up\`, \`waygate_outbox_pending\` and \`waygate_active\`. Redis or the lightweight broker also carries live events between gateway processes, so a WebSocket client on any process sees every instance's events. Details: docs/channels.md.

### Several processes on one database
On PostgreSQL one process is active (it holds the instances' sessions and delivers events) and others stand by, taking over within \`STANDBY_POLL_MS\` when it goes; \`GET /server/ok\` shows \`role\`. A standby answers only the routes that need no key (\`/server/ok\`, \`/metrics\`, the docs, the WebSocket stream) and 503 \`{"error":"this gateway process is on standby: ...","code":"standby"}\` to every keyed route, so it never changes what the active process caches; send API traffic to the active process.

With \`CLUSTER_SECRET\` set (cluster mode, docs/deployment.md) every process is active: each instance's session is held by one process through a lease (spread evenly, moved cleanly when processes join or leave, taken over within about \`CLUSTER_LEASE_MS\` when one dies), and any process answers any request, forwarding it to the instance's owner (admin routes and \`/mcp\` to the leader). Callers see no difference beyond latency, except 503 \`instance_moving\` during a hand-over.

### Health scores and failover groups
Every instance has a health score from 0 to 100 with its reasons (\`health\` in \`GET /instance/status\` and \`GET /instance/all\`; signals in \`GET /instance/health\`; \`waygate_instance_health\` in \`/metrics\`): 100 minus penalties for not being connected (by why the connection closed: banned and logged out cost everything, \`restart_required\` little), connection losses in the last 15 minutes, send failures, refusals and slowness in the last 5 minutes, and events waiting for delivery or dead. A failover group (\`/admin/failover-groups\`) joins instances under one token (\`wgg_…\`) accepted by every \`/send/*\` route: each send goes to a member picked by the group's policy (\`priority\`, \`round-robin\`, \`least-loaded\`; \`sticky\` per recipient) among the connected members with a score ≥ \`minHealth\`; a send refused before it reached the network moves to the next member, one that reached it is never sent twice; the reply's \`instanceId\` names the member; none eligible → 503 \`failover_no_eligible_member\`. A group's \`webhookUrl\` gets every member's events signed with the group's secret. Details: docs/operations.md.

### Sandbox
Instances created with \`network: "sandbox"\` live on a built-in simulated network: real QR PNGs, pairing codes, virtual contacts, drops and logouts, all driven through the admin \`/sandbox/*\` routes. A sandbox instance never reaches a real phone. Groups, communities, newsletters, labels, profiles, privacy, blocks and chat settings are modelled with the real network's rules and survive a restart; virtual contacts get profiles and business accounts with \`POST /sandbox/accounts\`, use invites with \`/sandbox/groups/join\`, and hang up calls with \`/sandbox/calls/end\`. Chat messages (latest 1000 per chat) are read back from the message store after a restart; unread counts start again at 0. A number linked again (after a logout, to the same or another instance) gets its chats as HISTORY_SYNC \`INITIAL_BOOTSTRAP\` after CONNECTED, and the instance's message store keeps those messages (what it already held stays as it is).

### WhatsApp
Instances with \`network: "whatsapp"\` (the default) use the real network through Baileys; the linked-device keys live in the gateway's database, so a restart reconnects without a QR. Disconnect reasons in CONNECTION events: \`restart_required\` (reconnects at once), \`connection_lost\`, \`connection_closed\`, \`bad_session\`, \`service_unavailable\` (reconnect with capped exponential backoff and jitter), \`qr_attempts_exhausted\`, \`connection_replaced\` (another client took over: not retried), \`banned_or_blocked\` (403, not retried), and LOGGED_OUT \`device_removed\` / \`logged_out_from_phone\` (keys wiped; connect again for a new QR). People appear by phone address when known; WhatsApp's hidden ids travel beside it (\`key.remoteJidLid\`, \`key.participantLid\`, \`lid\`, \`fromLid\`). A send the network rejects after accepting it arrives as SEND_MESSAGE with \`status: "FAILED"\` and \`error.code\`. Poll votes arrive decrypted as MESSAGE with \`pollVote\`. Buttons, lists, carousels and pix go as raw interactive messages that WhatsApp renders inconsistently and that add ban risk: refused (409) unless the instance setting \`interactiveMessages\` is true. A per-instance proxy is set with \`POST /instance/proxy/{instance_id}\`. Details: docs/whatsapp.md.
`;

/**
 * What the gateway POSTs to an instance's webhook (OpenAPI 3.1 `webhooks`): one entry per event type,
 * the shared envelope with that type's `data`. The same envelope is the WebSocket frame and the broker
 * payload; the schemas are the ones the gateway's own code is typed with (network/events.ts).
 */
function webhooks() {
  return Object.fromEntries(
    (Object.keys(EVENT_DATA) as EventType[]).map((type) => [
      type,
      {
        post: {
          operationId: `webhook${type
            .toLowerCase()
            .split('_')
            .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
            .join('')}`,
          tags: ['events'],
          summary: `${type} event`,
          description:
            "POSTed to the instance's webhook URL when the instance subscribed to this type (`webhookEvents`). Signed: `X-Webhook-Signature` is the hex HMAC-SHA256 of the raw body with the instance's webhook secret. With `webhookBatch` set, the body is an array of envelopes in `seq` order. Answer 2xx to acknowledge; anything else, or no answer within WEBHOOK_TIMEOUT_MS, is retried with backoff, then kept as a dead letter.",
          parameters: [
            {
              name: 'X-Webhook-Signature',
              in: 'header',
              required: true,
              description: "Hex HMAC-SHA256 of the raw body, keyed with the instance's webhook secret.",
              schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
            },
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  allOf: [
                    { $ref: '#/components/schemas/EventEnvelope' },
                    { type: 'object', properties: { event: { const: type }, data: EVENT_DATA[type] } },
                  ],
                },
              },
            },
          },
          responses: {
            '200': { description: 'Received (any 2xx counts as delivered).' },
            '500': { description: 'Not received: the gateway retries (any status other than 2xx, or no answer, counts the same).' },
          },
          security: [],
        },
      },
    ]),
  );
}

export function openApiDocument() {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Waygate API',
      version: VERSION,
      description: DESCRIPTION.trim(),
      license: { name: 'GPL-3.0-or-later', identifier: 'GPL-3.0-or-later' },
      contact: { name: 'Waygate maintainers (problems and security reports: see SECURITY.md in the repository)' },
    },
    servers: [{ url: '/' }],
    webhooks: webhooks(),
    components: {
      schemas: { EventEnvelope },
      securitySchemes: {
        apikey: { type: 'apiKey' as const, in: 'header' as const, name: 'apikey', description: 'Admin key or instance token.' },
        bearer: {
          type: 'http' as const,
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            "A web-interface user's access token from POST /auth/login. Accepted on /auth/me and, for owners and operators, on every admin route (viewers: GET admin routes only).",
        },
      },
    },
    tags: [
      { name: 'server', description: 'Liveness and health' },
      { name: 'instance', description: 'Instances, tokens, webhook settings, connecting' },
      { name: 'send', description: 'Sending messages of every kind, batches and status posts' },
      {
        name: 'message',
        description:
          'Acting on stored messages (react, presence, read, delete, edit), finding them, poll results, media downloads and received-media settings',
      },
      { name: 'events', description: 'Dead letters and the WebSocket stream' },
      { name: 'chat', description: 'Chats: list, search, pin, archive, mute, unread, delete, clear, history, number check' },
      { name: 'group', description: 'Groups: create, info, participants, picture, subject, description, settings, invites, join requests' },
      { name: 'user', description: "People (profile, avatar, contacts, blocks, presence) and the instance's own profile and privacy" },
      { name: 'label', description: 'Labels on chats and messages (WhatsApp Business accounts)' },
      { name: 'newsletter', description: 'Newsletters (channels): create, follow, mute, posts' },
      { name: 'community', description: 'Communities: create, link groups, announcement group' },
      { name: 'call', description: 'Calls: reject, history, auto-reject' },
      { name: 'sandbox', description: 'Control of the simulated network (admin)' },
      {
        name: 'chatwoot',
        description: 'The Chatwoot link of an instance (inbox, contacts, conversations both ways) and the callback Chatwoot calls',
      },
      {
        name: 'admin',
        description:
          'Running many numbers (admin key): failover groups, overview, outbox and dead letters across instances, bulk operations, alerts, backfill',
      },
      { name: 'auth', description: 'Users of the web interface: registration, sign-in (JWT), sessions, profile, users and invitations' },
    ],
  };
}

/**
 * @fastify/websocket hides every WebSocket route from the document. A stream route that documents
 * its `101` answer is shown all the same: its /api/v1 path only (versioning keeps the unprefixed
 * twin out, as for every route). Registered after the websocket plugin, so it has the last word.
 */
export function documentUpgradeRoutes(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { hide?: boolean; response?: Record<string, unknown> } | undefined;
    if (!route.websocket || schema?.response?.['101'] === undefined || isDeprecatedPath(route.url ?? route.path)) return;
    route.schema = { ...schema, hide: false };
  });
}

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * The operationId of every operation: the HTTP method, then the path's words after /api/v1, with
 * each path parameter as `By<Name>` — `POST /send/text` -> `postSendText`,
 * `POST /instance/rotate-token/{instance_id}` -> `postInstanceRotateTokenByInstanceId`. It depends on
 * the method and path only, so it never changes while the route exists (the typed client's method
 * names are these).
 */
export function operationIdOf(method: string, route: string): string {
  const words = route
    .replace(/^\/api\/v1(?=\/|$)/, '')
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => {
      const param = /^\{(.+)\}$/.exec(segment) ?? /^:(.+)$/.exec(segment);
      return param ? ['by', ...param[1]!.split(/[^A-Za-z0-9]+/)] : segment.split(/[^A-Za-z0-9]+/);
    })
    .filter(Boolean);
  return [method.toLowerCase(), ...words].map((word, i) => (i === 0 ? word : word.charAt(0).toUpperCase() + word.slice(1))).join('');
}

/**
 * The request example of a JSON body that has none: composed from its schema (http/examples.ts) and
 * kept only when it passes that schema. A hand-written one (a body schema's `examples`, which
 * @fastify/swagger lifts to the media type) is left as it is.
 */
function addRequestExample(operation: Record<string, any>, composer: ExampleComposer): void {
  const json = operation.requestBody?.content?.['application/json'] as Record<string, any> | undefined;
  if (!json?.schema || json.example !== undefined || json.examples !== undefined) return;
  try {
    json.example = composer.compose(json.schema as Record<string, any>);
  } catch {
    // No realistic value for some field (NoExample), or a schema Ajv cannot compile: no example
    // rather than no document (the OpenAPI test names the operation).
  }
}

/**
 * The last touches on the generated document, in one place: an operationId per operation
 * (operationIdOf), `security: []` on operations that declare none (they need no key), a
 * definition for every tag an operation uses, and a request example for every JSON body
 * (addRequestExample).
 */
export function finishOpenApiDocument<T extends { paths?: Record<string, Record<string, any>>; tags?: { name: string }[] }>(
  document: T,
): T {
  const tags = new Set((document.tags ?? []).map((tag) => tag.name));
  const composer = new ExampleComposer();
  for (const [route, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (!OPERATION_METHODS.includes(method) || typeof operation !== 'object' || operation === null) continue;
      operation.operationId ??= operationIdOf(method, route);
      operation.security ??= [];
      addRequestExample(operation, composer);
      for (const tag of (operation.tags as string[] | undefined) ?? []) {
        if (tags.has(tag)) continue;
        tags.add(tag);
        (document.tags ??= []).push({ name: tag });
      }
    }
  }
  return document;
}
