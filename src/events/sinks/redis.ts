/**
 * Redis channel (KV_STORE_URL with KV_STORE_GLOBAL_EVENTS=true). Each event, in one MULTI/EXEC:
 *   PUBLISH <prefix>events:<instanceId> <envelope>   per-instance pub/sub channel
 *   PUBLISH <prefix>events <envelope>                global pub/sub channel
 *   XADD <prefix>events:stream MAXLEN ~ N * eventId .. event .. instanceId .. body <envelope>
 * The event leaves the outbox once Redis has answered EXEC. Pub/sub reaches only the subscribers
 * connected at that moment (Redis keeps nothing for them), so the capped stream is what a consumer
 * reads to get every event across its own or Redis's restarts (XREAD from the last id it saw).
 *
 * The same Redis also carries live events between gateway processes (relayTransport()).
 */
import { Redis } from 'ioredis';
import { backoffDelay } from '../../retry.js';
import type { Instance } from '../../instance-registry/service.js';
import type { OutboxEntry } from '../envelope.js';
import { DeliveryError, type DurableSink, type RetryPolicy } from '../sink.js';
import { describeError, LinkState, withDeadline, type BrokerSinkOptions, type ChannelHealth } from './broker.js';
import type { Topic } from '../../topic.js';

export interface RedisSinkOptions extends BrokerSinkOptions {
  url: string;
  /** KV_STORE_PREFIX, e.g. `waygate:`. */
  prefix: string;
  /** KV_STORE_STREAM_MAXLEN: approximate length cap of the stream; 0 writes no stream. */
  streamMaxLen: number;
}

/** Channel and key names of a prefix (docs/channels.md). */
export function redisNames(prefix: string) {
  return {
    instanceChannel: (instanceId: string) => `${prefix}events:${instanceId}`,
    globalChannel: `${prefix}events`,
    stream: `${prefix}events:stream`,
    relayChannel: `${prefix}relay`,
  };
}

/** Reconnect delay of both connections: doubling from 100 ms, at most 5 s. */
function reconnectDelay(times: number): number {
  return backoffDelay({ baseMs: 100, maxMs: 5_000 }, times);
}

export class RedisSink implements DurableSink {
  readonly name = 'redis';
  readonly retry: RetryPolicy;
  readonly names: ReturnType<typeof redisNames>;
  private readonly client: Redis;
  private subscriber: Redis | undefined;
  private readonly state: LinkState;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: RedisSinkOptions) {
    this.retry = options.retry;
    this.names = redisNames(options.prefix);
    this.state = new LinkState(this.name, options.log);
    this.client = new Redis(options.url, {
      connectionName: 'waygate-events',
      // Fail at once while disconnected: the lane backs off and retries, instead of piling
      // commands up in memory.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // No commandTimeout: deliver() bounds its own wait, and ioredis would reject the timed-out
      // commands inside a MULTI where nobody listens (an unhandled rejection).
      retryStrategy: reconnectDelay,
    });
    let lastError: string | undefined;
    this.client.on('ready', () => {
      lastError = undefined;
      this.state.connected(`channel ${this.names.globalChannel}`);
    });
    this.client.on('error', (error: unknown) => {
      lastError = describeError(error);
      this.state.note(lastError);
    });
    this.client.on('close', () => {
      if (!this.closing) this.state.down(lastError ?? 'connection closed');
    });
  }

  wants(_instance: Instance): boolean {
    return true;
  }

  async deliver(entry: OutboxEntry, _instance: Instance): Promise<void> {
    if (this.closing) throw new DeliveryError('redis channel is closing');
    await this.state.whenUp(this.options.publishTimeoutMs);
    if (this.closing) throw new DeliveryError('redis channel is closing');
    const tx = this.client
      .multi()
      .publish(this.names.instanceChannel(entry.instanceId), entry.body)
      .publish(this.names.globalChannel, entry.body);
    if (this.options.streamMaxLen > 0) {
      tx.xadd(
        this.names.stream,
        'MAXLEN',
        '~',
        String(this.options.streamMaxLen),
        '*',
        'eventId',
        entry.eventId,
        'event',
        entry.type,
        'instanceId',
        entry.instanceId,
        'body',
        entry.body,
      );
    }
    let results: [Error | null, unknown][] | null;
    try {
      results = await withDeadline(tx.exec(), this.options.publishTimeoutMs, 'redis publish');
    } catch (error) {
      if (error instanceof DeliveryError) throw error;
      throw new DeliveryError(`redis publish failed: ${describeError(error)}`);
    }
    if (!results) throw new DeliveryError('redis publish failed: transaction discarded');
    const failed = results.find(([error]) => error !== null);
    if (failed?.[0]) throw new DeliveryError(`redis publish failed: ${describeError(failed[0])}`);
  }

  health(): ChannelHealth {
    return { ...this.state.health(), up: this.client.status === 'ready' };
  }

  /** Live events between gateway processes on `<prefix>relay` (a second, subscribing connection). */
  relayTransport(): Topic {
    const channel = this.names.relayChannel;
    return {
      description: `redis channel ${channel}`,
      publish: (payload) => {
        if (this.closing || this.client.status !== 'ready') return;
        this.client.publish(channel, payload).catch((error: unknown) => {
          this.options.log.debug({ err: error }, 'relay publish failed');
        });
      },
      subscribe: (onMessage) => {
        // A subscribed connection can run no other command; it re-subscribes after reconnects.
        this.subscriber ??= this.client.duplicate({
          enableOfflineQueue: true,
          maxRetriesPerRequest: null,
          connectionName: 'waygate-relay',
        });
        this.subscriber.on('error', (error: unknown) => this.options.log.debug({ err: error }, 'relay subscriber error'));
        this.subscriber.on('message', (from: string, message: string) => {
          if (from === channel) onMessage(message);
        });
        this.subscriber.subscribe(channel).catch((error: unknown) => {
          this.options.log.warn({ err: error }, 'could not subscribe to the relay channel');
        });
      },
    };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.state.releaseWaiting();
      for (const connection of [this.client, this.subscriber]) {
        if (!connection) continue;
        // QUIT lets Redis answer what is in flight; a connection that is down just stops retrying.
        if (connection.status === 'ready') await connection.quit().catch(() => connection.disconnect());
        else connection.disconnect();
      }
    })();
    return this.closing;
  }
}
