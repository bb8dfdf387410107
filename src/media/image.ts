/**
 * Image work done with sharp (prebuilt libvips from the npm registry, no download at install).
 * Loaded at the first image job: a gateway that never converts an image does not carry libvips.
 */
import type { Sharp, SharpOptions } from 'sharp';
import { errors } from '../errors.js';

let loading: Promise<(input: Buffer, options?: SharpOptions) => Sharp> | undefined;
function sharp(input: Buffer, options?: SharpOptions): Promise<Sharp> {
  loading ??= import('sharp').then((module) => module.default);
  return loading.then((create) => create(input, options));
}

/** WhatsApp stickers are 512x512 WebP. */
export const STICKER_SIZE = 512;
/** Link-preview thumbnails: a small JPEG, at most this many pixels on the long side. */
export const THUMBNAIL_SIZE = 320;

export interface ImageInfo {
  width: number;
  height: number;
  pages: number;
}

export async function imageInfo(data: Buffer, field: string): Promise<ImageInfo> {
  try {
    const meta = await (await sharp(data, { animated: true })).metadata();
    const pages = meta.pages ?? 1;
    // For animated images sharp reports the height of all frames stacked.
    const height = meta.pageHeight ?? (meta.height !== undefined ? meta.height / pages : undefined);
    if (!meta.width || !height) throw new Error('no dimensions');
    return { width: meta.width, height: Math.round(height), pages };
  } catch {
    throw errors.unsupportedMedia(`${field} could not be decoded as an image`);
  }
}

/** Any still or animated image as a 512x512 WebP sticker (transparent padding keeps the aspect ratio). */
export async function toStickerWebp(data: Buffer, field: string): Promise<Buffer> {
  try {
    return await (
      await sharp(data, { animated: true })
    )
      .resize(STICKER_SIZE, STICKER_SIZE, { fit: 'contain', background: { r: 0, g: 0, b: 0, alpha: 0 } })
      .webp({ quality: 80 })
      .toBuffer();
  } catch {
    throw errors.unsupportedMedia(`${field} could not be converted to a WebP sticker`);
  }
}

export async function toJpegThumbnail(data: Buffer, field: string): Promise<Buffer> {
  try {
    return await (
      await sharp(data)
    )
      .resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' })
      .jpeg({ quality: 70 })
      .toBuffer();
  } catch {
    throw errors.unsupportedMedia(`${field} could not be decoded as an image`);
  }
}
