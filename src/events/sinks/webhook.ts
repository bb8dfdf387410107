/**
 * Webhook sink: POSTs the exact envelope bytes to the instance's webhookUrl with
 * `X-Webhook-Signature` = lowercase hex HMAC-SHA256(body, instance's webhook secret).
 * Any answer other than 2xx, or none within the timeout, is a failed attempt.
 *
 * Targets: a URL the admin key set (at /instance/create) may reach any address, as receivers often
 * run on the same host. Any other URL goes only to public addresses (src/media/address.ts) unless
 * WEBHOOK_ALLOW_PRIVATE_URLS: an IP literal is checked before connecting, a host name at connect
 * time against the addresses it resolves to (so DNS rebinding cannot reach a private address).
 */
import { createHmac } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { EventEmitter } from 'node:events';
import { Agent, type Dispatcher } from 'undici';
import type { Instance } from '../../instance-registry/service.js';
import type { OutboxEntry } from '../envelope.js';
import { ipLiteral, isPublicAddress, PrivateAddressError, publicOnlyLookup, systemResolve } from '../../media/address.js';
import { DeliveryError, type DeliveryRunResult, type DurableSink, type RetryPolicy } from '../sink.js';
import { WebhookDeliveryThread } from './webhook-delivery-thread.js';

/** Keep-alive pools: a lane's POSTs reuse one connection instead of a handshake each. */
const KEEP_ALIVE = { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 };

export function signBody(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export interface WebhookOptions {
  timeoutMs: number;
  retry: RetryPolicy;
  userAgent: string;
  /** WEBHOOK_ALLOW_PRIVATE_URLS: every webhook may reach private addresses. */
  allowPrivate?: boolean;
  /**
   * WEBHOOK_DELIVERY_THREAD: runs of fresh events are POSTed by a worker thread (deliverRun). Not
   * with the seams below, which cannot cross to a thread.
   */
  deliveryThread?: boolean;
  /** Seams for tests: which addresses count as public, and how host names resolve. */
  isPublic?: (address: string) => boolean;
  resolve?: (hostname: string) => Promise<LookupAddress[]>;
}

export interface WebhookResult {
  ok: boolean;
  status: number | null;
  error?: string;
}

export class WebhookSink implements DurableSink {
  readonly name = 'webhook';
  readonly retry: RetryPolicy;

  /** Connections of URLs that must reach public addresses: every resolved address is checked. */
  private readonly guarded: Dispatcher;
  /** Connections of the other URLs. Both pools keep connections alive between a lane's POSTs. */
  private readonly open: Dispatcher;
  private readonly isPublic: (address: string) => boolean;
  private readonly thread: WebhookDeliveryThread | undefined;
  /** Present with the delivery thread (DurableSink.deliverRun). */
  readonly deliverRun?: (entries: OutboxEntry[], instance: Instance) => Promise<DeliveryRunResult>;

  constructor(private readonly options: WebhookOptions) {
    this.retry = options.retry;
    this.isPublic = options.isPublic ?? isPublicAddress;
    this.guarded = new Agent({ ...KEEP_ALIVE, connect: { lookup: publicOnlyLookup(this.isPublic, options.resolve ?? systemResolve) } });
    this.open = new Agent(KEEP_ALIVE);
    if (options.deliveryThread && !options.isPublic && !options.resolve) {
      const thread = new WebhookDeliveryThread({
        timeoutMs: options.timeoutMs,
        userAgent: options.userAgent,
        allowPrivate: options.allowPrivate,
      });
      this.thread = thread;
      this.deliverRun = (entries, instance) => this.deliverOnThread(thread, entries, instance);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.guarded.close(), this.open.close(), this.thread?.close()]);
  }

  /** One POST per event on the delivery thread, in order, until one fails. */
  private async deliverOnThread(thread: WebhookDeliveryThread, entries: OutboxEntry[], instance: Instance): Promise<DeliveryRunResult> {
    if (!instance.webhookUrl) throw new DeliveryError('instance has no webhookUrl');
    const outcome = await thread.deliver({
      url: instance.webhookUrl,
      secret: instance.webhookSecret,
      guarded: !(this.options.allowPrivate === true || instance.webhookAdminSet),
      entries: entries.map(({ body, eventId, type }) => ({ body, eventId, type })),
    });
    return {
      delivered: outcome.delivered,
      seconds: outcome.seconds,
      ...(outcome.failure ? { failure: new DeliveryError(outcome.failure.error, outcome.failure.status) } : {}),
    };
  }

  /** Why a guarded URL may not be reached (an IP literal, before connecting), or undefined. */
  private refusal(url: URL): string | undefined {
    const literal = ipLiteral(url.hostname);
    if (literal && !this.isPublic(literal)) return `${url.hostname} is the non-public address ${literal}`;
    return undefined;
  }

  wants(instance: Instance): boolean {
    return instance.webhookUrl !== null;
  }

  async deliver(entry: OutboxEntry, instance: Instance): Promise<void> {
    const result = await this.post(entry, instance);
    if (!result.ok) throw new DeliveryError(result.error ?? 'delivery failed', result.status);
  }

  batching(instance: Instance): { maxEvents: number; maxWaitMs: number } | undefined {
    return instance.webhookBatch ?? undefined;
  }

  /** One POST of a JSON array of the envelopes (their stored bytes, joined), signed as one body. */
  async deliverBatch(entries: OutboxEntry[], instance: Instance): Promise<void> {
    if (!instance.webhookUrl) throw new DeliveryError('instance has no webhookUrl');
    const guarded = !(this.options.allowPrivate === true || instance.webhookAdminSet);
    const body = `[${entries.map((entry) => entry.body).join(',')}]`;
    const result = await this.postSigned(instance.webhookUrl, instance.webhookSecret, { body, batch: entries.length }, guarded);
    if (!result.ok) throw new DeliveryError(result.error ?? 'delivery failed', result.status);
  }

  /** One POST, no retry; used by the lanes and by the dead-letter retry route. */
  async post(entry: Pick<OutboxEntry, 'body' | 'eventId' | 'type'>, instance: Instance): Promise<WebhookResult> {
    if (!instance.webhookUrl) return { ok: false, status: null, error: 'instance has no webhookUrl' };
    // Only a URL the admin key set (or WEBHOOK_ALLOW_PRIVATE_URLS) may reach private receivers.
    const guarded = !(this.options.allowPrivate === true || instance.webhookAdminSet);
    return this.postSigned(instance.webhookUrl, instance.webhookSecret, entry, guarded);
  }

  /**
   * One signed POST of `body` to any URL (instance webhooks, alert notices): the same headers,
   * signature, timeout and answer handling for every webhook Waygate sends. `guarded`: the target
   * must be a public address (an IP literal is checked before connecting, a host name against every
   * address it resolves to at connect time, so DNS rebinding cannot reach a private address).
   */
  async postSigned(
    url: string,
    secret: string,
    entry: { body: string; eventId: string; type: string } | { body: string; batch: number },
    guarded = false,
  ): Promise<WebhookResult> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { ok: false, status: null, error: 'webhook URL is not a valid URL' };
    }
    const refused = guarded ? this.refusal(target) : undefined;
    if (refused)
      return { ok: false, status: null, error: `refused: ${refused} (private targets need WEBHOOK_ALLOW_PRIVATE_URLS or the admin key)` };
    const deadline = new AnswerDeadline(this.options.timeoutMs);
    try {
      // undici's request (not fetch): no WHATWG streams per call, keep-alive, and no redirect is
      // followed. The pool's own request with origin and path: undici's request(url) spreads its
      // options into a new object, a new hidden class on each call on Node 20.
      const response = await (guarded ? this.guarded : this.open).request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': this.options.userAgent,
          'x-webhook-signature': signBody(entry.body, secret),
          ...('batch' in entry
            ? { 'x-webhook-batch': String(entry.batch) }
            : { 'x-webhook-event': entry.type, 'x-webhook-event-id': entry.eventId }),
        },
        body: entry.body,
        signal: deadline.signal,
      });
      // Drain the body so the connection can be reused.
      await response.body.dump().catch(() => undefined);
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { ok: true, status };
      return { ok: false, status, error: `receiver answered ${status}` };
    } catch (error) {
      const privateTarget = findPrivateAddress(error);
      if (privateTarget) {
        return {
          ok: false,
          status: null,
          error: `refused: ${privateTarget.message} (private targets need WEBHOOK_ALLOW_PRIVATE_URLS or the admin key)`,
        };
      }
      const reason = deadline.expired
        ? `no answer within ${this.options.timeoutMs} ms`
        : `could not reach receiver: ${describeRequestError(error)}`;
      return { ok: false, status: null, error: reason };
    } finally {
      deadline.clear();
    }
  }
}

/**
 * Aborts one POST (connecting, the answer and its body) after `ms`; cleared when the POST is over.
 * An EventEmitter, which undici accepts as a signal: on Node 20 an AbortSignal costs 4-8 µs to make
 * (AbortSignal.timeout's timer also stayed for the whole timeout after every answered POST).
 */
class AnswerDeadline {
  readonly signal = new EventEmitter();
  expired = false;
  private readonly timer: NodeJS.Timeout;

  constructor(ms: number) {
    this.timer = setTimeout(() => {
      this.expired = true;
      this.signal.emit('abort');
    }, ms);
    this.timer.unref();
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

function findPrivateAddress(error: unknown): PrivateAddressError | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth += 1) {
    if (current instanceof PrivateAddressError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function describeRequestError(error: unknown): string {
  if (error instanceof Error) {
    const { code, cause } = error as { code?: string; cause?: { code?: string; message?: string } };
    return code ?? cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}
