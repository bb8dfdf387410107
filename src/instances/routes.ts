/** /instance routes: lifecycle (admin), status, webhook settings, tokens, and connecting to the network. */
import { Type } from 'typebox';
import { ADMIN, errorResponses, INSTANCE, InstanceIdParams, Page, PagingQuery } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import type { HealthSource } from '../modules.js';
import type { InstanceLifecycle } from './lifecycle.js';
import * as S from './schema.js';
import { maskUrlPassword, publicInstance, type Instance, type InstanceService } from '../instance-registry/service.js';

const tags = ['instance'];
const admin = { access: 'admin' as const };
const instance = { access: 'instance' as const };

export function instanceRoutes(instances: InstanceService, lifecycle: InstanceLifecycle, health?: HealthSource): RoutePlugin {
  return async (app) => {
    app.post(
      '/instance/create',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Create an instance',
          description:
            'Creates an instance with status `created`. The reply carries the instance `token` and the `webhookSecret`: both are shown only here (only a SHA-256 of the token is stored). When `webhookSecret` is omitted a random one is generated. A `webhookUrl` set here is set by the admin key, so it may point at a private or loopback receiver (one on the same host); a URL changed later with the instance token may not (see POST /instance/webhook). 409 when the name is taken.',
          body: S.CreateBody,
          response: { 201: S.CreateReply, ...errorResponses(401, 403, 409) },
        },
      },
      async (request, reply) => {
        const { instance: created, token } = await instances.create(request.body);
        return reply.status(201).send({
          instanceId: created.id,
          instanceName: created.name,
          token,
          webhookUrl: created.webhookUrl,
          webhookSecret: created.webhookSecret,
          webhookEvents: created.webhookEvents,
          network: created.network,
          status: 'created' as const,
        });
      },
    );

    app.get(
      '/instance/all',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'List instances',
          description:
            'Every instance, oldest first, paged with `offset`/`limit`, each with its `health` score and reasons. Tokens and webhook secrets are never listed; passwords in webhook and proxy URLs are shown as `***`.',
          querystring: PagingQuery,
          response: { 200: Page(S.InstanceView), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const { offset, limit } = request.query;
        const { items, total } = await instances.list(offset, limit);
        const views = await Promise.all(
          items.map(async (item) => ({ ...publicInstance(item), ...(health ? { health: await health.scoreOf(item.id) } : {}) })),
        );
        return { items: views, total, offset, limit };
      },
    );

    app.delete(
      '/instance/delete/:instance_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Delete an instance',
          description:
            'Closes the session (without logging the phone out) and deletes the instance with everything it owns: tokens, stored events not yet delivered, dead letters and network credentials. Irreversible. 404 for an unknown id.',
          params: InstanceIdParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true), instanceId: Type.String() }), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => {
        await instances.delete(request.params.instance_id);
        return { deleted: true as const, instanceId: request.params.instance_id };
      },
    );

    app.get(
      '/instance/status',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Connection status of the calling instance',
          description:
            '`status`, `number` when linked, and `health`: the score (0 to 100) and its reasons (details in GET /instance/health).',
          response: { 200: S.StatusReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const current = await instances.get(callerInstance(request).id);
        return {
          instanceId: current.id,
          instanceName: current.name,
          status: current.status,
          ...(current.number !== null ? { number: current.number } : {}),
          ...(health ? { health: await health.scoreOf(current.id) } : {}),
        };
      },
    );

    app.post(
      '/instance/rotate-token/:instance_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Rotate an instance token',
          description:
            'Issues a new primary token. The old one keeps working until `oldTokenValidUntil` (now + TOKEN_GRACE_SECONDS, default 86400 s = 24 h); after that it gets 401 `token expired, please use the new token`.',
          params: InstanceIdParams,
          response: { 200: S.RotateReply, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => instances.rotateToken(request.params.instance_id),
    );

    app.get(
      '/instance/webhook',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Webhook settings of the calling instance',
          description:
            "The instance's webhook URL (a password in it shown as `***`), the event types it receives, and whether events are batched (`webhookBatch`). The signing secret is never shown; rotate it with the instance token. Change the settings with POST /instance/webhook.",
          response: { 200: S.WebhookReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const current = await instances.get(callerInstance(request).id);
        return {
          webhookUrl: maskUrlPassword(current.webhookUrl),
          webhookEvents: current.webhookEvents,
          webhookBatch: current.webhookBatch,
          secretSet: true,
        };
      },
    );

    app.post(
      '/instance/webhook',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change webhook settings',
          description:
            'Changes any of `webhookUrl` (null stops webhook delivery), `webhookEvents` (the event filter for every channel), `webhookSecret` (replaces the signing secret; it cannot be read back) and `webhookBatch` (`{ maxEvents, maxWaitMs }`: several envelopes per POST as a JSON array; null: one POST per event). Events already recorded keep their delivery; new ones follow the new settings. A URL set here must reach a public address: a loopback, private, link-local or otherwise non-public target (as an IP literal or as a name resolving there) is refused with 422 unless WEBHOOK_ALLOW_PRIVATE_URLS=true; the address is checked again at every connection. A password in the URL is shown as `***`.',
          body: S.WebhookBody,
          response: { 200: S.WebhookReply, ...errorResponses(400, 401, 403, 422) },
        },
      },
      async (request) => {
        const updated = await instances.updateWebhook(callerInstance(request).id, request.body);
        return {
          webhookUrl: maskUrlPassword(updated.webhookUrl),
          webhookEvents: updated.webhookEvents,
          webhookBatch: updated.webhookBatch,
          secretSet: true,
        };
      },
    );

    app.get(
      '/instance/settings',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Network settings of the calling instance',
          description:
            'How the instance behaves on its network: rejecting calls, ignoring groups, always online, reading messages and status updates, syncing full history. Change them with POST /instance/settings.',
          response: { 200: S.InstanceSettingsReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => networkSettingsOf(await instances.get(callerInstance(request).id)),
    );

    app.post(
      '/instance/settings',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change network settings',
          description:
            '`interactiveMessages` (default false): allow /send/button, /send/list, /send/carousel and /send/pix on a `whatsapp` instance. They go as raw interactive messages that WhatsApp renders inconsistently (many phones and WhatsApp Web show nothing or "update WhatsApp") and that add ban risk; while false those sends answer 409. Sandbox instances always accept them. Applies from the next send, without reconnecting.',
          body: S.InstanceSettingsBody,
          response: { 200: S.InstanceSettingsReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const updated = await instances.updateSettings(callerInstance(request).id, { settings: { ...request.body } });
        return networkSettingsOf(updated);
      },
    );

    app.post(
      '/instance/connect',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Start connecting to the network',
          description:
            'Starts the connection. A linked instance reconnects without a QR; otherwise pairing starts: status `QRCODE`, a QRCODE event now and a new one every ~20 s, giving up after a few (CONNECTION `DISCONNECTED`, reason `qr_attempts_exhausted`). Idempotent while pairing or connected.',
          response: { 200: S.ConnectReply, ...errorResponses(401, 403, 503) },
        },
      },
      async (request) => lifecycle.connect(callerInstance(request).id),
    );

    app.get(
      '/instance/qr',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Current QR code',
          description:
            'The QR currently offered for scanning. 409 when the instance is connected; 404 when no QR is shown (call POST /instance/connect first, or the QR attempts ran out).',
          response: { 200: S.QrReply, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => lifecycle.currentQr(callerInstance(request).id),
    );

    app.post(
      '/instance/pair',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Request an 8-digit pairing code',
          description:
            'Alternative to the QR: the phone with `number` enters the returned code. Starts connecting if needed. 409 when already connected.',
          body: S.PairBody,
          response: { 200: S.PairReply, ...errorResponses(401, 403, 409, 503) },
        },
      },
      async (request) => lifecycle.requestPairingCode(callerInstance(request).id, request.body.number),
    );

    app.post(
      '/instance/logout',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Log out',
          description: 'Unlinks the device from the phone and discards the credentials: status `LOGGED_OUT`; connect again to pair anew.',
          response: { 200: S.StatusReply, ...errorResponses(401, 403, 503) },
        },
      },
      async (request) => lifecycle.logout(callerInstance(request).id),
    );

    app.post(
      '/instance/reconnect/:instance_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Force a reconnection (admin)',
          description:
            'Drops the connection and connects again with the same credentials (CONNECTION events `DISCONNECTED` reason `reconnect_requested`, then `CONNECTING`, `CONNECTED`). An unlinked instance starts pairing instead.',
          params: InstanceIdParams,
          response: { 200: S.StatusReply, ...errorResponses(401, 403, 404, 503) },
        },
      },
      async (request) => lifecycle.reconnect(request.params.instance_id),
    );

    app.post(
      '/instance/proxy/:instance_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Set or clear the instance proxy (admin)',
          description:
            "Routes the instance's network traffic (chat socket, media uploads and downloads, link previews) through `proxyUrl`: `http://`, `https://`, `socks4://`, `socks4a://`, `socks5://` or `socks5h://`, with optional `user:password@`. `null` removes it. A connected instance reconnects at once to apply it (CONNECTION `DISCONNECTED` reason `reconnect_requested`, then `CONNECTED`); otherwise it applies at the next connect. The reply shows the URL without its password. Sandbox instances store it but do not use it.",
          params: InstanceIdParams,
          body: Type.Object(
            {
              proxyUrl: Type.Union([
                Type.String({
                  pattern: '^(https?|socks(4a?|5h?)?)://[^\\s\\x00-\\x1F\\x7F]+$',
                  maxLength: 2048,
                  examples: ['socks5://user:secret@proxy.example.com:1080'],
                }),
                Type.Null(),
              ]),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Type.Object({ instanceId: Type.String(), proxyUrl: Type.Union([Type.String(), Type.Null()]), status: S.Status }),
            ...errorResponses(400, 401, 403, 404),
          },
        },
      },
      async (request) => lifecycle.setProxy(request.params.instance_id, request.body.proxyUrl),
    );
  };
}

function networkSettingsOf(instance: Instance): { interactiveMessages: boolean } {
  return { interactiveMessages: instance.settings.interactiveMessages === true };
}
