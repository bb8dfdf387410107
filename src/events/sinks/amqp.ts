/**
 * RabbitMQ channel (QUEUE_BROKER_URL). A durable topic exchange `<prefix>.events`; every event is
 * published with routing key `<instanceId>.<EVENT>` as a persistent message, and the lane waits for
 * the broker's publisher confirm before the event leaves the outbox. The gateway declares a durable
 * global queue `<prefix>.global` (bound `#`) and, before an instance's first event on a connection,
 * that instance's durable queue `<prefix>.instance.<instanceId>` (bound `<instanceId>.*`).
 *
 * Both kinds of queue carry limits as queue arguments (QUEUE_BROKER_MESSAGE_TTL_SECONDS and the
 * QUEUE_BROKER_{GLOBAL,INSTANCE}_MAX_{LENGTH,BYTES} settings: x-message-ttl, x-max-length,
 * x-max-length-bytes with x-overflow drop-head), so a queue nobody reads cannot grow without end.
 * RabbitMQ refuses to re-declare a queue with other arguments (PRECONDITION_FAILED, which closes the
 * channel): the declaration runs on a channel of its own, and a queue that already exists with other
 * arguments gets one warning naming it and is used as it is (bound, published to), never re-tried
 * in a loop.
 *
 * Instance ids, not names, route: names may contain dots, which would split routing-key words and
 * let one instance's binding match another's events. rabbitmq-client reconnects with exponential
 * backoff; the exchange and the queues are declared again after every new connection, before the
 * first event that goes to them.
 */
import { Connection, type Publisher } from 'rabbitmq-client';
import type { QueueLimits } from '../../config.js';
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
  /** Queue limits (config.channels.queueLimits); 0 turns a limit off. */
  limits: QueueLimits;
}

type QueueArguments = Record<string, number | string>;

/**
 * The arguments the gateway declares a queue with: only the limits that are on, and x-overflow
 * drop-head (the oldest message goes) when a length limit is on. No limit on gives no arguments.
 */
export function amqpQueueArguments(limits: QueueLimits, kind: 'global' | 'instance'): QueueArguments {
  const { maxLength, maxBytes } = limits[kind];
  const args: QueueArguments = {};
  if (limits.messageTtlSeconds > 0) args['x-message-ttl'] = limits.messageTtlSeconds * 1000;
  if (maxLength > 0) args['x-max-length'] = maxLength;
  if (maxBytes > 0) args['x-max-length-bytes'] = maxBytes;
  if (maxLength > 0 || maxBytes > 0) args['x-overflow'] = 'drop-head';
  return args;
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
  /** Queues (global and per instance) declared on the current connection (cleared on reconnect). */
  private readonly declared = new Map<string, Promise<void>>();
  /** Queues found with other arguments than ours: warned about once per process. */
  private readonly mismatchWarned = new Set<string>();
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
      // The queues are declared by declareQueue: a refused declaration must not fail the publisher's setup.
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
      await withDeadline(
        Promise.all([
          this.declareQueue(this.names.globalQueue, '#', amqpQueueArguments(this.options.limits, 'global')),
          this.declareQueue(this.names.instanceQueue(instance.id), `${instance.id}.*`, amqpQueueArguments(this.options.limits, 'instance')),
        ]),
        publishTimeoutMs,
        'amqp queue declaration',
      );
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

  /** Declares a queue and its binding once per connection; failures are retried next time. */
  private declareQueue(queue: string, routingKey: string, args: QueueArguments): Promise<void> {
    let declared = this.declared.get(queue);
    if (!declared) {
      declared = this.runDeclaration(queue, routingKey, args);
      this.declared.set(queue, declared);
      declared.catch(() => {
        if (this.declared.get(queue) === declared) this.declared.delete(queue);
      });
    }
    return declared;
  }

  private async runDeclaration(queue: string, routingKey: string, args: QueueArguments): Promise<void> {
    // A channel of its own: a refused declaration closes it, not the channel other declarations share.
    const channel = await this.connection.acquire();
    try {
      await channel.exchangeDeclare({ exchange: this.names.exchange, type: 'topic', durable: true });
      try {
        await channel.queueDeclare({ queue, durable: true, arguments: args });
      } catch (error) {
        if (!isPreconditionFailed(error)) throw error;
        // The queue exists with other arguments (declared by an earlier setting, a consumer or an
        // operator). It still receives events; its limits are whatever it was declared with.
        this.warnMismatch(queue, args, error);
      }
    } finally {
      if (channel.active) await channel.close().catch(() => undefined);
    }
    await this.connection.queueBind({ exchange: this.names.exchange, queue, routingKey });
  }

  private warnMismatch(queue: string, args: QueueArguments, error: unknown): void {
    const detail = { channel: this.name, queue, wanted: args, reason: describeError(error) };
    if (this.mismatchWarned.has(queue)) {
      this.options.log.debug(detail, 'amqp queue exists with other arguments; used as it is');
      return;
    }
    this.mismatchWarned.add(queue);
    this.options.log.warn(
      detail,
      `amqp queue ${queue} exists with other arguments than the configured limits; events still go to it with its current ` +
        'limits. To apply the configured ones, delete the queue (rabbitmqctl delete_queue) so the gateway declares it again, ' +
        'or set a policy (rabbitmqctl set_policy); see docs/channels.md, "Limits"',
    );
  }
}

/** RabbitMQ's answer to a declaration that does not match the queue as it exists (channel error 406). */
function isPreconditionFailed(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'PRECONDITION_FAILED';
}
