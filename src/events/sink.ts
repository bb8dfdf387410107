/** What the event road delivers to. Durable sinks get every event at least once, in order per instance. */
import type { Instance } from '../instance-registry/service.js';
import type { OutboxEntry } from './envelope.js';

export class DeliveryError extends Error {
  constructor(
    message: string,
    /** HTTP status of the receiver's answer, when there was one. */
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = 'DeliveryError';
  }
}

export interface DeliveryRunResult {
  /** Events acknowledged, from the first of the run. */
  delivered: number;
  /** Seconds each attempt took: the delivered events', then the failed one's. */
  seconds: number[];
  /** Why the event after the delivered ones failed; absent when the whole run was delivered. */
  failure?: DeliveryError;
}

export interface RetryPolicy {
  /** Attempts before the event becomes a dead letter; null retries for ever (brokers: nothing is dropped). */
  maxAttempts: number | null;
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface DurableSink {
  /** Stable name, stored with each pending delivery (`webhook`, `amqp`, `redis`, `nats`, `mqtt`). */
  readonly name: string;
  readonly retry: RetryPolicy;
  /** Decided when the event is stored: does this sink deliver this instance's events at all? */
  wants(instance: Instance): boolean;
  /** Delivers one event; resolves only once the receiver has acknowledged it. Throws DeliveryError. */
  deliver(entry: OutboxEntry, instance: Instance): Promise<void>;
  /**
   * A sink that can carry several events in one delivery says how many for this instance (and how
   * long the oldest may wait for more); undefined: one event at a time.
   */
  batching?(instance: Instance): { maxEvents: number; maxWaitMs: number } | undefined;
  /** Delivers several events, in order, as one unit (all acknowledged or none). Throws DeliveryError. */
  deliverBatch?(entries: OutboxEntry[], instance: Instance): Promise<void>;
  /**
   * A sink that can deliver one event at a time away from the main event loop (the webhook's
   * delivery thread) takes a run of fresh events: each acknowledged before the next goes, stopping at
   * the first failure. Rejects when the run could not be made at all (nothing counts as delivered).
   */
  deliverRun?(entries: OutboxEntry[], instance: Instance): Promise<DeliveryRunResult>;
  /**
   * One attempt, no retry, for the dead-letter retry route: a sink that buries letters somewhere
   * other than the instance webhook (a failover group's webhook) says here how to resend them.
   */
  redeliver?(
    entry: Pick<OutboxEntry, 'body' | 'eventId' | 'type'>,
    instance: Instance,
  ): Promise<{ ok: boolean; status: number | null; error?: string }>;
  /** Connection state for health reporting. */
  health?(): { up: boolean; detail?: string };
  close?(): Promise<void>;
}

/** A best-effort sink fed right after the event is stored (WebSocket clients, cross-process fan-out). */
export interface LiveSink {
  readonly name: string;
  push(entry: OutboxEntry): void;
  close?(): Promise<void>;
}
