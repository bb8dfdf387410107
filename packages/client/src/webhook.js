/**
 * Checks webhook deliveries as the gateway signs them: `X-Webhook-Signature` is the lowercase hex
 * HMAC-SHA256 of the exact body bytes, keyed with the instance's webhook secret. Verify the raw body
 * (before any JSON parsing and re-serialising), compare in constant time, answer 401 on a mismatch.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-webhook-signature';

export class WebhookSignatureError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}

/** The signature the gateway puts on `body` with `secret`. */
export function signWebhookBody(body, secret) {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** True when `signature` is the gateway's signature of `body` with `secret` (constant-time compare). */
export function verifyWebhookSignature(body, signature, secret) {
  if (typeof signature !== 'string' || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const expected = Buffer.from(signWebhookBody(body, secret), 'hex');
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

/** The checked body of a webhook request, parsed (one envelope, or an array of them when batched). */
function verifiedBody(body, headers, secret) {
  const raw = typeof headers?.get === 'function' ? headers.get(SIGNATURE_HEADER) : headers?.[SIGNATURE_HEADER];
  const signature = Array.isArray(raw) ? raw[0] : raw;
  if (!signature) throw new WebhookSignatureError('the request has no X-Webhook-Signature header');
  if (!verifyWebhookSignature(body, signature, secret)) throw new WebhookSignatureError('the X-Webhook-Signature does not match the body');
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  return JSON.parse(text);
}

/**
 * The event of a webhook request, once its signature is checked. `headers` may be a Headers object
 * or Node's IncomingHttpHeaders. Throws WebhookSignatureError when the signature is missing or wrong,
 * and a TypeError for a batched body (an instance with `webhookBatch`: use parseWebhookEvents).
 */
export function parseWebhook(body, headers, secret) {
  const parsed = verifiedBody(body, headers, secret);
  if (Array.isArray(parsed)) throw new TypeError('a batched webhook body (an array of events): use parseWebhookEvents');
  return parsed;
}

/**
 * The events of a webhook request, once its signature is checked: the envelopes of a batched body
 * (`webhookBatch` on the instance) in the order sent (ascending `seq`), or the one event of a plain body.
 */
export function parseWebhookEvents(body, headers, secret) {
  const parsed = verifiedBody(body, headers, secret);
  return Array.isArray(parsed) ? parsed : [parsed];
}
