/** Pictures in request bodies: base64 or a data: URL, JPEG or PNG, decoded for the network port. */
import { Type } from 'typebox';
import { errors } from '../errors.js';
import type { ImageInput } from '../network/port.js';

/** About 700 KB of image once decoded; the body limit (BODY_LIMIT_BYTES) applies as well. */
export const MAX_IMAGE_CHARS = 1_000_000;

export const ImageField = Type.String({
  minLength: 16,
  maxLength: MAX_IMAGE_CHARS,
  description: 'A JPEG or PNG image, base64-encoded or as a `data:image/...;base64,` URL (up to about 700 KB).',
  // A real PNG (one green pixel): small enough for the document, accepted as it is.
  examples: ['data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mNQvZwGAAJ/AV9pIfneAAAAAElFTkSuQmCC'],
});

export function decodeImage(input: string): ImageInput {
  const comma = input.startsWith('data:') ? input.indexOf(',') : -1;
  if (input.startsWith('data:') && (comma < 0 || !input.slice(0, comma).endsWith(';base64'))) {
    throw errors.badRequest('image must be base64 or a base64 data: URL');
  }
  const base64 = (comma >= 0 ? input.slice(comma + 1) : input).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(base64)) throw errors.badRequest('image is not valid base64');
  const data = Buffer.from(base64, 'base64');
  // The content decides the type, whatever the data: URL says.
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return { data, mimetype: 'image/jpeg' };
  if (data.length >= 8 && data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    return { data, mimetype: 'image/png' };
  }
  throw errors.badRequest('image must be a JPEG or PNG picture');
}
