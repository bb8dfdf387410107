/** @waygate/client: the typed REST client, typed events, webhook signature checks and the WebSocket event stream. */
export { WaygateClient, WaygateError } from './client.js';
export { EventStream, EventStreamError, FINAL_CLOSE_CODES } from './stream.js';
export {
  parseWebhook,
  parseWebhookEvents,
  signWebhookBody,
  verifyWebhookSignature,
  SIGNATURE_HEADER,
  WebhookSignatureError,
} from './webhook.js';
export { OPERATIONS, EVENT_TYPES } from './generated/operations.js';
