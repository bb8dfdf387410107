/**
 * Sits on the event road between a driver and the bus (SessionRegistry calls it for MESSAGE and
 * SEND_MESSAGE): keeps the media bytes a driver handed over in the media store, adds `data.media`
 * (type, size, download route, optionally base64) and records the message in the message store.
 * A storage failure is logged and the event still goes out: losing an event would be worse.
 *
 * The media has a deadline (MEDIA_RECORD_TIMEOUT_MS): a download or write that takes longer does not
 * hold the event (nor, behind it, the instance's later events) in memory; the event goes out with
 * `data.media = { mimetype, stored: false, reason: 'timeout' }`. Bytes that land after the deadline
 * are not referenced by any message; the orphan sweep removes them.
 */
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { MediaConfig } from '../config.js';
import type { InstanceService } from '../instance-registry/service.js';
import { mediaKey, type MediaStore } from '../media/store.js';
import { UPDATE_KINDS } from '../network/message-kinds.js';
import type { CanonicalEvent, EventData, EventMedia, EventMessageKey, EventOf, MessageKey } from '../network/port.js';
import { messageTypeOf, type MessageStore, type StoredMedia } from './store.js';
import { safeMimetype } from '../media/resolver.js';

/** The per-instance setting (instance settings JSON) that inlines received media as base64. */
export const BASE64_SETTING = 'mediaBase64InEvents';

export function downloadPath(messageId: string): string {
  return `/api/v1/message/download/${encodeURIComponent(messageId)}`;
}

/** The key as the store keeps it (without the author and hidden ids); undefined without an id. */
function asKey(key: EventMessageKey): MessageKey | undefined {
  if (!key.id) return undefined;
  return { remoteJid: key.remoteJid, fromMe: key.fromMe, id: key.id };
}

class MediaDeadlineError extends Error {
  constructor(ms: number) {
    super(`media not stored within ${ms} ms`);
  }
}

export class MessageRecorder {
  constructor(
    private readonly messages: MessageStore,
    private readonly media: MediaStore,
    private readonly instances: InstanceService,
    private readonly config: MediaConfig,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  /**
   * Stores the event's message (not awaited: writes are batched, and reads of this message wait for
   * it, MessageStore.find), after its media when it has some: only then is there something to wait
   * for (a promise); otherwise nothing is returned.
   */
  record(instanceId: string, event: CanonicalEvent): Promise<void> | undefined {
    if (event.type !== 'MESSAGE' && event.type !== 'SEND_MESSAGE') return undefined;
    const data = event.data;
    const key = asKey(data.key);
    // A failed send (SEND_MESSAGE status FAILED) carries no content.
    const content = data.message;
    if (!key || !content || typeof content !== 'object') return undefined;
    const messageType = messageTypeOf(content);
    if (UPDATE_KINDS.has(messageType)) return undefined;
    if (event.media) return this.recordWithMedia(instanceId, event, key, content, messageType, event.media);
    this.save(instanceId, data, key, content, messageType, undefined);
    return undefined;
  }

  private async recordWithMedia(
    instanceId: string,
    event: EventOf<'MESSAGE'> | EventOf<'SEND_MESSAGE'>,
    key: MessageKey,
    content: Record<string, unknown>,
    messageType: string,
    media: EventMedia,
  ): Promise<void> {
    const data = event.data;
    let stored: StoredMedia | undefined;
    let timer: NodeJS.Timeout | undefined;
    let late = false;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(new MediaDeadlineError(this.config.recordTimeoutMs));
      }, this.config.recordTimeoutMs);
      timer.unref();
    });
    const work = this.storeMedia(instanceId, key, event.type, media, () => late);
    // Past the deadline the work may still fail; that is already answered by the timeout.
    work.catch(() => undefined);
    try {
      const result = await Promise.race([work, deadline]);
      stored = result.stored;
      data.media = result.view;
    } catch (error) {
      if (error instanceof MediaDeadlineError) {
        this.log.warn(
          { instanceId, messageId: key.id, timeoutMs: this.config.recordTimeoutMs },
          'message media not stored in time; the event goes without it',
        );
        data.media = { mimetype: media.mimetype, stored: false, reason: 'timeout' };
      } else {
        this.log.error({ err: error, instanceId, messageId: key.id }, 'could not store message media');
        data.media = { mimetype: media.mimetype, stored: false };
      }
      stored = undefined;
    } finally {
      clearTimeout(timer);
    }

    this.save(instanceId, data, key, content, messageType, stored);
  }

  private save(
    instanceId: string,
    data: EventData<'MESSAGE'> | EventData<'SEND_MESSAGE'>,
    key: MessageKey,
    content: Record<string, unknown>,
    messageType: string,
    stored: StoredMedia | undefined,
  ): void {
    // Not awaited: writes are batched, and reads of this message wait for it (MessageStore.find).
    this.messages
      .save({
        instanceId,
        key,
        // The author in a group: beside the key (sandbox) or inside it (WhatsApp, as message keys carry it).
        ...(typeof data.participant === 'string'
          ? { participant: data.participant }
          : data.key.participant
            ? { participant: data.key.participant }
            : {}),
        ...(typeof data.pushName === 'string' ? { pushName: data.pushName } : {}),
        messageType,
        message: content,
        messageTimestamp: typeof data.messageTimestamp === 'number' ? data.messageTimestamp : Math.floor(this.clock.now() / 1000),
        ...(stored ? { media: stored } : {}),
        createdAt: this.clock.now(),
      })
      .catch((error: unknown) => this.log.error({ err: error, instanceId, messageId: key.id }, 'could not store message'));
  }

  /** Loads, stores and describes the media (data.media); nothing is written once `late()`. */
  private async storeMedia(
    instanceId: string,
    key: MessageKey,
    type: CanonicalEvent['type'],
    media: NonNullable<CanonicalEvent['media']>,
    late: () => boolean,
  ): Promise<{ stored: StoredMedia; view: Record<string, unknown> }> {
    const bytes = await media.load();
    if (late()) throw new MediaDeadlineError(this.config.recordTimeoutMs);
    // A received message names its own type; it is served back as a header, so only a well-formed one.
    const mimetype = safeMimetype(media.mimetype);
    const stored: StoredMedia = {
      key: mediaKey(instanceId, key.id),
      mimetype,
      size: bytes.length,
      ...(media.fileName ? { fileName: media.fileName } : {}),
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
    await this.media.put(stored.key, bytes, mimetype);
    if (late()) throw new MediaDeadlineError(this.config.recordTimeoutMs);
    const view = {
      mimetype: stored.mimetype,
      fileLength: stored.size,
      ...(stored.fileName ? { fileName: stored.fileName } : {}),
      sha256: stored.sha256,
      downloadUrl: downloadPath(key.id),
      ...(type === 'MESSAGE' && (await this.wantsBase64(instanceId, bytes.length)) ? { base64: bytes.toString('base64') } : {}),
    };
    return { stored, view };
  }

  private async wantsBase64(instanceId: string, size: number): Promise<boolean> {
    if (size > this.config.eventBase64MaxBytes) return false;
    const instance = await this.instances.find(instanceId);
    return instance?.settings[BASE64_SETTING] === true;
  }
}
