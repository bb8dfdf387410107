/** Dead letters as the API sees them: listing and manual redelivery. */
import type { Clock } from '../clock.js';
import { errors } from '../errors.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { EventType } from '../network/port.js';
import type { DeadLetter, DeadLetterStore } from '../events/dead-letters.js';
import type { DurableSink } from '../events/sink.js';
import type { WebhookSink } from '../events/sinks/webhook.js';

export function deadLetterView(letter: DeadLetter) {
  return {
    id: letter.id,
    eventId: letter.eventId,
    event: letter.event,
    attempts: letter.attempts,
    lastStatus: letter.lastStatus,
    lastError: letter.lastError,
    firstAttemptAt: new Date(letter.firstAttemptAt).toISOString(),
    lastAttemptAt: new Date(letter.lastAttemptAt).toISOString(),
    createdAt: new Date(letter.createdAt).toISOString(),
    payload: JSON.parse(letter.body) as unknown,
  };
}

export class DeadLetterService {
  constructor(
    private readonly store: DeadLetterStore,
    private readonly instances: InstanceService,
    private readonly webhook: WebhookSink,
    private readonly clock: Clock,
    /** The durable sink that buried a letter, when it is not the instance webhook (see DurableSink.redeliver). */
    private readonly sinkNamed: (name: string) => DurableSink | undefined = () => undefined,
  ) {}

  async list(instanceId: string, offset: number, limit: number) {
    await this.instances.get(instanceId);
    const { items, total } = await this.store.list(instanceId, offset, limit);
    return { items: items.map(deadLetterView), total, offset, limit };
  }

  /**
   * Sends a dead letter once more to the instance's current webhook URL (or, for a sink with its
   * own target such as a failover group's webhook, through that sink). Delivered: the dead letter
   * is removed. Failed: it stays, with its attempt count and last error updated.
   */
  async retry(id: string) {
    const letter = await this.store.get(id);
    if (!letter) throw errors.notFound('dead letter');
    const instance = await this.instances.get(letter.instanceId);
    const entry = { body: letter.body, eventId: letter.eventId, type: letter.event as EventType };
    const sink = letter.sink === this.webhook.name ? undefined : this.sinkNamed(letter.sink);
    const result = sink?.redeliver ? await sink.redeliver(entry, instance) : await this.webhook.post(entry, instance);
    const attempts = letter.attempts + 1;
    if (result.ok) {
      await this.store.remove(id);
      return { id, delivered: true, status: result.status, attempts };
    }
    const error = result.error ?? 'delivery failed';
    await this.store.recordRetryFailure(id, attempts, this.clock.now(), result.status, error);
    return { id, delivered: false, status: result.status, attempts, error };
  }
}
