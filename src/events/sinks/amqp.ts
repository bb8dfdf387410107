/**
 * RabbitMQ channel (QUEUE_BROKER_URL). A durable topic exchange `<prefix>.events`; every event is
 * published with routing key `<instanceId>.<EVENT>` as a persistent message, and the lane waits for
 * the broker's publisher confirm before the event leaves the outbox. The gateway declares a durable
 * global queue `<prefix>.global` (bound `#`) and, before an instance's first event on a connection,
 * that instance's durable queue `<prefix>.instance.<instanceId>` (bound `<instanceId>.*`).
 *
 * Instance ids, not names, route: names may contain dots, which would split routing-key words and
 * let one instance's binding match another's events. rabbitmq-client reconnects with exponential
 * backoff and re-declares the exchange and global queue on every new connection.
 */
import { Connection, type Publisher } from 'rabbitmq-client';
import type { Instance } from '../../instance-registry/service.js';
import type { OutboxEntry } from '../envelope.js';
import { DeliveryError, type DurableSink, type RetryPolicy } from '../sink.js';
import { describeError, LinkState, withDeadline, type BrokerSinkOptions, type ChannelHealth } from './broker.js';

export interface AmqpSinkOptions extends BrokerSinkOptions {
  url: string;
  /** QUEUE_BROKER_PREFIX. */
  prefix: string;
  /** Shown in the broker's connection list (management UI, rabbitmqctl). */
  connectionName: string;
  /** How long close() waits for outstanding confirms and the connection's end (default 5000 ms). */
  closeTimeoutMs?: number;
}

/** Exchange and queue names of a prefix (docs/channels.md). */
export function amqpNames(prefix: string) {
  return {
    exchange: `${prefix}.events`,
    globalQueue: `${prefix}.global`,
    instanceQueue: (instanceId: string) => `${prefix}.instance.${instanceId}`,
    routingKey: (instanceId: string, event: string) => `${instanceId}.${event}`,
  };
}

export class AmqpSink implements DurableSink {
  readonly name = 'amqp';
  readonly retry: RetryPolicy;
  private readonly names: ReturnType<typeof amqpNames>;
  private readonly connection: Connection;
  private readonly publisher: Publisher;
  private readonly state: LinkState;
  /** Per-instance queues declared on the current connection (cleared on reconnect). */
  private readonly declared = new Map<string, Promise<void>>();
  private closing: Promise<void> | undefined;

  constructor(private readonly options: AmqpSinkOptions) {
    this.retry = options.retry;
    this.names = amqpNames(options.prefix);
    this.state = new LinkState(this.name, options.log);
    this.connection = new Connection({
      url: options.url,
      connectionName: options.connectionName,
      // Reconnect backoff from CHANNEL_RETRY_BASE_MS / CHANNEL_RETRY_MAX_MS, as the other channels.
      retryLow: options.retry.baseDelayMs,
      retryHigh: options.retry.maxDelayMs,
      connectionTimeout: options.publishTimeoutMs,
      // A publish while disconnected waits this long for the connection, then fails the attempt.
      acquireTimeout: options.publishTimeoutMs,
      heartbeat: 30,
    });
    this.connection.on('connection', () => {
      this.declared.clear();
      this.state.connected(`exchange ${this.names.exchange}`);
    });
    this.connection.on('error', (error: unknown) => {
      if (this.closing) return;
      this.state.down(describeError(error));
    });
    this.publisher = this.connection.createPublisher({
      confirm: true,
      // The outbox lane retries; a second retry loop here would only reorder the timing.
      maxAttempts: 1,
      exchanges: [{ exchange: this.names.exchange, type: 'topic', durable: true }],
      queues: [{ queue: this.names.globalQueue, durable: true }],
      queueBindings: [{ exchange: this.names.exchange, queue: this.names.globalQueue, routingKey: '#' }],
    });
  }

  wants(_instance: Instance): boolean {
    return true;
  }

  async deliver(entry: OutboxEntry, instance: Instance): Promise<void> {
    if (this.closing) throw new DeliveryError('amqp channel is closing');
    const { publishTimeoutMs } = this.options;
    await this.state.whenUp(publishTimeoutMs);
    if (this.closing) throw new DeliveryError('amqp channel is closing');
    try {
      await withDeadline(this.declareInstanceQueue(instance.id), publishTimeoutMs, 'amqp queue declaration');
      await withDeadline(
        this.publisher.send(
          {
            exchange: this.names.exchange,
            routingKey: this.names.routingKey(entry.instanceId, entry.type),
            durable: true,
            contentType: 'application/json',
            messageId: entry.eventId,
            type: entry.type,
            timestamp: Math.floor(entry.createdAt / 1000),
            appId: 'waygate',
            headers: {
              'x-event-id': entry.eventId,
              'x-event': entry.type,
              'x-instance-id': entry.instanceId,
              'x-instance-name': entry.instanceName,
            },
          },
          Buffer.from(entry.body, 'utf8'),
        ),
        publishTimeoutMs,
        'amqp publish',
      );
    } catch (error) {
      if (error instanceof DeliveryError) throw error;
      throw new DeliveryError(`amqp publish failed: ${describeError(error)}`);
    }
  }

  health(): ChannelHealth {
    // The library's own flag is the truth (it also covers a broker that blocked publishers);
    // LinkState carries the detail: the exchange when connected, the last error when not.
    return { ...this.state.health(), up: this.connection.ready };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.state.releaseWaiting();
      // Waits for outstanding confirms, then ends the connection; a broker that is unreachable
      // leaves nothing to wait for.
      // Both steps have a time limit: a broker that stops confirming must not hold the shutdown.
      const limit = this.options.closeTimeoutMs ?? 5_000;
      const started = Date.now();
      await withDeadline(this.publisher.close(), limit, 'amqp publisher close').catch(() => undefined);
      const left = Math.max(1, limit - (Date.now() - started));
      await withDeadline(this.connection.close(), left, 'amqp close').catch(() => this.connection.unsafeDestroy());
    })();
    return this.closing;
  }

  /** Declares the instance's queue and binding once per connection; failures are retried next time. */
  private declareInstanceQueue(instanceId: string): Promise<void> {
    let declared = this.declared.get(instanceId);
    if (!declared) {
      const queue = this.names.instanceQueue(instanceId);
      declared = (async () => {
        await this.connection.exchangeDeclare({ exchange: this.names.exchange, type: 'topic', durable: true });
        await this.connection.queueDeclare({ queue, durable: true });
        await this.connection.queueBind({ exchange: this.names.exchange, queue, routingKey: `${instanceId}.*` });
      })();
      this.declared.set(instanceId, declared);
      declared.catch(() => {
        if (this.declared.get(instanceId) === declared) this.declared.delete(instanceId);
      });
    }
    return declared;
  }
}
