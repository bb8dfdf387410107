/**
 * NATS channel (LIGHT_BROKER_URL=nats://...). Every event goes to the subject
 * `<prefix>.events.<instanceId>.<EVENT>`; `<prefix>.events.<instanceId>.>` is one instance's events
 * and `<prefix>.events.>` all of them (the global view is a wildcard, so it sees each event once).
 *
 * When the server has JetStream, the gateway makes sure a stream `<PREFIX>_EVENTS` captures
 * `<prefix>.events.>` (created with file storage and a 2-minute duplicate window when missing),
 * with the configured limits (LIGHT_BROKER_STREAM_MAX_AGE_SECONDS / _MAX_MSGS / _MAX_BYTES, discard
 * policy old): an existing stream whose limits differ is updated at each setup, so a changed setting
 * takes effect on restart; its other settings are left as they are. It publishes with
 * `Nats-Msg-Id` = eventId so the stream drops the copies a retry may make, and waits for the
 * stream's PubAck. Without JetStream it
 * publishes on core NATS and waits for the server to have read it (a flush round trip): core NATS
 * keeps nothing for subscribers that are away.
 *
 * Instance ids, not names, make the subject: names may contain dots (subject token separators).
 */
import { headers, nanos, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { connect } from '@nats-io/transport-node';
import {
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StreamInfo,
} from '@nats-io/jetstream';
import type { StreamLimits } from '../../config.js';
import type { Instance } from '../../instance-registry/service.js';
import { backoffDelay } from '../../retry.js';
import type { OutboxEntry } from '../envelope.js';
import { DeliveryError, type DurableSink, type RetryPolicy } from '../sink.js';
import { describeError, LinkState, pause, withDeadline, type BrokerSinkOptions, type ChannelHealth } from './broker.js';
import type { Topic } from '../../topic.js';

export interface NatsSinkOptions extends BrokerSinkOptions {
  url: string;
  /** LIGHT_BROKER_PREFIX. */
  prefix: string;
  /** Shown in the server's connection list (connz). */
  connectionName: string;
  /** Limits of the JetStream stream (config.channels.streamLimits); 0 turns a limit off. */
  limits: StreamLimits;
}

/** Subject and stream names of a prefix (docs/channels.md). */
export function natsNames(prefix: string) {
  return {
    subject: (instanceId: string, event: string) => `${prefix}.events.${instanceId}.${event}`,
    instanceWildcard: (instanceId: string) => `${prefix}.events.${instanceId}.>`,
    globalWildcard: `${prefix}.events.>`,
    stream: `${prefix.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}_EVENTS`,
    relaySubject: `${prefix}.relay`,
  };
}

const DUPLICATE_WINDOW_MS = 120_000;

/** The stream settings the gateway owns, in JetStream's terms (no limit: max_age 0, max_msgs and max_bytes -1). */
export function natsStreamLimits(limits: StreamLimits): { max_age: number; max_msgs: number; max_bytes: number; discard: DiscardPolicy } {
  return {
    max_age: nanos(limits.maxAgeSeconds * 1000),
    max_msgs: limits.maxMessages > 0 ? limits.maxMessages : -1,
    max_bytes: limits.maxBytes > 0 ? limits.maxBytes : -1,
    // At a limit the oldest messages go; `new` would refuse publishes, and brokers retry for ever.
    discard: DiscardPolicy.Old,
  };
}

/** The server refuses a duplicate window longer than max_age. */
function duplicateWindow(maxAge: number, current = nanos(DUPLICATE_WINDOW_MS)): number {
  return maxAge > 0 && current > maxAge ? maxAge : current;
}

export class NatsSink implements DurableSink {
  readonly name = 'nats';
  readonly retry: RetryPolicy;
  readonly names: ReturnType<typeof natsNames>;
  private connection: NatsConnection | undefined;
  /** Set while the server has JetStream and our stream is in place; core NATS otherwise. */
  private js: JetStreamClient | undefined;
  /** Publishing is allowed only after the (re)connect setup decided between JetStream and core. */
  private ready = false;
  /** The TCP connection to the server is up (whether or not setup has succeeded on it). */
  private transportUp = false;
  private readonly state: LinkState;
  private readonly stopping = new AbortController();
  private closing: Promise<void> | undefined;
  private readonly relayHandlers: ((payload: string) => void)[] = [];
  /** The setup in progress, so lanes failing together run it once. */
  private settingUp: Promise<void> | undefined;
  /** Failed setups in a row on this connection (their retries back off) and the retry waiting. */
  private setupFailures = 0;
  private setupRetry: NodeJS.Timeout | undefined;

  constructor(private readonly options: NatsSinkOptions) {
    this.retry = options.retry;
    this.names = natsNames(options.prefix);
    this.state = new LinkState(this.name, options.log);
    void this.run();
  }

  wants(_instance: Instance): boolean {
    return true;
  }

  async deliver(entry: OutboxEntry, _instance: Instance): Promise<void> {
    if (this.closing) throw new DeliveryError('nats channel is closing');
    // Connected but not set up (e.g. JetStream was still starting after a server restart when the
    // last setup ran): try again now rather than wait for a reconnect that may never come.
    if (this.connection && this.transportUp && !this.ready) void this.setup(this.connection);
    await this.state.whenUp(this.options.publishTimeoutMs);
    if (this.closing) throw new DeliveryError('nats channel is closing');
    const connection = this.connection;
    if (!connection || !this.ready || connection.isClosed()) {
      throw new DeliveryError(`nats not connected: ${this.state.health().detail ?? 'connecting'}`);
    }
    const subject = this.names.subject(entry.instanceId, entry.type);
    const hdrs = this.headersOf(entry);
    const { publishTimeoutMs } = this.options;
    try {
      if (this.js) {
        await this.js.publish(subject, entry.body, { msgID: entry.eventId, headers: hdrs, timeout: publishTimeoutMs });
      } else {
        connection.publish(subject, entry.body, { headers: hdrs });
        await withDeadline(connection.flush(), publishTimeoutMs, 'nats flush');
      }
    } catch (error) {
      // The stream may have been deleted or changed: check it again before the next attempt.
      if (this.js) {
        this.ready = false;
        this.state.down(`jetstream publish failed (${describeError(error)}); checking the stream`);
        void this.setup(connection);
      }
      if (error instanceof DeliveryError) throw error;
      throw new DeliveryError(`nats publish failed: ${describeError(error)}`);
    }
  }

  health(): ChannelHealth {
    const up = this.ready && this.connection !== undefined && !this.connection.isClosed() && this.state.isUp;
    return { ...this.state.health(), up };
  }

  /** Live events between gateway processes on the core subject `<prefix>.relay` (never stored). */
  relayTransport(): Topic {
    const subject = this.names.relaySubject;
    return {
      description: `nats subject ${subject}`,
      publish: (payload) => {
        const connection = this.connection;
        if (this.closing || !connection || connection.isClosed() || !this.state.isUp) return;
        try {
          connection.publish(subject, payload);
        } catch (error) {
          this.options.log.debug({ err: error }, 'relay publish failed');
        }
      },
      subscribe: (onMessage) => {
        this.relayHandlers.push(onMessage);
        if (this.connection && !this.connection.isClosed()) this.subscribeRelay(this.connection, onMessage);
      },
    };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.state.releaseWaiting();
      this.stopping.abort();
      clearTimeout(this.setupRetry);
      this.ready = false;
      const connection = this.connection;
      if (connection && !connection.isClosed()) {
        // drain() would wait for every subscriber callback; close() is enough for a publisher.
        await withDeadline(connection.close(), 5_000, 'nats close').catch(() => undefined);
      }
    })();
    return this.closing;
  }

  /**
   * First connection, with our own backoff: the client library gives up on a first connection that
   * fails, but once connected it reconnects for ever by itself (maxReconnectAttempts -1).
   */
  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.stopping.signal.aborted) {
      let connection: NatsConnection;
      try {
        connection = await connect({
          ...natsServerOptions(this.options.url),
          name: this.options.connectionName,
          reconnect: true,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 1_000,
          // The first handshake (and the JetStream check after it) can be slow on a loaded machine.
          timeout: Math.max(this.options.publishTimeoutMs, 5_000),
        });
      } catch (error) {
        attempt += 1;
        this.state.down(describeError(error));
        // Short waits first: a first connect that timed out on a busy machine is tried again soon.
        await pause(backoffDelay({ baseMs: 250, maxMs: 5_000 }, attempt), this.stopping.signal);
        continue;
      }
      if (this.stopping.signal.aborted) {
        await connection.close().catch(() => undefined);
        return;
      }
      attempt = 0;
      this.connection = connection;
      this.transportUp = true;
      for (const handler of this.relayHandlers) this.subscribeRelay(connection, handler);
      void this.watch(connection);
      await this.setup(connection);
      const closedWith = await connection.closed();
      this.ready = false;
      this.transportUp = false;
      if (this.stopping.signal.aborted) return;
      // Closed although it reconnects for ever (e.g. an authorization error): start over.
      this.state.down(closedWith instanceof Error ? describeError(closedWith) : 'connection closed');
      await pause(1_000, this.stopping.signal);
    }
  }

  /** Follows the connection's status: down while disconnected, set up again after a reconnect. */
  private async watch(connection: NatsConnection): Promise<void> {
    for await (const status of connection.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnecting') {
        this.ready = false;
        this.transportUp = false;
        this.state.down('disconnected');
      } else if (status.type === 'reconnect') {
        this.transportUp = true;
        void this.setup(connection);
      } else if (status.type === 'error') {
        this.state.note(describeError(status.error));
      }
      // Other statuses (pings, cluster updates, slow consumer notices) do not change the state.
    }
  }

  /** Decides between JetStream and core NATS for this connection, and ensures the stream exists. */
  private setup(connection: NatsConnection): Promise<void> {
    this.settingUp ??= this.runSetup(connection).finally(() => {
      this.settingUp = undefined;
    });
    return this.settingUp;
  }

  private async runSetup(connection: NatsConnection): Promise<void> {
    try {
      if (connection.info?.jetstream) {
        const manager = await jetstreamManager(connection, { timeout: this.options.publishTimeoutMs });
        const limits = natsStreamLimits(this.options.limits);
        let existing: StreamInfo | undefined;
        try {
          existing = await manager.streams.info(this.names.stream);
        } catch (error) {
          if (!isStreamNotFound(error)) throw error;
          await manager.streams.add({
            name: this.names.stream,
            subjects: [this.names.globalWildcard],
            storage: StorageType.File,
            duplicate_window: duplicateWindow(limits.max_age),
            ...limits,
          });
          this.options.log.info(
            { stream: this.names.stream, subjects: this.names.globalWildcard, limits },
            'created JetStream stream for events',
          );
        }
        if (existing) await this.applyLimits(manager, existing, limits);
        this.js = jetstream(connection, { timeout: this.options.publishTimeoutMs });
        this.ready = true;
        this.setupFailures = 0;
        this.state.connected(`jetstream stream ${this.names.stream}`);
      } else {
        this.js = undefined;
        this.ready = true;
        this.setupFailures = 0;
        this.state.connected('core nats (server has no JetStream)');
      }
    } catch (error) {
      // Connected but the stream is not usable yet (JetStream still starting, a slow server, a
      // conflicting stream): deliveries fail and retry, and the setup runs again by itself with
      // backoff, so the channel comes up even when no event is waiting to push it.
      this.ready = false;
      this.state.down(`jetstream setup failed: ${describeError(error)}`);
      this.retrySetupLater(connection);
    }
  }

  /**
   * Brings an existing stream's limits to the configured ones. A refused update (e.g. a server
   * without room for a larger max_bytes) is logged and the stream is used with its current limits:
   * events keep flowing, and the next setup (reconnect or restart) tries again.
   */
  private async applyLimits(manager: JetStreamManager, info: StreamInfo, limits: ReturnType<typeof natsStreamLimits>): Promise<void> {
    const { config } = info;
    const current = { max_age: config.max_age, max_msgs: config.max_msgs, max_bytes: config.max_bytes, discard: config.discard };
    const changed = (Object.keys(limits) as (keyof typeof limits)[]).some((key) => current[key] !== limits[key]);
    if (!changed) return;
    const stream = this.names.stream;
    try {
      await manager.streams.update(stream, { ...limits, duplicate_window: duplicateWindow(limits.max_age, config.duplicate_window) });
      this.options.log.info({ stream, from: current, to: limits }, 'updated the limits of the JetStream stream for events');
    } catch (error) {
      this.options.log.warn(
        { stream, current, wanted: limits, reason: describeError(error) },
        'could not update the limits of the JetStream stream for events; it keeps its current limits',
      );
    }
  }

  private retrySetupLater(connection: NatsConnection): void {
    this.setupFailures += 1;
    clearTimeout(this.setupRetry);
    this.setupRetry = setTimeout(
      () => {
        if (this.closing || this.ready || connection !== this.connection || connection.isClosed() || !this.transportUp) return;
        void this.setup(connection);
      },
      Math.min(250 * 2 ** Math.min(this.setupFailures, 5), 5_000),
    );
    this.setupRetry.unref();
  }

  private subscribeRelay(connection: NatsConnection, onMessage: (payload: string) => void): void {
    connection.subscribe(this.names.relaySubject, {
      callback: (error, message) => {
        if (!error) onMessage(message.string());
      },
    });
  }

  private headersOf(entry: OutboxEntry): MsgHdrs {
    const hdrs = headers();
    hdrs.set('Content-Type', 'application/json');
    hdrs.set('Waygate-Event-Id', entry.eventId);
    hdrs.set('Waygate-Event', entry.type);
    hdrs.set('Waygate-Instance-Id', entry.instanceId);
    return hdrs;
  }
}

/**
 * The client library takes credentials as options, not from the URL: `nats://user:pass@host:port`
 * becomes user/pass, `nats://token@host:port` a token.
 */
export function natsServerOptions(url: string): { servers: string; user?: string; pass?: string; token?: string } {
  const parsed = new URL(url);
  const servers = `${parsed.hostname}:${parsed.port || '4222'}`;
  const user = decodeURIComponent(parsed.username);
  const pass = decodeURIComponent(parsed.password);
  if (user && pass) return { servers, user, pass };
  if (user) return { servers, token: user };
  return { servers };
}

function isStreamNotFound(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, name } = error as { code?: unknown; name?: unknown };
  return code === 10059 || name === 'StreamNotFoundError';
}
