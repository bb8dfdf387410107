/** Dead letters as the API sees them: listing and manual redelivery. */
import type { Clock } from '../clock.js';
import { errors } from '../errors.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { EventType } from '../network/port.js';
import type { DeadLetter, DeadLetterFilter, DeadLetterStore } from './dead-letters.js';
import type { DurableSink } from './sink.js';
import type { WebhookSink } from './sinks/webhook.js';

export function deadLetterView(letter: DeadLetter) {
  return {
    id: letter.id,
    instanceId: letter.instanceId,
    channel: letter.sink,
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

  /** Dead letters across instances (admin), filtered and paged. */
  async search(filter: DeadLetterFilter, offset: number, limit: number) {
    const { items, total } = await this.store.search(filter, offset, limit);
    return { items: items.map(deadLetterView), total, offset, limit };
  }

  /**
   * Resends up to `limit` dead letters matching the filter, oldest first, one after another (the
   * same single attempt as `retry`). Returns the counts and each one's outcome.
   */
  async retryMatching(filter: DeadLetterFilter, limit: number) {
    const ids = await this.store.idsMatching(filter, limit);
    const results = [];
    for (const id of ids) {
      try {
        results.push(await this.retry(id));
      } catch (error) {
        // Removed meanwhile (another retry or a purge): nothing left to send.
        results.push({ id, delivered: false, status: null, attempts: 0, error: error instanceof Error ? error.message : String(error) });
      }
    }
    const delivered = results.filter((r) => r.delivered).length;
    return { matched: ids.length, delivered, failed: ids.length - delivered, results };
  }

  async purgeMatching(filter: DeadLetterFilter) {
    return { purged: await this.store.purge(filter) };
  }

  countByInstance(): Promise<Record<string, number>> {
    return this.store.countByInstance();
  }

  countBySink(): Promise<Record<string, number>> {
    return this.store.countBySink();
  }
}
