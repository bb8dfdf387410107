/** /send routes (every message kind, batches, status posts) and /message media routes. HTTP only. */
import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import type { MediaConfig } from '../config.js';
import { errorResponses, INSTANCE, validatedAs } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import type { BatchService } from './batch.js';
import * as S from '../outgoing/schema.js';
import type { MessagingService } from '../outgoing/service.js';
import { errors } from '../errors.js';
import type { MediaAdmission } from '../media/admission.js';
import { formBody, formSchema, type FormSpec } from './multipart.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route that also takes multipart/form-data (sending/multipart.ts). */
    form?: FormSpec;
  }
}

const tags = ['send'];
const instance = { access: 'instance' as const };

const COMMON =
  'Common fields: `number` (recipient digits, or a group id `<id>@g.us` the instance is in), `quoted: {id}` (reply to a message from this instance\'s message store; 404 when unknown), `mentions` (numbers), `delayMs` (shows "typing…" first). The reply carries the message `key`; a SEND_MESSAGE event follows, and the recipient gets a MESSAGE.';
const MEDIA =
  'Media is `{url}` (https; fetched by the gateway within MEDIA_FETCH_TIMEOUT_MS; private/loopback addresses refused unless MEDIA_ALLOW_PRIVATE_URLS) or `{base64}`, with optional `filename` and `mimetype` (a hint only: the type is sniffed from the bytes), or a file of a multipart/form-data body. Bodies may be up to MEDIA_BODY_LIMIT_BYTES.';
const FORM =
  "Also takes `multipart/form-data`: the same fields as text (objects and lists as JSON text), and the media as a file in the field named after its place in the JSON body; the part's file name and type act as `filename` and `mimetype`. A file is read as it arrives and refused with 413 `media_too_large` once it passes the largest cap its field takes; 400 `invalid_multipart` for a malformed form, a field given twice, a JSON field that is not JSON or a file in a field that takes none.";

/** Media routes take JSON or a multipart form, both validated by the JSON schema. */
function mediaBody(spec: FormSpec) {
  return {
    content: {
      'application/json': { schema: spec.body },
      'multipart/form-data': { schema: validatedAs(formSchema(spec), spec.body) },
    },
  };
}

/**
 * Media bodies count against MEDIA_INFLIGHT_MAX_BYTES from admission (after auth, before the body is
 * read) to the end of the request: the hooks of a form route's scope.
 */
function admissionHooks(admission: MediaAdmission, bodyLimit: number) {
  const held = new WeakMap<object, number>();
  const free = (request: FastifyRequest) => {
    const bytes = held.get(request.raw);
    if (bytes === undefined) return;
    held.delete(request.raw);
    admission.release(bytes);
  };
  return {
    admit: (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const declared = Number(request.headers['content-length']);
      const bytes = Number.isFinite(declared) && declared >= 0 ? Math.min(declared, bodyLimit) : bodyLimit;
      if (!admission.tryAdmit(bytes)) return done(errors.mediaBusy(admission.retryAfterSeconds));
      held.set(request.raw, bytes);
      done();
    },
    release: (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      free(request);
      done();
    },
    // onRequestAbort hooks get no reply.
    releaseAborted: (request: FastifyRequest, done: HookHandlerDoneFunction) => {
      free(request);
      done();
    },
  };
}

/** The body of a route whose schema is `mediaBody`: validated against `schema` for both content types. */
function bodyOf<T extends TSchema>(request: { body: unknown }, _schema: T): Static<T> {
  return request.body as Static<T>;
}

export function sendRoutes(
  messaging: MessagingService,
  batches: BatchService,
  mediaConfig: Pick<MediaConfig, 'bodyLimitBytes' | 'maxBytes'>,
  admission?: MediaAdmission,
): RoutePlugin {
  const mediaBodyLimit = mediaConfig.bodyLimitBytes;
  const caps = mediaConfig.maxBytes;
  /** A media route: its form's file fields and the largest file each may be (the resolver applies the kind's own cap). */
  const form = (body: TSchema, files: string[], fileBytes: number) => {
    const spec: FormSpec = { body, files, fileBytes: Math.min(fileBytes, mediaBodyLimit), totalBytes: mediaBodyLimit };
    return { config: { ...instance, form: spec }, bodyLimit: mediaBodyLimit, body: mediaBody(spec) };
  };
  const forms = {
    media: form(S.SendMediaBody, ['media'], Math.max(caps.image, caps.video, caps.audio, caps.document)),
    link: form(S.SendLinkBody, ['thumbnail'], caps.image),
    button: form(S.SendButtonBody, ['media'], Math.max(caps.image, caps.video)),
    sticker: form(S.SendStickerBody, ['media'], caps.sticker),
    carousel: form(S.SendCarouselBody, ['cards[].media'], Math.max(caps.image, caps.video)),
    statusMedia: form(S.SendStatusMediaBody, ['media'], Math.max(caps.image, caps.video, caps.audio)),
  };
  return async (app) => {
    // A JSON route refuses a form at once, with a sync parser: @fastify/multipart adds two async
    // hooks and a listener to every request of its scope, which only the form routes' scopes pay.
    app.addContentTypeParser('multipart/form-data', (_request, _payload, done) =>
      done(errors.unsupportedContentType('multipart/form-data is taken only by routes with media; send application/json')),
    );
    const admitted = admission ? admissionHooks(admission, mediaBodyLimit) : undefined;
    /**
     * A route that takes JSON or a form (`form(...)` options), in a scope of its own, registered in
     * place so the routes keep their order (the OpenAPI document's, the generated client's).
     */
    const formRoute = (route: (scope: typeof app) => void) =>
      app.register(async (scope) => {
        scope.removeContentTypeParser('multipart/form-data');
        // A file past its cap is reported by formBody (the part's `truncated`), with the field's name.
        await scope.register(multipart, { throwFileSizeLimit: false });
        // The form becomes the route's JSON body before validation. Callback hooks: an async one
        // costs a promise and a turn.
        scope.addHook('preValidation', (request, _reply, done) => {
          const spec = request.routeOptions.config.form!;
          if (request.isMultipart()) {
            formBody(request, spec).then((body) => {
              request.body = body;
              done();
            }, done);
            return;
          }
          // No JSON body at all: with per-content-type schemas nothing else would refuse it.
          if (request.body === null || typeof request.body !== 'object') return done(errors.validationFailed(['body must be object']));
          done();
        });
        if (admitted) {
          // After auth's hooks (the parent scope's run first).
          scope.addHook('onRequest', admitted.admit);
          scope.addHook('onResponse', admitted.release);
          scope.addHook('onRequestAbort', admitted.releaseAborted);
        }
        route(scope);
      });

    app.post(
      '/send/text',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Send a text message',
          description: `Sends \`text\` to \`number\`; \`linkPreview\` (default true) marks its first URL for a preview. ${COMMON}`,
          body: S.SendTextBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.sendText(callerInstance(request), request.body),
    );

    await formRoute((scope) =>
      scope.post(
        '/send/media',
        {
          config: forms.media.config,
          bodyLimit: forms.media.bodyLimit,
          schema: {
            tags,
            security: INSTANCE,
            summary: 'Send an image, video, audio or document',
            description: `\`type\` image (JPEG, PNG; MEDIA_MAX_IMAGE_BYTES, default 16 MiB), video (MP4, 3GP; MEDIA_MAX_VIDEO_BYTES, 64 MiB), audio (OGG/Opus, OGG, MP3, M4A, AAC, AMR; MEDIA_MAX_AUDIO_BYTES, 16 MiB; \`voiceNote: true\` needs OGG/Opus) or document (any file; MEDIA_MAX_DOCUMENT_BYTES, 64 MiB). Without \`type\` it is inferred from the bytes. The recipient gets \`imageMessage\`, \`videoMessage\`, \`audioMessage\` (\`ptt\` for voice notes) or \`documentMessage\`. ${MEDIA} ${COMMON} ${FORM}`,
            body: forms.media.body,
            response: { 200: S.SendReply, ...S.sendErrors(413, 415, 422) },
          },
        },
        async (request) => messaging.sendMedia(callerInstance(request), bodyOf(request, S.SendMediaBody)),
      ),
    );

    await formRoute((scope) =>
      scope.post(
        '/send/link',
        {
          config: forms.link.config,
          bodyLimit: forms.link.bodyLimit,
          schema: {
            tags,
            security: INSTANCE,
            summary: 'Send a link with a preview',
            description: `A text with \`url\` and the preview you give: \`title\`, \`description\`, \`thumbnail\` (an image, re-encoded as a small JPEG). The page itself is not fetched. The recipient gets \`extendedTextMessage\` with \`matchedText\`, \`title\`, \`description\`, \`jpegThumbnail\`. ${COMMON} ${FORM}`,
            body: forms.link.body,
            response: { 200: S.SendReply, ...S.sendErrors(413, 415, 422) },
          },
        },
        async (request) => messaging.sendLink(callerInstance(request), bodyOf(request, S.SendLinkBody)),
      ),
    );

    app.post(
      '/send/location',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Send a location',
          description: `\`latitude\` (-90..90) and \`longitude\` (-180..180) in degrees, with an optional \`name\`, \`address\` and \`url\`. The recipient gets \`locationMessage\`. ${COMMON}`,
          body: S.SendLocationBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.sendLocation(callerInstance(request), request.body),
    );

    app.post(
      '/send/contact',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Send contact cards',
          description: `1 to ${S.LIMITS.contacts} contacts, each built into an escaped vCard 3.0 whose numbers link to WhatsApp (\`waid\`). One contact arrives as \`contactMessage\`, several as \`contactsArrayMessage\`. ${COMMON}`,
          body: S.SendContactBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.sendContact(callerInstance(request), request.body),
    );

    await formRoute((scope) =>
      scope.post(
        '/send/button',
        {
          config: forms.button.config,
          bodyLimit: forms.button.bodyLimit,
          schema: {
            tags,
            security: INSTANCE,
            summary: 'Send a message with buttons',
            description: `Body \`text\` (≤ ${S.LIMITS.interactiveBody}), optional \`title\` / \`footer\` (≤ ${S.LIMITS.headerText}) or header \`media\` (image or video), and 1 to ${S.LIMITS.buttons} buttons: \`reply\` (needs a unique \`id\`), \`url\` (\`url\`), \`call\` (\`phoneNumber\`), \`copy\` (\`code\`); labels ≤ ${S.LIMITS.buttonText} characters. The recipient gets an \`interactiveMessage\` with native-flow buttons (\`quick_reply\`, \`cta_url\`, \`cta_call\`, \`cta_copy\`). ${COMMON} ${FORM}`,
            body: forms.button.body,
            response: { 200: S.SendReply, ...S.sendErrors(413, 415, 422) },
          },
        },
        async (request) => messaging.sendButtons(callerInstance(request), bodyOf(request, S.SendButtonBody)),
      ),
    );

    app.post(
      '/send/list',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Send a list menu',
          description: `A button (\`buttonText\`, ≤ ${S.LIMITS.buttonText}) that opens 1 to ${S.LIMITS.listSections} sections (titles ≤ ${S.LIMITS.listSectionTitle}) holding at most ${S.LIMITS.listRows} rows in all (title ≤ ${S.LIMITS.listRowTitle}, description ≤ ${S.LIMITS.listRowDescription}, unique \`id\` ≤ ${S.LIMITS.listRowId}). The recipient gets a native-flow \`interactiveMessage\` (inside \`viewOnceMessage\`) whose \`single_select\` button carries the sections as JSON. ${COMMON}`,
          body: S.SendListBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.sendList(callerInstance(request), request.body),
    );

    app.post(
      '/send/poll',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Send a poll',
          description: `\`name\` and ${S.LIMITS.pollOptionsMin} to ${S.LIMITS.pollOptionsMax} distinct \`options\`; \`selectableCount\` (default 1) of them may be chosen. The recipient gets \`pollCreationMessageV3\` (single choice) or \`pollCreationMessage\`; votes come back as MESSAGE events with \`pollUpdateMessage\` and \`pollVote\`. ${COMMON}`,
          body: S.SendPollBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.sendPoll(callerInstance(request), request.body),
    );

    await formRoute((scope) =>
      scope.post(
        '/send/sticker',
        {
          config: forms.sticker.config,
          bodyLimit: forms.sticker.bodyLimit,
          schema: {
            tags,
            security: INSTANCE,
            summary: 'Send a sticker',
            description: `WebP is sent as is; PNG, JPEG and GIF are converted to a 512x512 WebP (transparent padding; animated GIFs stay animated). MEDIA_MAX_STICKER_BYTES (default 2 MiB) applies to what you give. The recipient gets \`stickerMessage\`. ${MEDIA} ${COMMON} ${FORM}`,
            body: forms.sticker.body,
            response: { 200: S.SendReply, ...S.sendErrors(413, 415, 422) },
          },
        },
        async (request) => messaging.sendSticker(callerInstance(request), bodyOf(request, S.SendStickerBody)),
      ),
    );

    app.post(
      '/send/pix',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Send a Pix payment key',
          description: `A payment button with the Pix key of \`merchantName\`: \`keyType\` CPF or CNPJ (check digits verified; dots, slash, dash allowed; CNPJ may be alphanumeric), PHONE (+55, area code, number), EMAIL, or EVP (UUID); the key is normalised as the Pix directory stores it. Optional \`amount\` in BRL (2 decimals). The recipient gets an \`interactiveMessage\` with a native-flow \`payment_info\` button (\`pix_static_code\`). ${COMMON}`,
          body: S.SendPixBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.sendPix(callerInstance(request), request.body),
    );

    await formRoute((scope) =>
      scope.post(
        '/send/carousel',
        {
          config: forms.carousel.config,
          bodyLimit: forms.carousel.bodyLimit,
          schema: {
            tags,
            security: INSTANCE,
            summary: 'Send a carousel of cards',
            description: `${S.LIMITS.carouselCardsMin} to ${S.LIMITS.carouselCardsMax} cards scrolled sideways, each with media (all images or all videos), text (≤ ${S.LIMITS.carouselCardText}) and 1 to ${S.LIMITS.carouselCardButtons} buttons (the same number on every card). The recipient gets an \`interactiveMessage\` with \`carouselMessage.cards\`. ${MEDIA} ${COMMON} ${FORM}`,
            body: forms.carousel.body,
            response: { 200: S.SendReply, ...S.sendErrors(413, 415, 422) },
          },
        },
        async (request) => messaging.sendCarousel(callerInstance(request), bodyOf(request, S.SendCarouselBody)),
      ),
    );

    app.post(
      '/send/forward',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Forward a stored message',
          description:
            'Forwards the message `messageId` (one this instance sent or received, kept for MESSAGE_RETENTION_DAYS) to `number`, media included. It arrives with `contextInfo.isForwarded` and `forwardingScore`. 404 when the message (or its media) is no longer stored.',
          body: S.SendForwardBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.forward(callerInstance(request), request.body),
    );

    app.post(
      '/send/batch/text',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Send many texts, paced, in the background',
          description: `Accepts 1 to ${S.LIMITS.batchItems} texts and answers 202 with a \`batchId\` at once. Items are sent in order, one every \`intervalMs\` (default BATCH_INTERVAL_MS = 2000; at least BATCH_MIN_INTERVAL_MS = 500); an instance's batches run one after another. Follow with GET /send/batch/{batchId}; each sent item also gives a SEND_MESSAGE event. Batches survive a restart; an item caught mid-send by a crash is marked failed, not sent twice. 409 when the instance is not connected.`,
          body: S.SendBatchBody,
          response: { 202: S.BatchAccepted, ...S.sendErrors() },
        },
      },
      async (request, reply) => reply.status(202).send(await batches.create(callerInstance(request), request.body)),
    );

    app.get(
      '/send/batch/:batchId',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Progress of a batch',
          description: "Counts and each item's result: `sent` with its `messageId`, `failed` with the `error`, `pending`, or `cancelled`.",
          params: S.BatchParams,
          response: { 200: S.BatchProgress, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => batches.progress(callerInstance(request), request.params.batchId),
    );

    app.post(
      '/send/batch/:batchId/cancel',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Cancel a batch',
          description: 'Items not sent yet become `cancelled`; an item being sent still completes. 409 when the batch already finished.',
          params: S.BatchParams,
          response: { 200: S.BatchProgress, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => batches.cancel(callerInstance(request), request.params.batchId),
    );

    app.post(
      '/send/status/text',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Post a text status (story)',
          description: `\`text\` (≤ ${S.LIMITS.statusText}) on \`backgroundColor\` in \`font\`, seen by the numbers in \`audience\`. The reply key has \`remoteJid\` \`status@broadcast\`; each audience member gets a MESSAGE in \`status@broadcast\` (author in \`participant\`) with \`extendedTextMessage\` \`backgroundArgb\` and \`font\` (the font by name, e.g. \`SYSTEM_BOLD\`).`,
          body: S.SendStatusTextBody,
          response: { 200: S.SendReply, ...S.sendErrors() },
        },
      },
      async (request) => messaging.sendStatusText(callerInstance(request), request.body),
    );

    await formRoute((scope) =>
      scope.post(
        '/send/status/media',
        {
          config: forms.statusMedia.config,
          bodyLimit: forms.statusMedia.bodyLimit,
          schema: {
            tags,
            security: INSTANCE,
            summary: 'Post an image, video or audio status (story)',
            description: `The media (image, video or audio, its kind from the bytes) with an optional \`caption\`, seen by the numbers in \`audience\`; delivered in \`status@broadcast\` like text statuses. ${MEDIA} ${FORM}`,
            body: forms.statusMedia.body,
            response: { 200: S.SendReply, ...S.sendErrors(413, 415, 422) },
          },
        },
        async (request) => messaging.sendStatusMedia(callerInstance(request), bodyOf(request, S.SendStatusMediaBody)),
      ),
    );
  };
}

function contentDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
}

export function messageRoutes(messaging: MessagingService): RoutePlugin {
  return async (app) => {
    const messageTags = ['message'];

    app.get(
      '/message/download/:messageId',
      {
        config: instance,
        schema: {
          tags: messageTags,
          security: INSTANCE,
          summary: 'Download the media of a message',
          description:
            'The bytes of the image, video, audio, document or sticker of a message this instance received or sent (also linked as `data.media.downloadUrl` in MESSAGE and SEND_MESSAGE events), with its Content-Type. Served from the media store (DATA_DIR/media, or S3 when S3_BUCKET is set). 404 when the message is unknown, has no media, or was pruned (MESSAGE_RETENTION_DAYS).',
          params: S.MessageIdParams,
          response: {
            // Bytes, not JSON: described for the docs, never serialised (a stream is sent as it is).
            200: Type.Unsafe<unknown>({
              description: 'The media bytes.',
              content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
            }),
            ...errorResponses(401, 403, 404),
          },
        },
      },
      async (request, reply) => {
        const message = await messaging.mediaOf(callerInstance(request), request.params.messageId);
        const stream = await messaging.openMedia(message.media.key, message.key.id);
        void reply
          .header('content-type', message.media.mimetype)
          .header('content-length', String(message.media.size))
          .header('content-disposition', contentDisposition(message.media.fileName ?? message.key.id));
        return reply.send(stream);
      },
    );

    app.get(
      '/message/download/:messageId/base64',
      {
        config: instance,
        schema: {
          tags: messageTags,
          security: INSTANCE,
          summary: 'The media of a message as base64 JSON',
          description: 'Like GET /message/download/{messageId}, as JSON with `base64`, `mimetype`, `fileName`, `fileLength` and `sha256`.',
          params: S.MessageIdParams,
          response: { 200: S.MediaBase64Reply, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => {
        const message = await messaging.mediaOf(callerInstance(request), request.params.messageId);
        const data = await messaging.readMedia(message.media.key, message.key.id);
        return {
          messageId: message.key.id,
          mimetype: message.media.mimetype,
          fileLength: data.length,
          fileName: message.media.fileName ?? null,
          sha256: message.media.sha256,
          base64: data.toString('base64'),
        };
      },
    );

    app.get(
      '/message/media-settings',
      {
        config: instance,
        schema: {
          tags: messageTags,
          security: INSTANCE,
          summary: 'Received-media settings of the calling instance',
          description:
            'Whether the MESSAGE events of received media carry the bytes as base64 (up to EVENT_BASE64_MAX_BYTES) besides the download URL that every media event has. Change it with POST /message/media-settings.',
          response: { 200: S.MediaSettings, ...errorResponses(401, 403) },
        },
      },
      async (request) => messaging.mediaSettings(callerInstance(request)),
    );

    app.post(
      '/message/media-settings',
      {
        config: instance,
        schema: {
          tags: messageTags,
          security: INSTANCE,
          summary: 'Change received-media settings',
          description:
            'Received media is always stored and downloadable. With `mediaBase64InEvents: true`, media up to MEDIA_EVENT_BASE64_MAX_BYTES (default 5 MiB) also comes inline as `data.media.base64` in MESSAGE events (larger media only as `downloadUrl`).',
          body: S.MediaSettings,
          response: { 200: S.MediaSettings, ...errorResponses(401, 403) },
        },
      },
      async (request) => messaging.setMediaSettings(callerInstance(request), request.body),
    );
  };
}
