/**
 * Files of multipart/form-data requests. The form is turned into the route's JSON body, where each
 * file fills a media object (`{ filename, mimetype }`); the bytes ride beside that object, keyed by
 * it, so JSON validation sees the same body shape as a JSON request and the bytes are never copied
 * into base64 text.
 */
const UPLOADS = new WeakMap<object, Buffer>();

/** Marks `media` (an object of the body) as filled by an uploaded file. */
export function attachUpload(media: object, data: Buffer): void {
  UPLOADS.set(media, data);
}

/** The uploaded bytes of `media`, once: the body no longer holds them afterwards. */
export function takeUpload(media: object): Buffer | undefined {
  const data = UPLOADS.get(media);
  UPLOADS.delete(media);
  return data;
}

/** An uploaded file in a body snapshot: serialised as its base64 text, encoded only when it is. */
class UploadAsBase64 {
  constructor(private readonly data: Buffer) {}
  toJSON(): string {
    return this.data.toString('base64');
  }
}

/**
 * A copy of a request body (JSON values, and media objects filled by uploads) that serialises to
 * what the body held when it arrived, each uploaded file as `base64`, even after the handler has
 * taken its media out (`takeUpload`, the base64 moved out of the body). It shares its strings and
 * bytes with the body, so keeping it costs no copy until it is serialised.
 */
export function snapshotBody(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snapshotBody);
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = snapshotBody(item);
  const upload = UPLOADS.get(value);
  if (upload !== undefined) copy.base64 = new UploadAsBase64(upload);
  return copy;
}
