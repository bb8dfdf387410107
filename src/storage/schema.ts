/** Table types for Kysely. Timestamps are integer milliseconds since the epoch; JSON is stored as text. */
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

export interface InstancesTable {
  id: string;
  name: string;
  network: string;
  status: string;
  number: string | null;
  webhook_url: string | null;
  webhook_secret: string;
  /** JSON: "ALL" or an array of event types. */
  webhook_events: string;
  /** JSON object of per-instance settings. */
  settings: string;
  proxy_url: string | null;
  created_at: number;
  updated_at: number;
}

export interface InstanceTokensTable {
  /** Lowercase hex SHA-256 of the token; the plain token is never stored. */
  hash: string;
  instance_id: string;
  /** null while the token is primary; set when rotation turns it into a grace token. */
  valid_until: number | null;
  created_at: number;
}

export interface OutboxTable {
  seq: Generated<number>;
  event_id: string;
  instance_id: string;
  event_type: string;
  /** The exact JSON envelope every sink sends. */
  body: string;
  created_at: number;
}

export interface OutboxPendingTable {
  seq: number;
  sink: string;
  instance_id: string;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  last_status: number | null;
}

export interface DeadLettersTable {
  id: string;
  instance_id: string;
  sink: string;
  event_id: string;
  event_type: string;
  body: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  first_attempt_at: number;
  last_attempt_at: number;
  created_at: number;
}

export interface SandboxAccountsTable {
  /** Digits only, with country code. */
  number: string;
  push_name: string;
  created_at: number;
}

export interface Database {
  instances: InstancesTable;
  instance_tokens: InstanceTokensTable;
  outbox: OutboxTable;
  outbox_pending: OutboxPendingTable;
  dead_letters: DeadLettersTable;
  sandbox_accounts: SandboxAccountsTable;
}

export type InstanceRow = Selectable<InstancesTable>;
export type NewInstanceRow = Insertable<InstancesTable>;
export type InstanceUpdate = Updateable<InstancesTable>;
export type OutboxRow = Selectable<OutboxTable>;
export type DeadLetterRow = Selectable<DeadLettersTable>;
