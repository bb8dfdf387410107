export { WaygateClient, WaygateError, type WaygateClientOptions } from './client.js';
export {
  EventStream,
  EventStreamError,
  FINAL_CLOSE_CODES,
  type EventStreamEvents,
  type EventStreamOptions,
  type ReconnectInfo,
} from './stream.js';
export {
  parseWebhook,
  parseWebhookEvents,
  signWebhookBody,
  verifyWebhookSignature,
  SIGNATURE_HEADER,
  WebhookSignatureError,
} from './webhook.js';
export type * from './generated/api.js';

export { OPERATIONS, EVENT_TYPES } from './generated/operations.js';
