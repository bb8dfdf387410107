/**
 * The simulated network: virtual phones (numbers), the QR references and pairing codes on offer,
 * and which session is linked to which number. Sessions of sandbox instances live here; two of them
 * can message each other, and virtual contacts act through the /sandbox control routes.
 */
import { createHash, randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { newHexId, type Clock } from '../../clock.js';
import { errors } from '../../errors.js';
import type { Topic } from '../../topic.js';
import { isGroupJid, STATUS_JID, toJid, type CanonicalEvent, type EventMedia, type MessageKey } from '../port.js';
import type { IncomingMessage, SandboxSession } from './session.js';
import { mediaFromWire, mediaToWire, parseSpanMessage, type SandboxSpanLogger, type SpanMessage, type SpanPresence } from './span.js';

/**
 * A message id shaped as WhatsApp's (`3EB0` and hex digits) whose digits are a time-ordered UUID's:
 * ids made later sort later, so a stored message's row lands on the last page of the messages'
 * primary key, not on a random page of it (a commit of 56 sends wrote ~80 pages of that index with
 * random ids, ~6 with these). Its 62 random bits keep ids of two processes apart (cluster mode).
 */
export function newMessageId(): string {
  return `3EB0${newHexId()}`;
}

export interface PairingCode {
  code: string;
  number: string;
  session: SandboxSession;
  expiresAt: number;
}

export class SandboxNetwork {
  private readonly pairingCodes = new Map<string, PairingCode>();
  /** Linked number -> its connected session. */
  private readonly linked = new Map<string, SandboxSession>();
  /** Display names of virtual contacts (default: the number). */
  private readonly names = new Map<string, string>();
  /** Set by span(): where deliveries to numbers not linked here go (span.ts). */
  private spanTransport: Topic | undefined;
  private spanLog: SandboxSpanLogger | undefined;
  /** Tells this process's own span messages apart. */
  readonly spanOrigin = randomUUID();
  /** Deliveries received from the span, one after another per recipient number (kept in order). */
  private readonly spanQueues = new Map<string, Promise<void>>();
  /** Delivers other events (world.emitTo) received from the span; attached by the SandboxWorld. */
  private eventReceiver: ((to: string, event: CanonicalEvent) => Promise<void>) | undefined;

  constructor(
    readonly clock: Clock,
    /** Waits of the simulated phones (typing before a send); tests may pass their own. */
    readonly sleep: (ms: number) => Promise<void> = (ms) => sleepFor(ms).then(() => undefined),
  ) {}

  newPairingCode(number: string, session: SandboxSession, ttlMs: number): string {
    for (const [code, entry] of this.pairingCodes) if (entry.session === session) this.pairingCodes.delete(code);
    let code: string;
    do code = String(randomInt(0, 100_000_000)).padStart(8, '0');
    while (this.pairingCodes.has(code));
    this.pairingCodes.set(code, { code, number, session, expiresAt: this.clock.now() + ttlMs });
    return code;
  }

  /** The phone `number` confirms a pairing code. */
  async confirmPairingCode(number: string, code: string): Promise<SandboxSession> {
    const entry = this.pairingCodes.get(code);
    if (!entry || entry.expiresAt <= this.clock.now()) throw errors.notFound('pairing code');
    if (entry.number !== number) {
      throw errors.pairingNumberMismatch(entry.number, number);
    }
    this.pairingCodes.delete(code);
    await entry.session.completePairing(number);
    return entry.session;
  }

  /** Sessions ask before linking: one number can be linked to one sandbox instance at a time. */
  claimNumber(number: string, session: SandboxSession): void {
    const holder = this.linked.get(number);
    if (holder && holder !== session) {
      throw errors.numberInUse(number, holder.instanceName);
    }
    this.linked.set(number, session);
  }

  releaseNumber(number: string, session: SandboxSession): void {
    if (this.linked.get(number) === session) this.linked.delete(number);
    for (const [code, entry] of this.pairingCodes) if (entry.session === session) this.pairingCodes.delete(code);
  }

  sessionOf(number: string): SandboxSession | undefined {
    return this.linked.get(number);
  }

  /** The connected sandbox instance that owns `number`, or a 404 naming it. */
  connectedSession(number: string): SandboxSession {
    const session = this.linked.get(number);
    if (!session || !session.isConnected()) {
      throw errors.sandboxNumberUnknown(number);
    }
    return session;
  }

  /** The session linked to `number` in this process, when it is connected. */
  private connectedHere(number: string): SandboxSession | undefined {
    const session = this.linked.get(number);
    return session?.isConnected() ? session : undefined;
  }

  /** Numbers the network knows by a session or a name. */
  knownNumbers(): Iterable<string> {
    return new Set([...this.linked.keys(), ...this.names.keys()]);
  }

  setName(number: string, name: string): void {
    this.names.set(number, name);
  }

  nameOf(number: string): string {
    return this.linked.get(number)?.instanceName ?? this.names.get(number) ?? number;
  }

  /**
   * Joins the sandbox networks of the other gateway processes on `transport`: from now on a delivery
   * to a number not linked to a connected session here is published there, and what the other
   * processes publish is delivered here when the number is linked to a connected session here.
   */
  span(transport: Topic, log?: SandboxSpanLogger): void {
    if (this.spanTransport) throw new Error(`the sandbox network already spans processes on ${this.spanTransport.description}`);
    this.spanTransport = transport;
    this.spanLog = log;
    transport.subscribe((payload) => this.receiveSpanned(payload));
  }

  /** Whether span() was called: deliveries to numbers not linked here leave this process. */
  get spanned(): boolean {
    return this.spanTransport !== undefined;
  }

  /** Where the SandboxWorld delivers the events other processes emit to numbers linked here. */
  attachEventReceiver(receiver: (to: string, event: CanonicalEvent) => Promise<void>): void {
    this.eventReceiver = receiver;
  }

  /**
   * Publishes an event for the instance linked to `to` in another process (world.emitTo of a number
   * not linked here). Does nothing without span().
   */
  async spanEvent(to: string, event: CanonicalEvent): Promise<void> {
    if (!this.spanTransport) return;
    const { media, ...rest } = event;
    this.publishSpan({
      v: 1,
      origin: this.spanOrigin,
      kind: 'event',
      to,
      event: rest as CanonicalEvent,
      ...(media ? { media: await mediaToWire(media) } : {}),
    });
  }

  /** Delivers a text from any sender (virtual contact or instance) to a linked instance, if any. */
  async deliverText(
    from: string,
    to: string,
    text: string,
    id = newMessageId(),
  ): Promise<{ key: MessageKey; messageTimestamp: number } | undefined> {
    return this.deliver(from, to, { conversation: text }, { id });
  }

  /**
   * Delivers any message payload from `from` to the instance linked to `to`, if one is connected
   * (otherwise the recipient is a virtual contact and the message just arrives). `chat` is the
   * chat it belongs to for the recipient: the sender's address, or `status@broadcast` for stories,
   * where the sender is named as `participant`.
   */
  async deliver(
    from: string,
    to: string,
    message: Record<string, unknown>,
    options: { id?: string; media?: EventMedia; chat?: string; messageTimestamp?: number } = {},
  ): Promise<{ key: MessageKey; messageTimestamp: number } | undefined> {
    const target = this.linked.get(to);
    // A sent message arrives with the time its sender gave it, even when a second turns in between.
    const messageTimestamp = options.messageTimestamp ?? Math.floor(this.clock.now() / 1000);
    // In a status post or a group the chat is not the sender: the sender is named as `participant`.
    const shared = options.chat !== undefined && (options.chat === STATUS_JID || isGroupJid(options.chat));
    const key = { remoteJid: shared ? options.chat! : toJid(from), fromMe: false, id: options.id ?? newMessageId() };
    if (!target || !target.isConnected()) {
      return this.spanTransport ? this.spanMessage(from, to, message, options, key, messageTimestamp, shared) : undefined;
    }
    await target.receive(
      {
        key,
        ...(shared ? { participant: toJid(from) } : {}),
        pushName: this.nameOf(from),
        message,
        messageTimestamp,
      },
      options.media,
    );
    return { key, messageTimestamp };
  }

  /** "typing…", "recording…" or "paused" of `from`, shown to the instance linked to `to`. */
  async deliverPresence(from: string, to: string, presence: SpanPresence): Promise<void> {
    const target = this.linked.get(to);
    if (!target || !target.isConnected()) {
      if (this.spanTransport) this.publishSpan({ v: 1, origin: this.spanOrigin, kind: 'presence', to, from, presence });
      return;
    }
    const jid = toJid(from);
    await target.notify({ type: 'CHAT_PRESENCE', data: { remoteJid: jid, participant: jid, presence } });
  }

  /**
   * A virtual contact votes in a poll an instance sent. The instance gets a MESSAGE with the vote
   * as the network's `pollUpdateMessage` (options as SHA-256 hashes, already decrypted) and, for
   * convenience, `pollVote` with the option names.
   */
  async deliverPollVote(
    from: string,
    to: string,
    pollMessageId: string,
    selectedOptions: string[],
  ): Promise<{ key: MessageKey; messageTimestamp: number }> {
    // With a span, a number not linked here may be linked in another process; without, it is a 404.
    const target = this.spanTransport ? this.connectedHere(to) : this.connectedSession(to);
    const messageTimestamp = Math.floor(this.clock.now() / 1000);
    const key = { remoteJid: toJid(from), fromMe: false, id: newMessageId() };
    const incoming: IncomingMessage = {
      key,
      pushName: this.nameOf(from),
      message: {
        pollUpdateMessage: {
          pollCreationMessageKey: { remoteJid: toJid(from), fromMe: true, id: pollMessageId },
          vote: { selectedOptions: selectedOptions.map((name) => createHash('sha256').update(name).digest('base64')) },
          senderTimestampMs: this.clock.now(),
        },
      },
      pollVote: { pollMessageId, selectedOptions },
      messageTimestamp,
    };
    if (target) await target.receive(incoming);
    else this.publishSpan({ v: 1, origin: this.spanOrigin, kind: 'pollVote', to, from, incoming });
    return { key, messageTimestamp };
  }

  // --- the span (span.ts) ---

  private async spanMessage(
    from: string,
    to: string,
    message: Record<string, unknown>,
    options: { media?: EventMedia; chat?: string },
    key: MessageKey,
    messageTimestamp: number,
    shared: boolean,
  ): Promise<{ key: MessageKey; messageTimestamp: number }> {
    const incoming: IncomingMessage = {
      key,
      ...(shared ? { participant: toJid(from) } : {}),
      pushName: this.nameOf(from),
      message,
      messageTimestamp,
    };
    this.publishSpan({
      v: 1,
      origin: this.spanOrigin,
      kind: 'message',
      to,
      from,
      ...(options.chat !== undefined ? { chat: options.chat } : {}),
      incoming,
      ...(options.media ? { media: await mediaToWire(options.media) } : {}),
    });
    return { key, messageTimestamp };
  }

  /** Best-effort like the local path to a number nobody holds: a message that cannot leave is dropped. */
  private publishSpan(message: SpanMessage): void {
    try {
      this.spanTransport?.publish(JSON.stringify(message));
    } catch (err) {
      this.spanLog?.debug({ err, kind: message.kind, to: message.to }, 'a sandbox span message could not be published');
    }
  }

  private receiveSpanned(payload: string): void {
    const message = parseSpanMessage(payload);
    if (!message) {
      this.spanLog?.debug({ via: this.spanTransport?.description }, 'ignored a sandbox span message of unknown shape');
      return;
    }
    if (message.origin === this.spanOrigin) return;
    const target = this.linked.get(message.to);
    // Not linked here: another process holds the number, or nobody does.
    if (!target || !target.isConnected()) return;
    const previous = this.spanQueues.get(message.to) ?? Promise.resolve();
    const next = previous
      .then(() => this.deliverSpanned(message))
      .catch((err: unknown) => {
        this.spanLog?.debug({ err, kind: message.kind, to: message.to }, 'a sandbox span message could not be delivered');
      });
    this.spanQueues.set(message.to, next);
    void next.then(() => {
      if (this.spanQueues.get(message.to) === next) this.spanQueues.delete(message.to);
    });
  }

  /** What the local path does with a delivery, for one received from another process. */
  private async deliverSpanned(message: SpanMessage): Promise<void> {
    // Looked up again: the session may have gone while earlier deliveries to it ran.
    const target = this.linked.get(message.to);
    if (!target || !target.isConnected()) return;
    switch (message.kind) {
      case 'message':
        return target.receive(message.incoming, message.media ? mediaFromWire(message.media) : undefined);
      case 'pollVote':
        return target.receive(message.incoming);
      case 'presence': {
        const jid = toJid(message.from);
        return target.notify({ type: 'CHAT_PRESENCE', data: { remoteJid: jid, participant: jid, presence: message.presence } });
      }
      case 'event': {
        const event: CanonicalEvent = message.media ? { ...message.event, media: mediaFromWire(message.media) } : message.event;
        return this.eventReceiver?.(message.to, event);
      }
    }
  }
}
