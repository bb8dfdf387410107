import type { IncomingHttpHeaders } from 'node:http';
import type { WaygateEvent } from './generated/api.js';

/** The header that carries the signature (lowercase, as Node gives headers). */
export declare const SIGNATURE_HEADER: 'x-webhook-signature';

export declare class WebhookSignatureError extends Error {}

/** The signature the gateway puts on `body` with `secret`: lowercase hex HMAC-SHA256 of the exact bytes. */
export declare function signWebhookBody(body: string | Uint8Array, secret: string): string;

/** True when `signature` is the gateway's signature of `body` with `secret` (compared in constant time). */
export declare function verifyWebhookSignature(body: string | Uint8Array, signature: string | null | undefined, secret: string): boolean;

/**
 * The event of a webhook request once its signature is checked; throws WebhookSignatureError otherwise,
 * and a TypeError for a batched body (use parseWebhookEvents). Pass the raw body.
 */
export declare function parseWebhook(
  body: string | Uint8Array,
  headers: Headers | IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  secret: string,
): WaygateEvent;

/**
 * The events of a webhook request once its signature is checked: every envelope of a batched body
 * (`webhookBatch` on the instance), in the order sent (ascending `seq`), or the one event of a plain
 * body. Throws WebhookSignatureError when the signature is missing or wrong. Pass the raw body.
 */
export declare function parseWebhookEvents(
  body: string | Uint8Array,
  headers: Headers | IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  secret: string,
): WaygateEvent[];
