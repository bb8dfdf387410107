/** /chatwoot routes: the instance's settings (instance key) and the webhook Chatwoot calls (its URL secret). */
import { errorResponses, INSTANCE } from '../../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../../http/types.js';
import type { ChatwootSettings } from './repo.js';
import * as S from './schema.js';
import type { ChatwootService, ImportStatus } from './service.js';

const tags = ['chatwoot'];
const instance = { access: 'instance' as const };

function mask(secret: string): string {
  return `${secret.slice(0, 4)}****`;
}

function view(service: ChatwootService, settings: ChatwootSettings, reveal: boolean) {
  const path = service.webhookPath(settings.instanceId, reveal ? settings.webhookSecret : '****');
  const health = service.healthOf(settings.instanceId);
  return {
    instanceId: settings.instanceId,
    baseUrl: settings.baseUrl,
    accountId: settings.accountId,
    apiAccessToken: mask(settings.apiToken),
    inboxId: settings.inboxId,
    inboxName: settings.inboxName,
    webhookPath: path,
    webhookUrl: settings.waygateUrl ? `${settings.waygateUrl}${path}` : null,
    waygateUrl: settings.waygateUrl,
    signingSecret: settings.signingSecret ? mask(settings.signingSecret) : null,
    ...settings.options,
    health: {
      up: health.up,
      lastError: health.lastError,
      lastSuccessAt: health.lastSuccessAt === null ? null : new Date(health.lastSuccessAt).toISOString(),
    },
    createdAt: new Date(settings.createdAt).toISOString(),
    updatedAt: new Date(settings.updatedAt).toISOString(),
  };
}

function importView(status: ImportStatus) {
  const time = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return { ...status, startedAt: time(status.startedAt), finishedAt: time(status.finishedAt) };
}

export function chatwootRoutes(service: ChatwootService): RoutePlugin {
  return async (app) => {
    // The webhook's signature covers the exact bytes: keep them beside the parsed body (this scope only).
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      try {
        const text = typeof body === 'string' ? body : body.toString('utf8');
        (request as { rawBody?: string }).rawBody = text;
        done(null, text === '' ? undefined : JSON.parse(text));
      } catch {
        done(Object.assign(new Error('body is not valid JSON'), { statusCode: 400 }), undefined);
      }
    });

    app.post(
      '/chatwoot',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Connect the instance to Chatwoot',
          description:
            "Sets (or replaces) the Chatwoot settings of the calling instance. Waygate checks them against Chatwoot at once: with `inboxId` it reads that inbox; with `inboxName` it uses the inbox of that name or creates an API-channel inbox whose `webhook_url` is this instance's webhook URL (`waygateUrl` + `webhookPath`). From then on every MESSAGE and SEND_MESSAGE of the instance goes to Chatwoot through the durable outbox, and agents' replies come back through the webhook. The reply shows the whole `webhookPath` (with its secret) once; GET masks it. Changing the account or inbox starts the chat mappings afresh. 422 when Chatwoot refuses the token or has no such inbox; 502 when it cannot be reached.",
          body: S.ConfigBody,
          response: { 200: S.ConfigView, ...errorResponses(401, 403, 422, 502) },
        },
      },
      async (request) => {
        const { settings, inboxCreated } = await service.configure(callerInstance(request), request.body);
        return { ...view(service, settings, true), inboxCreated };
      },
    );

    app.get(
      '/chatwoot',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Read the Chatwoot settings',
          description:
            'The Chatwoot settings of the calling instance, with the access token, the signing secret and the webhook secret masked, and the health of the road to Chatwoot. 404 when Chatwoot is not set up.',
          response: { 200: S.ConfigView, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => {
        const current = callerInstance(request);
        return view(service, await service.read(current), false);
      },
    );

    app.delete(
      '/chatwoot',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Disconnect the instance from Chatwoot',
          description:
            'Removes the Chatwoot settings and the stored chat and message mappings of the calling instance; events are no longer sent to Chatwoot and the webhook URL stops working. Nothing is deleted in Chatwoot. 404 when Chatwoot is not set up.',
          response: { 200: S.DeletedReply, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => {
        const current = callerInstance(request);
        await service.remove(current);
        return { deleted: true as const, instanceId: current.id };
      },
    );

    app.post(
      '/chatwoot/import',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Import contacts and recent history into Chatwoot',
          description:
            "Starts a background import through Chatwoot's API (never into its database), paced by `intervalMs`: with `contacts`, a contact (found by phone number first, else created) for every person chat the instance lists; then the messages of the last `days` days from the message store, oldest first, each prefixed with its original time (Chatwoot dates messages when they are posted). Messages already in Chatwoot are skipped, so an import can be run again after a failure. Answers 202 with the import status; follow it with GET /chatwoot/import. 404 when Chatwoot is not set up; 409 while an import runs.",
          body: S.ImportBody,
          response: { 202: S.ImportStatus, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request, reply) => {
        const status = service.startImport(callerInstance(request), request.body);
        return reply.status(202).send(importView(status));
      },
    );

    app.get(
      '/chatwoot/import',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Status of the Chatwoot import',
          description:
            'The last import of the calling instance in this process: `idle` (none yet), `running`, `done` or `failed` (with `lastError`; run it again to continue).',
          response: { 200: S.ImportStatus, ...errorResponses(401, 403) },
        },
      },
      async (request) => importView(service.importStatus(callerInstance(request).id)),
    );

    app.post(
      '/chatwoot/webhook/:instance_id/:secret',
      {
        config: { access: 'none' as const },
        schema: {
          tags,
          summary: 'Chatwoot webhook (called by Chatwoot)',
          description:
            'Chatwoot posts its webhook events here (the API inbox\'s `webhook_url`). The URL carries a per-instance random secret (shown once by POST /chatwoot); a wrong one gets 401. When a `signingSecret` is set, `X-Chatwoot-Signature` (`sha256=` + hex HMAC-SHA256 of `{X-Chatwoot-Timestamp}.{body}`) must match and the timestamp be at most 5 minutes off, else 401. Answered at once with 200; the work runs in the background. Used: `message_created` with `message_type` `outgoing`, not `private`, written by an agent (sent to the WhatsApp chat, signed with the agent\'s name when set, attachments fetched from their `data_url`); `message_updated` with `content_attributes.deleted` (deleted on WhatsApp); `conversation_typing_on`/`off` ("typing…" on WhatsApp); `conversation_status_changed` to `resolved` (the `closingMessage`, when set). Messages Waygate posted itself (`source_id` `WAID:...`) and messages already sent are ignored, so nothing loops or doubles. Other events are answered with `ignored`.',
          params: S.WebhookParams,
          body: S.WebhookBody,
          response: { 200: S.WebhookReply, ...errorResponses(401) },
        },
      },
      async (request) => {
        const raw = (request as { rawBody?: string }).rawBody ?? JSON.stringify(request.body);
        const result = await service.acceptWebhook(request.params.instance_id, request.params.secret, request.headers, raw, request.body);
        return { received: true, ...result };
      },
    );
  };
}
