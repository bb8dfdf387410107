/**
 * The network port: what Waygate needs from a network, in Waygate's own types. The HTTP layer and the
 * event bus know only this file; a driver (sandbox, WhatsApp) implements it and no library type
 * crosses it. Later capabilities (chats, groups, users, labels, newsletters, communities, calls) are
 * added as optional capability objects on Session, so adding one never reshapes the others.
 */

export const NETWORKS = ['whatsapp', 'sandbox'] as const;
export type NetworkName = (typeof NETWORKS)[number];

/**
 * Instance status values and their transitions:
 *   created --connect--> CONNECTING --(needs pairing)--> QRCODE --(scan/pair)--> CONNECTED
 *   CONNECTED --(connection lost)--> DISCONNECTED --(automatic reconnect)--> CONNECTING --> CONNECTED
 *   QRCODE --(QR attempts exhausted)--> DISCONNECTED
 *   any --logout (API or phone side)--> LOGGED_OUT --connect--> CONNECTING --> QRCODE ...
 */
export const INSTANCE_STATUSES = ['created', 'CONNECTING', 'QRCODE', 'CONNECTED', 'DISCONNECTED', 'LOGGED_OUT'] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];

export const EVENT_TYPES = [
  'MESSAGE',
  'SEND_MESSAGE',
  'READ_RECEIPT',
  'PRESENCE',
  'HISTORY_SYNC',
  'CHAT_PRESENCE',
  'CALL',
  'CONNECTION',
  'LABEL',
  'CONTACT',
  'GROUP',
  'NEWSLETTER',
  'QRCODE',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The address form of the network: `<digits>@s.whatsapp.net` for people, `<id>@g.us` for groups. */
export const USER_SERVER = 's.whatsapp.net';

export function toJid(number: string): string {
  return `${number}@${USER_SERVER}`;
}

export function jidToNumber(jid: string): string | undefined {
  const match = /^(\d+)(?::\d+)?@s\.whatsapp\.net$/.exec(jid);
  return match?.[1];
}

export interface MessageKey {
  remoteJid: string;
  fromMe: boolean;
  id: string;
}

/** Canonical outgoing message: a tagged union of every kind. Later kinds join the union. */
export type OutgoingMessage = { kind: 'text'; to: string; text: string };

export interface SentMessage {
  key: MessageKey;
  messageTimestamp: number;
  /** The message content as it went out, in the network's payload shape. */
  message: Record<string, unknown>;
  status: 'SENT' | 'PENDING';
}

export interface ConnectionData {
  status: InstanceStatus;
  number?: string;
  /** Why the status changed (e.g. `qr_attempts_exhausted`, `connection_lost`, `logged_out_from_phone`). */
  reason?: string;
}

export interface CanonicalEvent {
  type: EventType;
  data: Record<string, unknown>;
}

export interface QrSnapshot {
  /** data:image/png;base64,... */
  qrcode: string;
  /** The text encoded in the QR. */
  code: string;
  /** Which QR of this pairing attempt this is, starting at 1. */
  attempt: number;
  expiresAt: number;
}

/** What a driver gets to talk back to Waygate about one instance. */
export interface SessionHost {
  readonly instanceId: string;
  readonly instanceName: string;
  /** Last known state from storage: lets a driver resume a connected session after restart. */
  readonly status: InstanceStatus;
  readonly number: string | null;
  /**
   * Every canonical event goes here; CONNECTION events also update the stored status. Events of one
   * instance are recorded in the order emitted; the promise resolves once this one is stored.
   */
  emit(event: CanonicalEvent): Promise<void>;
}

export interface Session {
  /** Start connecting; resolves once the attempt has started (QR shown or connected). */
  connect(): Promise<void>;
  /** The QR currently offered for scanning, if pairing is in progress. */
  currentQr(): QrSnapshot | undefined;
  /** Ask for an 8-digit pairing code that the phone with this number confirms. */
  requestPairingCode(number: string): Promise<string>;
  /** Drop the connection and connect again with the same credentials. */
  reconnect(): Promise<void>;
  /** Log out: the credentials are discarded; a new pairing is needed. */
  logout(): Promise<void>;
  /** Stop this session without logging out (shutdown, instance deletion). */
  close(): Promise<void>;
  send(message: OutgoingMessage): Promise<SentMessage>;
}

export interface NetworkDriver {
  readonly network: NetworkName;
  open(host: SessionHost): Session;
  /** Forget everything the network holds for an instance that is being deleted. */
  forget?(instanceId: string): Promise<void>;
  stop(): Promise<void>;
}
