/** The WhatsApp -> Chatwoot road: a durable sink, so events wait in the outbox (in order) while Chatwoot is away. */
import { DeliveryError, type DurableSink, type RetryPolicy } from '../../events/sink.js';
import type { EventEnvelope, OutboxEntry } from '../../events/envelope.js';
import type { Instance } from '../../instance-registry/service.js';
import { ChatwootApiError } from './client.js';
import type { ChatwootService } from './service.js';

export class ChatwootSink implements DurableSink {
  readonly name = 'chatwoot';

  constructor(
    private readonly service: ChatwootService,
    /** maxAttempts null: retried until Chatwoot is back (a token fixed, a server restarted); nothing is dropped. */
    readonly retry: RetryPolicy,
  ) {}

  wants(instance: Instance): boolean {
    return this.service.configured(instance.id);
  }

  async deliver(entry: OutboxEntry): Promise<void> {
    if (entry.type !== 'MESSAGE' && entry.type !== 'SEND_MESSAGE' && entry.type !== 'READ_RECEIPT') return;
    try {
      await this.service.deliver(JSON.parse(entry.body) as EventEnvelope);
    } catch (error) {
      if (error instanceof ChatwootApiError) throw new DeliveryError(error.message, error.status);
      throw new DeliveryError(error instanceof Error ? error.message : String(error));
    }
  }

  health(): { up: boolean; detail?: string } {
    const failing = this.service.failing();
    return failing === 0 ? { up: true } : { up: false, detail: `${failing} instance(s) cannot reach Chatwoot` };
  }
}
