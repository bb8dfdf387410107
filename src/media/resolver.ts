/**
 * Turns what a caller gave (`{ url }` or `{ base64 }`) into checked media: the bytes are fetched or
 * decoded within the kind's size limit, the MIME type is sniffed from the bytes (a caller's
 * `mimetype` is only a hint for formats without a signature, such as CSV or plain text), and the
 * type must suit the kind. Stickers are converted to WebP and link thumbnails to a small JPEG.
 */
import { createHash } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import type { MediaConfig } from '../config.js';
import { errors } from '../errors.js';
import type { MediaPayload, SendableMediaType } from '../network/port.js';
import type { MediaFetcher } from './fetch.js';
import { imageInfo, toJpegThumbnail, toStickerWebp } from './image.js';

export type MediaSource =
  | { url: string; mimetype?: string; filename?: string }
  | { base64: string; mimetype?: string; filename?: string }
  /** A file part of a multipart/form-data request, already read within the size limit. */
  | { upload: Buffer; mimetype?: string; filename?: string };

/** What a size limit applies to; each has a MEDIA_MAX_<KIND>_BYTES setting. */
export type SizeKind = keyof MediaConfig['maxBytes'];

export const IMAGE_TYPES = ['image/jpeg', 'image/png'];
export const VIDEO_TYPES = ['video/mp4', 'video/3gpp'];
export const AUDIO_TYPES = ['audio/ogg; codecs=opus', 'audio/ogg', 'audio/mpeg', 'audio/mp4', 'audio/aac', 'audio/amr'];
/** Voice notes play only as OGG/Opus. */
export const VOICE_NOTE_TYPE = 'audio/ogg; codecs=opus';
export const STICKER_INPUT_TYPES = ['image/webp', 'image/png', 'image/jpeg', 'image/gif'];

const KIND_WORDS: Record<SendableMediaType, string> = {
  image: 'JPEG or PNG',
  video: 'MP4 or 3GP',
  audio: 'OGG/Opus, OGG, MP3, M4A, AAC or AMR',
  document: 'any format',
};

/** "an image", "a video", "audio", "a document": the words of error messages. */
export function withArticle(kind: SendableMediaType): string {
  return kind === 'audio' ? 'audio' : kind === 'image' ? 'an image' : `a ${kind}`;
}

const ALIASES: Record<string, string> = { 'audio/x-m4a': 'audio/mp4', 'audio/x-aac': 'audio/aac', 'audio/aacp': 'audio/aac' };

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const DATA_URL = /^data:([^;,]*)(?:;[^,]*)?;base64,/;
const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/i;

/**
 * A media type someone else sent (a received message's `mimetype`) as it may be stored and served
 * back as a Content-Type header: `type/subtype` with printable parameters, or octet-stream.
 */
export function safeMimetype(value: string | undefined): string {
  if (!value || !/^[\x20-\x7e]{1,255}$/.test(value)) return 'application/octet-stream';
  const [base = ''] = value.split(';');
  return MIME.test(base.trim()) ? value : 'application/octet-stream';
}

interface Loaded {
  data: Buffer;
  /** Sniffed from the bytes; undefined when the format has no recognisable signature. */
  sniffed: string | undefined;
  hint: string | undefined;
  fileName: string | undefined;
}

function envName(kind: SizeKind): string {
  return `MEDIA_MAX_${kind.toUpperCase()}_BYTES`;
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export class MediaResolver {
  constructor(
    private readonly config: MediaConfig,
    private readonly fetcher: MediaFetcher,
  ) {}

  limit(kind: SizeKind): number {
    return this.config.maxBytes[kind];
  }

  /** An image, video, audio or document; `type` omitted is inferred from the bytes. */
  async media(
    source: MediaSource,
    field: string,
    type?: SendableMediaType,
    voiceNote = false,
  ): Promise<{ mediaType: SendableMediaType; media: MediaPayload }> {
    const largest = type ?? this.largestKind(['image', 'video', 'audio', 'document']);
    const loaded = await this.load(source, field, largest);
    const mediaType = type ?? inferType(loaded.sniffed);
    if (type === undefined) this.checkSize(loaded.data.length, mediaType, field);
    if (voiceNote && mediaType !== 'audio') throw errors.invalidMedia(`${field}: voiceNote applies to audio only`);
    switch (mediaType) {
      case 'image':
        return { mediaType, media: await this.image(loaded, field) };
      case 'video':
        return { mediaType, media: this.checked(loaded, field, VIDEO_TYPES, 'video') };
      case 'audio': {
        const media = this.checked(loaded, field, AUDIO_TYPES, 'audio');
        if (voiceNote && media.mimetype !== VOICE_NOTE_TYPE) {
          throw errors.unsupportedMedia(`${field} must be OGG/Opus for a voice note; the bytes are ${media.mimetype}`);
        }
        return { mediaType, media };
      }
      case 'document':
        return { mediaType, media: this.document(loaded) };
    }
  }

  /** An image or a video (carousel cards, button headers, status posts). */
  async visual(
    source: MediaSource,
    field: string,
    allowAudio = false,
  ): Promise<{ mediaType: 'image' | 'video' | 'audio'; media: MediaPayload }> {
    const kinds: SizeKind[] = allowAudio ? ['image', 'video', 'audio'] : ['image', 'video'];
    const loaded = await this.load(source, field, this.largestKind(kinds));
    const type = inferType(loaded.sniffed);
    if (type === 'document' || (type === 'audio' && !allowAudio)) {
      const what = allowAudio ? 'an image (JPEG, PNG), a video (MP4, 3GP) or audio' : 'an image (JPEG, PNG) or a video (MP4, 3GP)';
      throw errors.unsupportedMedia(`${field} must be ${what}; the bytes are ${loaded.sniffed ?? 'of an unknown type'}`);
    }
    this.checkSize(loaded.data.length, type, field);
    if (type === 'image') return { mediaType: type, media: await this.image(loaded, field) };
    return { mediaType: type, media: this.checked(loaded, field, type === 'video' ? VIDEO_TYPES : AUDIO_TYPES, type) };
  }

  /** WebP as given; PNG, JPEG and GIF converted to a 512x512 WebP. */
  async sticker(source: MediaSource, field: string): Promise<MediaPayload> {
    const loaded = await this.load(source, field, 'sticker');
    const type = loaded.sniffed;
    if (!type || !STICKER_INPUT_TYPES.includes(type)) {
      throw errors.unsupportedMedia(`${field} must be WebP, or PNG, JPEG or GIF to convert; the bytes are ${type ?? 'of an unknown type'}`);
    }
    const webp = type === 'image/webp' ? loaded.data : await toStickerWebp(loaded.data, field);
    const info = await imageInfo(webp, field);
    return { data: webp, mimetype: 'image/webp', sha256: sha256(webp), width: info.width, height: info.height, animated: info.pages > 1 };
  }

  /** A link-preview thumbnail: any still image, re-encoded as a small JPEG. */
  async thumbnail(source: MediaSource, field: string): Promise<MediaPayload> {
    const loaded = await this.load(source, field, 'image');
    if (!loaded.sniffed || !['image/jpeg', 'image/png', 'image/webp', 'image/gif'].includes(loaded.sniffed)) {
      throw errors.unsupportedMedia(
        `${field} must be a JPEG, PNG, WebP or GIF image; the bytes are ${loaded.sniffed ?? 'of an unknown type'}`,
      );
    }
    const jpeg = await toJpegThumbnail(loaded.data, field);
    const info = await imageInfo(jpeg, field);
    return { data: jpeg, mimetype: 'image/jpeg', sha256: sha256(jpeg), width: info.width, height: info.height };
  }

  private async image(loaded: Loaded, field: string): Promise<MediaPayload> {
    const media = this.checked(loaded, field, IMAGE_TYPES, 'image');
    const info = await imageInfo(media.data, field);
    return { ...media, width: info.width, height: info.height };
  }

  private checked(loaded: Loaded, field: string, allowed: string[], kind: SendableMediaType): MediaPayload {
    const type = loaded.sniffed;
    if (!type || !allowed.includes(type)) {
      const hint = type === 'image/webp' && kind === 'image' ? ' (send WebP with /send/sticker)' : '';
      throw errors.unsupportedMedia(
        `${field} must be ${KIND_WORDS[kind]} for ${withArticle(kind)}; the bytes are ${type ?? 'of an unknown type'}${hint}`,
      );
    }
    return this.payload(loaded, type);
  }

  private document(loaded: Loaded): MediaPayload {
    // Formats with no signature (CSV, TXT, JSON, ...) take the caller's hint, else stay generic.
    const mimetype = loaded.sniffed ?? (loaded.hint && MIME.test(loaded.hint) ? loaded.hint.toLowerCase() : 'application/octet-stream');
    return this.payload(loaded, mimetype);
  }

  private payload(loaded: Loaded, mimetype: string): MediaPayload {
    return { data: loaded.data, mimetype, sha256: sha256(loaded.data), ...(loaded.fileName ? { fileName: loaded.fileName } : {}) };
  }

  private largestKind(kinds: SizeKind[]): SizeKind {
    return kinds.reduce((a, b) => (this.limit(b) > this.limit(a) ? b : a));
  }

  private checkSize(size: number, kind: SizeKind, field: string): void {
    if (size > this.limit(kind)) {
      throw errors.mediaTooLarge(`${field} is ${size} bytes; the limit for ${kind} is ${this.limit(kind)} bytes (${envName(kind)})`);
    }
  }

  private async load(source: MediaSource, field: string, kind: SizeKind): Promise<Loaded> {
    const max = this.limit(kind);
    let data: Buffer;
    let hint = source.mimetype;
    if ('upload' in source) {
      data = source.upload;
      if (data.length > max)
        throw errors.mediaTooLarge(`${field} is ${data.length} bytes; the limit for ${kind} is ${max} bytes (${envName(kind)})`);
    } else if ('url' in source) {
      const fetched = await this.fetcher.fetch(source.url, max, field, envName(kind));
      data = fetched.data;
      hint ??= fetched.contentType?.split(';')[0]?.trim();
    } else {
      let text = source.base64;
      const dataUrl = DATA_URL.exec(text);
      if (dataUrl) {
        hint ??= dataUrl[1] || undefined;
        text = text.slice(dataUrl[0].length);
      }
      // Copies of a large text cost as much as the media: strip whitespace only when there is some.
      if (/\s/.test(text)) text = text.replace(/\s+/g, '');
      if (!BASE64.test(text) || text.length % 4 === 1) throw errors.invalidMedia(`${field}.base64 is not valid base64`);
      const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
      const size = Math.floor((text.length * 3) / 4) - padding;
      if (size > max) throw errors.mediaTooLarge(`${field} is ${size} bytes; the limit for ${kind} is ${max} bytes (${envName(kind)})`);
      data = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
      // The decoded bytes replace the text: drop the caller's reference so it can be collected now.
      (source as { base64: string }).base64 = '';
    }
    if (data.length === 0) throw errors.invalidMedia(`${field} is empty`);
    const detected = await fileTypeFromBuffer(data);
    const sniffed = detected ? (ALIASES[detected.mime] ?? detected.mime) : undefined;
    return { data, sniffed, hint, fileName: source.filename };
  }
}

function inferType(mimetype: string | undefined): SendableMediaType {
  if (mimetype && IMAGE_TYPES.includes(mimetype)) return 'image';
  if (mimetype && VIDEO_TYPES.includes(mimetype)) return 'video';
  if (mimetype && AUDIO_TYPES.includes(mimetype)) return 'audio';
  return 'document';
}
