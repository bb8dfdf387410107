/**
 * MQTT channel (LIGHT_BROKER_URL=mqtt:// or mqtts://), MQTT 5. Every event is published with QoS 1
 * to `<prefix>/events/<instanceId>/<EVENT>`; `<prefix>/events/<instanceId>/#` is one instance's events
 * and `<prefix>/events/#` all of them. The lane waits for the broker's PUBACK. MQTT 5 user
 * properties carry eventId, event and instanceId; the content type is application/json.
 *
 * The broker keeps QoS 1 messages for a subscriber only while that subscriber has a persistent
 * session (clean start off, or a session expiry): consumers that must not miss events while away
 * subscribe that way. mqtt.js reconnects by itself; we stretch its period while the broker stays away.
 */
import { randomBytes } from 'node:crypto';
import { connect, type MqttClient } from 'mqtt';
import type { Instance } from '../../instance-registry/service.js';
import { backoffDelay } from '../../retry.js';
import type { OutboxEntry } from '../envelope.js';
import { DeliveryError, type DurableSink, type RetryPolicy } from '../sink.js';
import { describeError, LinkState, withDeadline, type BrokerSinkOptions, type ChannelHealth } from './broker.js';
import type { Topic } from '../../topic.js';

export interface MqttSinkOptions extends BrokerSinkOptions {
  url: string;
  /** LIGHT_BROKER_PREFIX. */
  prefix: string;
}

/** Topic names of a prefix (docs/channels.md). */
export function mqttNames(prefix: string) {
  return {
    topic: (instanceId: string, event: string) => `${prefix}/events/${instanceId}/${event}`,
    instanceWildcard: (instanceId: string) => `${prefix}/events/${instanceId}/#`,
    globalWildcard: `${prefix}/events/#`,
    relayTopic: `${prefix}/relay`,
  };
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 15_000;

export class MqttSink implements DurableSink {
  readonly name = 'mqtt';
  readonly retry: RetryPolicy;
  readonly names: ReturnType<typeof mqttNames>;
  private readonly client: MqttClient;
  private readonly state: LinkState;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: MqttSinkOptions) {
    this.retry = options.retry;
    this.names = mqttNames(options.prefix);
    this.state = new LinkState(this.name, options.log);
    this.client = connect(options.url, {
      protocolVersion: 5,
      clientId: `waygate-${randomBytes(6).toString('hex')}`,
      clean: true,
      reconnectPeriod: RECONNECT_MIN_MS,
      connectTimeout: options.publishTimeoutMs,
      // While offline, publishing fails at once (see deliver) instead of queueing in memory.
      queueQoSZero: false,
    });
    let lastError: string | undefined;
    let closes = 0;
    this.client.on('connect', () => {
      lastError = undefined;
      closes = 0;
      this.client.options.reconnectPeriod = RECONNECT_MIN_MS;
      this.state.connected(`topics ${this.names.globalWildcard}`);
    });
    this.client.on('close', () => {
      if (this.closing) return;
      // mqtt.js reads the period each time it schedules a reconnect: back off while the broker stays away.
      closes += 1;
      this.client.options.reconnectPeriod = backoffDelay({ baseMs: RECONNECT_MIN_MS, maxMs: RECONNECT_MAX_MS }, closes);
      this.state.down(lastError ?? 'disconnected');
    });
    this.client.on('error', (error: unknown) => {
      lastError = describeError(error);
      this.state.note(lastError);
    });
  }

  wants(_instance: Instance): boolean {
    return true;
  }

  async deliver(entry: OutboxEntry, _instance: Instance): Promise<void> {
    if (this.closing) throw new DeliveryError('mqtt channel is closing');
    await this.state.whenUp(this.options.publishTimeoutMs);
    if (this.closing) throw new DeliveryError('mqtt channel is closing');
    try {
      await withDeadline(
        this.client.publishAsync(this.names.topic(entry.instanceId, entry.type), entry.body, {
          qos: 1,
          properties: {
            contentType: 'application/json',
            userProperties: { eventId: entry.eventId, event: entry.type, instanceId: entry.instanceId },
          },
        }),
        this.options.publishTimeoutMs,
        'mqtt publish',
      );
    } catch (error) {
      if (error instanceof DeliveryError) throw error;
      throw new DeliveryError(`mqtt publish failed: ${describeError(error)}`);
    }
  }

  health(): ChannelHealth {
    return { ...this.state.health(), up: this.client.connected };
  }

  /** Live events between gateway processes on `<prefix>/relay`, QoS 0, never our own back (no-local). */
  relayTransport(): Topic {
    const topic = this.names.relayTopic;
    return {
      description: `mqtt topic ${topic}`,
      publish: (payload) => {
        if (this.closing || !this.client.connected) return;
        this.client.publish(topic, payload, { qos: 0 }, (error) => {
          if (error) this.options.log.debug({ err: error }, 'relay publish failed');
        });
      },
      subscribe: (onMessage) => {
        // Our session is not persistent (clean start): subscribe on every connection. mqtt.js's own
        // resubscribe only covers subscriptions that once succeeded, and the first may fail.
        const subscribe = () => {
          this.client.subscribe(topic, { qos: 0, nl: true }, (error) => {
            if (error && !this.closing) this.options.log.warn({ err: error }, 'could not subscribe to the relay topic');
          });
        };
        if (this.client.connected) subscribe();
        this.client.on('connect', subscribe);
        this.client.on('message', (from, payload) => {
          if (from === topic) onMessage(payload.toString('utf8'));
        });
      },
    };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.state.releaseWaiting();
      // force: do not wait for in-flight QoS 1 acks; their events are still pending in the outbox.
      await withDeadline(this.client.endAsync(true), 5_000, 'mqtt close').catch(() => undefined);
    })();
    return this.closing;
  }
}
