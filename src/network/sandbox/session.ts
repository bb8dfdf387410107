/**
 * One sandbox instance's session: the pairing flow (QR codes that expire, pairing codes), the
 * connection (drops and automatic reconnects), and sending/receiving through the SandboxNetwork.
 */
import { randomBytes } from 'node:crypto';
import QRCode from 'qrcode';
import { errors } from '../../errors.js';
import {
  eventMediaOf,
  isGroupJid,
  type ConnectionData,
  type EventMedia,
  type InstanceStatus,
  type OutgoingMessage,
  type QrSnapshot,
  type SentMessage,
  type Session,
  type SessionHost,
  type CanonicalEvent,
  type EventData,
} from '../port.js';
import { newMessageId, type SandboxNetwork } from './network.js';
import { buildOutgoing } from './outgoing.js';
import type {
  CallOperations,
  ChatOperations,
  CommunityOperations,
  GroupOperations,
  LabelOperations,
  MessageOperations,
  NewsletterOperations,
  UserOperations,
} from '../port.js';

export interface SandboxTiming {
  qrIntervalMs: number;
  qrMaxAttempts: number;
  reconnectDelayMs: number;
}

export interface IncomingMessage {
  key: { remoteJid: string; fromMe: boolean; id: string };
  /** The author, in chats with several authors (status posts). */
  participant?: string;
  pushName: string;
  /** A poll vote, decoded: the poll's message id and the names of the options chosen. */
  pollVote?: { pollMessageId: string; selectedOptions: string[] };
  message: Record<string, unknown>;
  messageTimestamp: number;
}

const PAIRING_CODE_TTL_MS = 180_000;

export class SandboxSession implements Session {
  private status: InstanceStatus;
  private number: string | null;
  private qr: QrSnapshot | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  // The social capabilities, attached by the driver (capabilities.ts) over the shared SandboxWorld.
  chats?: ChatOperations;
  groups?: GroupOperations;
  users?: UserOperations;
  labels?: LabelOperations;
  newsletters?: NewsletterOperations;
  communities?: CommunityOperations;
  calls?: CallOperations;
  /** Who a message to a group reaches (with the network's refusals); attached with the capabilities. */
  groupRecipients?: (groupId: string) => string[];
  messages?: MessageOperations;
  /**
   * What the phone sends a newly linked device: the account's chats and recent messages as
   * HISTORY_SYNC parts (none for an account without chats); attached with the capabilities.
   */
  initialHistory?: () => Promise<EventData<'HISTORY_SYNC'>[]>;

  constructor(
    private readonly host: SessionHost,
    private readonly network: SandboxNetwork,
    private readonly timing: SandboxTiming,
  ) {
    this.status = host.status;
    this.number = host.number;
  }

  get instanceName(): string {
    return this.host.instanceName;
  }

  get instanceId(): string {
    return this.host.instanceId;
  }

  isConnected(): boolean {
    return this.status === 'CONNECTED';
  }

  currentNumber(): string | null {
    return this.number;
  }

  async connect(): Promise<void> {
    this.closed = false;
    if (this.status === 'CONNECTED' && this.number !== null) {
      // Resumed after a restart: the link is still there, nothing changed, so nothing to report.
      this.network.claimNumber(this.number, this);
      return;
    }
    if (this.number !== null && this.status !== 'LOGGED_OUT') {
      // A linked session (restart or reconnect) comes back without a new QR.
      this.network.claimNumber(this.number, this);
      const previous = this.status;
      this.status = 'CONNECTED';
      if (previous !== 'CONNECTED') await this.setStatus('CONNECTED', 'reconnected');
      return;
    }
    // A QR being shown stays; a session opened on a stored QRCODE status (cluster mode: the instance
    // moved to this process while pairing) has none, and shows a new one.
    if (this.status === 'QRCODE' && this.qr) return;
    await this.setStatus('CONNECTING');
    await this.showQr(1);
  }

  currentQr(): QrSnapshot | undefined {
    return this.status === 'QRCODE' ? this.qr : undefined;
  }

  async requestPairingCode(number: string): Promise<string> {
    if (this.status === 'CONNECTED') throw errors.conflict('instance is already connected');
    if (this.status !== 'QRCODE' && this.status !== 'CONNECTING') await this.connect();
    return this.network.newPairingCode(number, this, PAIRING_CODE_TTL_MS);
  }

  /** The phone with `number` scanned the current QR. */
  async scan(number: string): Promise<void> {
    if (this.status !== 'QRCODE' || !this.qr) {
      throw errors.conflict(`instance has no QR code to scan (status ${this.status}); call POST /instance/connect first`);
    }
    await this.completePairing(number);
  }

  async completePairing(number: string): Promise<void> {
    this.network.claimNumber(number, this);
    this.clearTimer();
    this.qr = undefined;
    this.number = number;
    this.status = 'CONNECTED';
    await this.setStatus('CONNECTED', 'paired');
    // As a real phone does once the link is open: the chats it has, in parts, up to progress 100.
    for (const data of (await this.initialHistory?.()) ?? []) {
      if (!this.isConnected()) return;
      await this.host.emit({ type: 'HISTORY_SYNC', data });
    }
  }

  async reconnect(): Promise<void> {
    if (this.number === null || this.status === 'LOGGED_OUT') {
      await this.connect();
      return;
    }
    await this.dropConnection('reconnect_requested');
  }

  /** The connection is lost; the session reconnects by itself after the configured delay. */
  async dropConnection(reason = 'connection_lost'): Promise<void> {
    if (this.status !== 'CONNECTED') throw errors.conflict(`instance is not connected (status ${this.status})`);
    this.status = 'DISCONNECTED';
    await this.setStatus('DISCONNECTED', reason);
    this.clearTimer();
    this.timer = setTimeout(() => void this.reconnectNow(), this.timing.reconnectDelayMs);
    this.timer.unref();
  }

  async logout(reason = 'logged_out'): Promise<void> {
    this.clearTimer();
    this.qr = undefined;
    if (this.number !== null) this.network.releaseNumber(this.number, this);
    this.number = null;
    this.status = 'LOGGED_OUT';
    await this.setStatus('LOGGED_OUT', reason);
  }

  close(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    if (this.number !== null) this.network.releaseNumber(this.number, this);
    return Promise.resolve();
  }

  async send(message: OutgoingMessage): Promise<SentMessage> {
    if (this.status !== 'CONNECTED' || this.number === null) throw errors.notConnected(this.status);
    const me = this.number;
    const built = buildOutgoing(message, me, Math.floor(this.network.clock.now() / 1000));
    if (isGroupJid(built.remoteJid)) {
      if (!this.groupRecipients) throw errors.notSupported('group messages', 'sandbox');
      built.recipients = this.groupRecipients(built.remoteJid);
    }
    const delayMs = 'delayMs' in message ? (message.delayMs ?? 0) : 0;
    if (delayMs > 0) {
      // "typing…" (or "recording…") for the delay, as a person would, then the message.
      for (const to of built.recipients) await this.network.deliverPresence(me, to, built.typing);
      await this.network.sleep(delayMs);
      for (const to of built.recipients) await this.network.deliverPresence(me, to, 'paused');
      if (!this.isConnected()) throw errors.notConnected(this.status);
    }
    const id = newMessageId();
    const messageTimestamp = Math.floor(this.network.clock.now() / 1000);
    const key = { remoteJid: built.remoteJid, fromMe: true, id };
    const media = built.media ? eventMediaOf(built.media) : undefined;
    await this.host.emit({
      type: 'SEND_MESSAGE',
      data: { key, message: built.content, messageTimestamp, status: 'SENT' },
      ...(media ? { media } : {}),
    });
    for (const to of built.recipients) {
      await this.network.deliver(me, to, built.content, { id, ...(media ? { media } : {}), chat: built.remoteJid, messageTimestamp });
    }
    return { key, message: built.content, messageTimestamp, status: 'SENT' };
  }

  /** A message from the network arrives at this instance, with its media bytes when it has any. */
  async receive(incoming: IncomingMessage, media?: EventMedia): Promise<void> {
    await this.host.emit({ type: 'MESSAGE', data: { ...incoming }, ...(media ? { media } : {}) });
  }

  /** Emits any other event on behalf of the network (receipts, presence, calls). */
  async notify(event: Extract<CanonicalEvent, { type: 'READ_RECEIPT' | 'PRESENCE' | 'CHAT_PRESENCE' | 'CALL' }>): Promise<void> {
    await this.host.emit(event);
  }

  private async reconnectNow(): Promise<void> {
    if (this.closed || this.status !== 'DISCONNECTED' || this.number === null) return;
    await this.setStatus('CONNECTING', 'reconnecting');
    this.status = 'CONNECTED';
    await this.setStatus('CONNECTED', 'reconnected');
  }

  private async showQr(attempt: number): Promise<void> {
    if (this.closed) return;
    if (attempt > this.timing.qrMaxAttempts) {
      this.qr = undefined;
      this.status = 'DISCONNECTED';
      await this.setStatus('DISCONNECTED', 'qr_attempts_exhausted');
      return;
    }
    const code = `waygate-sandbox:${this.host.instanceId}:${randomBytes(12).toString('base64url')}`;
    const qrcode = await QRCode.toDataURL(code, { errorCorrectionLevel: 'M', margin: 2, width: 264 });
    if (this.closed || (this.status !== 'CONNECTING' && this.status !== 'QRCODE')) return;
    this.qr = { qrcode, code, attempt, expiresAt: this.network.clock.now() + this.timing.qrIntervalMs };
    this.status = 'QRCODE';
    await this.host.emit({ type: 'CONNECTION', data: { status: 'QRCODE' } });
    await this.host.emit({ type: 'QRCODE', data: { qrcode, code, attempt } });
    this.clearTimer();
    this.timer = setTimeout(() => void this.showQr(attempt + 1), this.timing.qrIntervalMs);
    this.timer.unref();
  }

  private async setStatus(status: InstanceStatus, reason?: string): Promise<void> {
    this.status = status;
    const data: ConnectionData = { status };
    if (this.number !== null && status !== 'LOGGED_OUT') data.number = this.number;
    if (reason) data.reason = reason;
    await this.host.emit({ type: 'CONNECTION', data: { ...data } });
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
