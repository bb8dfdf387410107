/**
 * Webhook sink: POSTs the exact envelope bytes to the instance's webhookUrl with
 * `X-Webhook-Signature` = lowercase hex HMAC-SHA256(body, instance's webhook secret).
 * Any answer other than 2xx, or none within the timeout, is a failed attempt.
 */
import { createHmac } from 'node:crypto';
import { request } from 'undici';
import type { Instance } from '../../instance-registry/service.js';
import type { OutboxEntry } from '../envelope.js';
import { DeliveryError, type DurableSink, type RetryPolicy } from '../sink.js';

export function signBody(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export interface WebhookOptions {
  timeoutMs: number;
  retry: RetryPolicy;
  userAgent: string;
}

export interface WebhookResult {
  ok: boolean;
  status: number | null;
  error?: string;
}

export class WebhookSink implements DurableSink {
  readonly name = 'webhook';
  readonly retry: RetryPolicy;

  constructor(private readonly options: WebhookOptions) {
    this.retry = options.retry;
  }

  wants(instance: Instance): boolean {
    return instance.webhookUrl !== null;
  }

  async deliver(entry: OutboxEntry, instance: Instance): Promise<void> {
    const result = await this.post(entry, instance);
    if (!result.ok) throw new DeliveryError(result.error ?? 'delivery failed', result.status);
  }

  /** One POST, no retry; used by the lanes and by the dead-letter retry route. */
  async post(entry: Pick<OutboxEntry, 'body' | 'eventId' | 'type'>, instance: Instance): Promise<WebhookResult> {
    if (!instance.webhookUrl) return { ok: false, status: null, error: 'instance has no webhookUrl' };
    return this.postSigned(instance.webhookUrl, instance.webhookSecret, entry);
  }

  /**
   * One signed POST of `body` to any URL (instance webhooks, alert notices): the same headers,
   * signature, timeout and answer handling for every webhook Waygate sends.
   */
  async postSigned(url: string, secret: string, entry: { body: string; eventId: string; type: string }): Promise<WebhookResult> {
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    try {
      // undici's request (not fetch): no WHATWG streams per call, keep-alive, and no redirect is followed.
      const response = await request(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': this.options.userAgent,
          'x-webhook-signature': signBody(entry.body, secret),
          'x-webhook-event': entry.type,
          'x-webhook-event-id': entry.eventId,
        },
        body: entry.body,
        signal,
      });
      // Drain the body so the connection can be reused.
      await response.body.dump().catch(() => undefined);
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { ok: true, status };
      return { ok: false, status, error: `receiver answered ${status}` };
    } catch (error) {
      const reason = signal.aborted
        ? `no answer within ${this.options.timeoutMs} ms`
        : `could not reach receiver: ${describeRequestError(error)}`;
      return { ok: false, status: null, error: reason };
    }
  }
}

function describeRequestError(error: unknown): string {
  if (error instanceof Error) {
    const { code, cause } = error as { code?: string; cause?: { code?: string; message?: string } };
    return code ?? cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}
