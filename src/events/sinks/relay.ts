/**
 * Carries live events between gateway processes: every process publishes the events it stores on a
 * shared channel, and pushes the events other processes stored to its own WebSocket clients. So a
 * WebSocket client connected to process B sees the events of an instance owned by process A.
 *
 * Best-effort like the WebSocket itself (durable consumers use the broker channels). The transport
 * is Redis pub/sub when KV_STORE_GLOBAL_EVENTS=true, otherwise the lightweight broker (NATS core
 * subject or MQTT QoS 0 topic) when LIGHT_BROKER_URL is set.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Topic } from '../../topic.js';
import type { OutboxEntry } from '../envelope.js';
import type { LiveSink } from '../sink.js';

/** The process-local receivers of relayed events (the WebSocket hub). */
export interface LocalPush {
  push(entry: OutboxEntry): void;
}

/** Wire format between processes (internal, may change between versions). */
interface RelayMessage {
  origin: string;
  entry: OutboxEntry;
}

function isRelayMessage(value: unknown): value is RelayMessage {
  if (typeof value !== 'object' || value === null) return false;
  const { origin, entry } = value as Partial<RelayMessage>;
  return (
    typeof origin === 'string' &&
    typeof entry === 'object' &&
    entry !== null &&
    typeof entry.instanceId === 'string' &&
    typeof entry.body === 'string' &&
    typeof entry.eventId === 'string'
  );
}

export class EventRelay implements LiveSink {
  readonly name = 'relay';
  /** Tells this process's own messages apart: it already pushed them to its clients. */
  readonly origin = randomUUID();

  constructor(
    private readonly transport: Topic,
    private readonly local: LocalPush,
    private readonly log: FastifyBaseLogger,
  ) {
    transport.subscribe((payload) => this.receive(payload));
    log.info({ via: transport.description }, 'live events are shared with the other gateway processes');
  }

  push(entry: OutboxEntry): void {
    const message: RelayMessage = { origin: this.origin, entry };
    this.transport.publish(JSON.stringify(message));
  }

  private receive(payload: string): void {
    let message: unknown;
    try {
      message = JSON.parse(payload);
    } catch {
      message = undefined;
    }
    if (!isRelayMessage(message)) {
      this.log.debug({ via: this.transport.description }, 'ignored a relay message of unknown shape');
      return;
    }
    if (message.origin === this.origin) return;
    this.local.push(message.entry);
  }
}
