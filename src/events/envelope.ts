/** The event envelope every sink sends: SPEC's four fields plus `eventId` and `timestamp` for dedupe and `seq` for order. */
import type { EventType } from '../network/port.js';

export interface EventEnvelope {
  event: EventType;
  instanceId: string;
  instanceName: string;
  data: Record<string, unknown>;
  /** UUID, unique per event; the same on every retry and every channel. */
  eventId: string;
  /** ISO 8601 UTC time the event was recorded. */
  timestamp: string;
  /**
   * The instance's event number: 1, 2, 3, ... in the order the events were recorded, on every
   * channel alike (receivers order by it and see gaps). Set when the event is stored.
   */
  seq: number;
}

/** An event as stored in the outbox: the envelope serialised once, sent byte-for-byte by every sink. */
export interface OutboxEntry {
  seq: number;
  eventId: string;
  instanceId: string;
  instanceName: string;
  type: EventType;
  body: string;
  createdAt: number;
}
