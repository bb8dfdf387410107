/**
 * A best-effort message channel that every gateway process shares: live events between processes
 * (events/sinks/relay.ts, over Redis, NATS or MQTT), cluster notices (cluster/channel.ts) and the
 * sandbox network's deliveries (network/sandbox/span.ts). What must not be lost travels through the
 * database instead (the outbox, the leases).
 */
export interface Topic {
  /** Where the messages travel, for logs (e.g. `redis channel waygate:relay`). */
  readonly description: string;
  /** Sends one message; never throws (a lost message is a lost notice, nothing more). */
  publish(payload: string): void;
  /** Starts delivering the messages of every process, this one included. */
  subscribe(onMessage: (payload: string) => void): void;
}
