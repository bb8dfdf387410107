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
