/**
 * Sending: each /send body becomes one canonical OutgoingMessage. The rules the schemas cannot
 * state (exactly one media source, button fields by type, unique ids, totals across sections,
 * card consistency, Pix keys) are checked here with a precise 400, media is fetched or decoded and
 * checked by the MediaResolver, quotes come from the message store, then the instance's session sends.
 */
import type { Static } from 'typebox';
import { AppError, errors } from '../errors.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import { withArticle, type MediaResolver, type MediaSource } from '../media/resolver.js';
import type { MediaStore } from '../media/store.js';
import { takeUpload } from '../media/upload.js';
import type {
  Addressed,
  CarouselCard,
  MediaPayload,
  MessageButton,
  OutgoingMessage,
  QuotedMessage,
  SentMessage,
  Session,
} from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';
import { amountInCents, normalisePixKey } from './pix.js';
import { BASE64_SETTING } from '../message-store/recorder.js';
import type * as S from './schema.js';
import { LIMITS } from './schema.js';
import type { MessageStore, StoredMessage } from '../message-store/store.js';
import { contactCards } from './vcard.js';

type MediaBody = Static<typeof S.MediaInput>;
type ButtonBody = Static<typeof S.Button>;

/** Exactly one of `url`, `base64` or an uploaded file (multipart), as the resolver takes it. */
export function mediaSource(body: MediaBody, field: string): MediaSource {
  const extras = { ...(body.mimetype ? { mimetype: body.mimetype } : {}), ...(body.filename ? { filename: body.filename } : {}) };
  const upload = takeUpload(body);
  if (upload !== undefined) {
    if (body.url !== undefined || body.base64 !== undefined)
      throw errors.invalidMedia(`${field} is an uploaded file; leave out url and base64`);
    return { upload, ...extras };
  }
  if (body.url !== undefined && body.base64 === undefined) return { url: body.url, ...extras };
  if (body.base64 !== undefined && body.url === undefined) {
    // Moved, not copied: once the resolver has decoded it, nothing holds the (large) text any more.
    const base64 = body.base64;
    body.base64 = undefined;
    return { base64, ...extras };
  }
  throw errors.invalidMedia(`${field} must have exactly one of url or base64 (or be a file of a multipart/form-data request)`);
}

function buttons(list: ButtonBody[], field: string): MessageButton[] {
  const ids = new Set<string>();
  return list.map((button, i) => {
    const where = `${field}[${i}]`;
    const allowed: Record<ButtonBody['type'], keyof ButtonBody> = { reply: 'id', url: 'url', call: 'phoneNumber', copy: 'code' };
    const own = allowed[button.type];
    for (const other of Object.values(allowed)) {
      if (other !== own && button[other] !== undefined)
        throw errors.badRequest(`${where}.${other} is not allowed on a ${button.type} button`);
    }
    const value = button[own];
    if (value === undefined) throw errors.badRequest(`${where}.${own} is required for a ${button.type} button`);
    switch (button.type) {
      case 'reply':
        if (ids.has(value)) throw errors.badRequest(`${where}.id "${value}" is used twice; reply ids must be unique`);
        ids.add(value);
        return { type: 'reply', id: value, text: button.text };
      case 'url':
        return { type: 'url', url: value, text: button.text };
      case 'call':
        return { type: 'call', phoneNumber: value, text: button.text };
      case 'copy':
        return { type: 'copy', code: value, text: button.text };
    }
  });
}

/** A send's reply: what the network accepted and the instance that sent it (a failover group's member). */
export type SendResult = SentMessage & { instanceId: string };

/**
 * How one attempt to put a message on the network ended, for observers (health/ scores):
 * `sent`; `refused` before it reached the network (not connected, network unavailable, rate-limited
 * by the network), so another instance may send it; `failed` on the way (it may have reached the
 * network: never sent again); `rejected` for the caller's own mistakes (bad input, unknown quote).
 */
export type SendOutcome = 'sent' | 'refused' | 'failed' | 'rejected';

export interface SendAttempt {
  instanceId: string;
  outcome: SendOutcome;
  /** Time from the session lookup to the network's answer. */
  ms: number;
  /** The AppError code when it did not succeed. */
  code?: string;
}

/** Error codes that mean the message never reached the network. */
// instance_moving: held by another process (cluster mode), refused before it reached the network.
const REFUSED_CODES = new Set(['instance_not_connected', 'network_unavailable', 'network_rate_limited', 'instance_moving']);

export function sendOutcomeOf(error: unknown): Exclude<SendOutcome, 'sent'> {
  if (error instanceof AppError) {
    if (REFUSED_CODES.has(error.code)) return 'refused';
    // 501: the driver lacks the kind; the caller's choice, not the instance's trouble.
    return error.status >= 500 && error.status !== 501 ? 'failed' : 'rejected';
  }
  return 'failed';
}

/**
 * Picks the instance that really sends (admin/failover: a group token's member, tried again on the
 * next member when refused). `routes` says whether it handles the instance the caller got from
 * authentication; `send` then calls `attempt` once per member it tries (the message is built once, media included).
 */
export interface SendRouter {
  routes(instance: Instance): boolean;
  send(instance: Instance, message: OutgoingMessage, attempt: (member: Instance) => Promise<SendResult>): Promise<SendResult>;
}

export class MessagingService {
  private readonly observers: ((attempt: SendAttempt) => void)[] = [];
  private router: SendRouter | undefined;

  constructor(
    private readonly sessions: SessionRegistry,
    private readonly instances: InstanceService,
    private readonly store: MessageStore,
    private readonly mediaStore: MediaStore,
    private readonly resolver: MediaResolver,
  ) {}

  /** 409 `instance_not_connected` unless the instance is connected; the SEND_MESSAGE event follows. */
  async send(instance: Instance, message: OutgoingMessage): Promise<SendResult> {
    const session = await this.sender(instance);
    return session.send(message);
  }

  /** A stored message of this instance, or a 404 naming it. */
  async stored(instance: Instance, messageId: string, what = 'message'): Promise<StoredMessage> {
    const found = await this.store.find(instance.id, messageId);
    if (!found) throw errors.messageNotFound(`${what} ${messageId} not found in this instance's message store`);
    return found;
  }

  async sendText(instance: Instance, body: Static<typeof S.SendTextBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    return session.send({
      kind: 'text',
      ...(await this.addressed(instance, body)),
      text: body.text,
      linkPreview: body.linkPreview ?? true,
    });
  }

  async sendMedia(instance: Instance, body: Static<typeof S.SendMediaBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    if (body.voiceNote && body.type !== undefined && body.type !== 'audio') throw errors.badRequest('voiceNote applies to type audio only');
    if (body.caption && (body.type === 'audio' || body.voiceNote)) throw errors.badRequest('caption is not shown on audio; leave it out');
    const addressed = await this.addressed(instance, body);
    const { mediaType, media } = await this.resolver.media(mediaSource(body.media, 'media'), 'media', body.type, body.voiceNote === true);
    if (body.caption && mediaType === 'audio') throw errors.badRequest('caption is not shown on audio; leave it out');
    return session.send({
      kind: 'media',
      ...addressed,
      mediaType,
      media,
      ...(body.caption ? { caption: body.caption } : {}),
      ...(body.voiceNote ? { voiceNote: true } : {}),
    });
  }

  async sendLink(instance: Instance, body: Static<typeof S.SendLinkBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const addressed = await this.addressed(instance, body);
    const text = body.text === undefined ? body.url : body.text.includes(body.url) ? body.text : `${body.text}\n${body.url}`;
    if (text.length > LIMITS.text) throw errors.badRequest(`text with the URL is longer than ${LIMITS.text} characters`);
    const thumbnail = body.thumbnail ? await this.resolver.thumbnail(mediaSource(body.thumbnail, 'thumbnail'), 'thumbnail') : undefined;
    return session.send({
      kind: 'link',
      ...addressed,
      text,
      url: body.url,
      ...(body.title ? { title: body.title } : {}),
      ...(body.description ? { description: body.description } : {}),
      ...(thumbnail ? { thumbnail } : {}),
    });
  }

  async sendLocation(instance: Instance, body: Static<typeof S.SendLocationBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    return session.send({
      kind: 'location',
      ...(await this.addressed(instance, body)),
      latitude: body.latitude,
      longitude: body.longitude,
      ...(body.name ? { name: body.name } : {}),
      ...(body.address ? { address: body.address } : {}),
      ...(body.url ? { url: body.url } : {}),
    });
  }

  async sendContact(instance: Instance, body: Static<typeof S.SendContactBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    return session.send({ kind: 'contact', ...(await this.addressed(instance, body)), contacts: contactCards(body.contacts) });
  }

  async sendButtons(instance: Instance, body: Static<typeof S.SendButtonBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const list = buttons(body.buttons, 'buttons');
    const addressed = await this.addressed(instance, body);
    let header: { mediaType: 'image' | 'video'; media: MediaPayload } | undefined;
    if (body.media) {
      const visual = await this.resolver.visual(mediaSource(body.media, 'media'), 'media');
      header = { mediaType: visual.mediaType as 'image' | 'video', media: visual.media };
    }
    return session.send({
      kind: 'buttons',
      ...addressed,
      text: body.text,
      ...(body.title ? { title: body.title } : {}),
      ...(body.footer ? { footer: body.footer } : {}),
      ...(header ? { header } : {}),
      buttons: list,
    });
  }

  async sendList(instance: Instance, body: Static<typeof S.SendListBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const rows = body.sections.reduce((sum, section) => sum + section.rows.length, 0);
    if (rows > LIMITS.listRows) throw errors.badRequest(`sections hold ${rows} rows; a list has at most ${LIMITS.listRows} rows in all`);
    const ids = new Set<string>();
    body.sections.forEach((section, s) =>
      section.rows.forEach((row, r) => {
        if (ids.has(row.id)) throw errors.badRequest(`sections[${s}].rows[${r}].id "${row.id}" is used twice; row ids must be unique`);
        ids.add(row.id);
      }),
    );
    return session.send({
      kind: 'list',
      ...(await this.addressed(instance, body)),
      text: body.text,
      ...(body.title ? { title: body.title } : {}),
      ...(body.footer ? { footer: body.footer } : {}),
      buttonText: body.buttonText,
      sections: body.sections.map((section) => ({
        title: section.title,
        rows: section.rows.map((row) => ({ id: row.id, title: row.title, ...(row.description ? { description: row.description } : {}) })),
      })),
    });
  }

  async sendPoll(instance: Instance, body: Static<typeof S.SendPollBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const selectableCount = body.selectableCount ?? 1;
    if (selectableCount > body.options.length) {
      throw errors.badRequest(`selectableCount (${selectableCount}) is more than the ${body.options.length} options`);
    }
    return session.send({
      kind: 'poll',
      ...(await this.addressed(instance, body)),
      name: body.name,
      options: body.options,
      selectableCount,
    });
  }

  async sendSticker(instance: Instance, body: Static<typeof S.SendStickerBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const addressed = await this.addressed(instance, body);
    const media = await this.resolver.sticker(mediaSource(body.media, 'media'), 'media');
    return session.send({ kind: 'sticker', ...addressed, media });
  }

  async sendPix(instance: Instance, body: Static<typeof S.SendPixBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const key = normalisePixKey(body.keyType, body.key);
    const amountCents = body.amount === undefined ? undefined : amountInCents(body.amount);
    return session.send({
      kind: 'pix',
      ...(await this.addressed(instance, body)),
      merchantName: body.merchantName,
      key,
      keyType: body.keyType,
      ...(amountCents !== undefined ? { amountCents } : {}),
      ...(body.text ? { text: body.text } : {}),
    });
  }

  async sendCarousel(instance: Instance, body: Static<typeof S.SendCarouselBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const first = body.cards[0]!;
    body.cards.forEach((card, i) => {
      if (card.buttons.length !== first.buttons.length) {
        throw errors.badRequest(
          `cards[${i}] has ${card.buttons.length} buttons and cards[0] ${first.buttons.length}; every card needs the same number`,
        );
      }
    });
    const cardButtons = body.cards.map((card, i) => buttons(card.buttons, `cards[${i}].buttons`));
    const addressed = await this.addressed(instance, body);
    const cards: CarouselCard[] = [];
    for (const [i, card] of body.cards.entries()) {
      const field = `cards[${i}].media`;
      const visual = await this.resolver.visual(mediaSource(card.media, field), field);
      const mediaType = visual.mediaType as 'image' | 'video';
      if (cards[0] && cards[0].mediaType !== mediaType) {
        throw errors.unsupportedMedia(
          `${field} is ${withArticle(mediaType)} and cards[0].media ${withArticle(cards[0].mediaType)}; every card needs the same kind`,
        );
      }
      cards.push({
        mediaType,
        media: visual.media,
        text: card.text,
        ...(card.footer ? { footer: card.footer } : {}),
        buttons: cardButtons[i]!,
      });
    }
    return session.send({ kind: 'carousel', ...addressed, text: body.text, ...(body.footer ? { footer: body.footer } : {}), cards });
  }

  async forward(instance: Instance, body: Static<typeof S.SendForwardBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const original = await this.stored(instance, body.messageId);
    let media: MediaPayload | undefined;
    if (original.media) {
      const data = await this.mediaStore.read(original.media.key);
      if (!data) throw errors.mediaGone(body.messageId);
      media = {
        data,
        mimetype: original.media.mimetype,
        sha256: original.media.sha256,
        ...(original.media.fileName ? { fileName: original.media.fileName } : {}),
      };
    }
    return session.send({
      kind: 'forward',
      to: body.number,
      ...(body.delayMs ? { delayMs: body.delayMs } : {}),
      original: quotedOf(original),
      ...(media ? { media } : {}),
    });
  }

  async sendStatusText(instance: Instance, body: Static<typeof S.SendStatusTextBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    return session.send({
      kind: 'status_text',
      audience: body.audience,
      text: body.text,
      backgroundColor: (body.backgroundColor ?? '#25D366').toUpperCase(),
      font: body.font ?? 'SYSTEM',
    });
  }

  async sendStatusMedia(instance: Instance, body: Static<typeof S.SendStatusMediaBody>): Promise<SendResult> {
    const session = await this.sender(instance);
    const { mediaType, media } = await this.resolver.visual(mediaSource(body.media, 'media'), 'media', true);
    if (body.caption && mediaType === 'audio') throw errors.badRequest('caption is not shown on audio; leave it out');
    return session.send({
      kind: 'status_media',
      audience: body.audience,
      mediaType,
      media,
      ...(body.caption ? { caption: body.caption } : {}),
    });
  }

  /** Hears every attempt to send (health/ scores); must not throw or block. */
  onAttempt(observer: (attempt: SendAttempt) => void): void {
    this.observers.push(observer);
  }

  /** The one router of sends (admin/failover groups). */
  routeWith(router: SendRouter): void {
    this.router = router;
  }

  /**
   * What the send methods send through: the connected check comes first (a 409 before any media is
   * fetched) unless a router picks the member, and every attempt is timed and reported.
   */
  private sender(instance: Instance): Sender | Promise<Sender> {
    const router = this.router?.routes(instance) ? this.router : undefined;
    const sender: Sender = {
      send: (message) =>
        router ? router.send(instance, message, (member) => this.attempt(member, message)) : this.attempt(instance, message),
    };
    // A promise only when the instance's record must be read first.
    if (router || this.sessions.connectedNow(instance)) return sender;
    return this.sessions.connected(instance).then(() => sender);
  }

  private async attempt(instance: Instance, message: OutgoingMessage): Promise<SendResult> {
    const started = performance.now();
    try {
      const session = this.sessions.connectedNow(instance) ?? (await this.sessions.connected(instance));
      const sent = await session.send(message);
      this.report({ instanceId: instance.id, outcome: 'sent', ms: performance.now() - started });
      // The new field first: a spread followed by a new field makes a new hidden class on each call (Node 20).
      return { instanceId: instance.id, ...sent };
    } catch (error) {
      const code = error instanceof AppError ? error.code : 'internal';
      this.report({ instanceId: instance.id, outcome: sendOutcomeOf(error), ms: performance.now() - started, code });
      throw error;
    }
  }

  private report(attempt: SendAttempt): void {
    for (const observer of this.observers) observer(attempt);
  }

  /** The connected session, for callers that send several messages (the batch runner). */
  connected(instance: Instance): Promise<Session> {
    return this.sessions.connected(instance);
  }

  // ---- media of stored messages ----

  async mediaOf(instance: Instance, messageId: string): Promise<StoredMessage & { media: NonNullable<StoredMessage['media']> }> {
    const message = await this.stored(instance, messageId);
    if (!message.media) throw errors.noMedia(messageId);
    return message as StoredMessage & { media: NonNullable<StoredMessage['media']> };
  }

  async openMedia(key: string, messageId: string) {
    const stream = await this.mediaStore.stream(key);
    if (!stream) throw errors.mediaGone(messageId);
    return stream;
  }

  async readMedia(key: string, messageId: string): Promise<Buffer> {
    const data = await this.mediaStore.read(key);
    if (!data) throw errors.mediaGone(messageId);
    return data;
  }

  async mediaSettings(instance: Instance): Promise<{ mediaBase64InEvents: boolean }> {
    const current = await this.instances.get(instance.id);
    return { mediaBase64InEvents: current.settings[BASE64_SETTING] === true };
  }

  async setMediaSettings(instance: Instance, settings: { mediaBase64InEvents: boolean }): Promise<{ mediaBase64InEvents: boolean }> {
    const updated = await this.instances.updateSettings(instance.id, { settings: { [BASE64_SETTING]: settings.mediaBase64InEvents } });
    return { mediaBase64InEvents: updated.settings[BASE64_SETTING] === true };
  }

  /**
   * Recipient, quote (from the store), mentions and typing delay, shared by every chat message; a
   * promise only when there is a quote to read.
   */
  private addressed(instance: Instance, body: AddressedBody): Addressed | Promise<Addressed> {
    if (!body.quoted) return addressedAs(body, undefined);
    return this.stored(instance, body.quoted.id, 'quoted message').then((message) => addressedAs(body, quotedOf(message)));
  }
}

type AddressedBody = { number: string; quoted?: { id: string }; mentions?: string[]; delayMs?: number };

/** What the send methods send through (`sender`). */
type Sender = { send(message: OutgoingMessage): Promise<SendResult> };

function addressedAs(body: AddressedBody, quoted: QuotedMessage | undefined): Addressed {
  return {
    to: body.number,
    ...(quoted ? { quoted } : {}),
    ...(body.mentions && body.mentions.length > 0 ? { mentions: body.mentions } : {}),
    ...(body.delayMs ? { delayMs: body.delayMs } : {}),
  };
}

export function quotedOf(message: StoredMessage): QuotedMessage {
  return { key: message.key, ...(message.participant ? { participant: message.participant } : {}), message: message.message };
}
