/**
 * One WhatsApp instance's session on Baileys. Lifecycle operations (connect, reconnect, logout,
 * close, and the reaction to a closed socket) run one at a time under a lock, so an instance never
 * has two sockets. Every (re)connect builds a new socket and attaches fresh listeners; listeners of
 * an older socket are ignored by generation number. The caches (Signal keys, retry counters, device
 * lists, group metadata, the LID directory, the message store) live here, outside the socket, so
 * they survive reconnects.
 *
 * Statuses and events follow the sandbox session (the reference implementation of the port).
 */
import { randomInt } from 'node:crypto';
import makeWASocket, {
  downloadMediaMessage,
  jidNormalizedUser,
  normalizeMessageContent,
  type BaileysEventMap,
  type GroupMetadata,
  type UserFacingSocketConfig,
  type WAMessage,
  type WAMessageKey,
  type WASocket,
} from 'baileys';
import QRCode from 'qrcode';
import type { Clock } from '../../clock.js';
import { errors } from '../../errors.js';
import {
  attachmentOf,
  eventMediaOf,
  isGroupJid,
  jidToNumber,
  type CanonicalEvent,
  type ConnectionData,
  type EventMedia,
  type InstanceStatus,
  type OutgoingMessage,
  type QrSnapshot,
  type SentMessage,
  type Session,
  type SessionHost,
} from '../port.js';
import { BoundedMap } from '../../bounded-maps.js';
import { isLidJid, LidDirectory, normalise } from './addresses.js';
import { authStateFor, type InstanceAuthState, type WhatsAppAuthStore } from './auth-store.js';
import { isUncachedKeyEntry, SerialLock, TtlCache, type Timers } from './caches.js';
import { WhatsAppMessageOps } from './message-ops.js';
import { toStored, type DriverMessageStore } from './message-store.js';
import { CLOSE_CODES, decideOnClose, type BackoffSettings } from './policy.js';
import { decryptVote, pollOptions, tally } from './polls.js';
import { proxyRoutes, type ProxyRoutes } from './proxy.js';
import {
  addressesIn,
  callEvents,
  contactEvents,
  groupEvents,
  historyEvents,
  isUserMessage,
  keyView,
  labelEvents,
  mediaContentOf,
  messageData,
  messageToJson,
  newsletterEvents,
  pollVoteData,
  presenceEvents,
  receiptEvents,
  toSeconds,
  updateEvents,
  upsertEvents,
  type InboundContext,
} from './translate-in.js';
import { planOutgoing, type OutboundContext } from './translate-out.js';
import { WhatsAppCommunities } from './communities.js';
import { WhatsAppGroups } from './groups.js';
import { WhatsAppNewsletters } from './newsletters.js';
import type { OperationsContext } from './operations.js';
import { WhatsAppCalls } from './calls.js';
import type { WhatsAppLink } from './capabilities.js';
import { WhatsAppChats } from './chats.js';
import { WhatsAppLabels } from './labels.js';
import { refusal } from './refusals.js';
import { recordState, type ChatMessageSource, type WhatsAppStateStore } from './state-store.js';
import { WhatsAppUsers } from './users.js';

type ILogger = NonNullable<UserFacingSocketConfig['logger']>;

export interface WhatsAppSettings {
  /** Where the chat socket connects; Baileys' default (WhatsApp's server) when unset. Tests point it at a local server. */
  waWebSocketUrl: string | undefined;
  /** How long each QR is offered; Baileys' default (60 s first, 20 s next) when unset. */
  qrTimeoutMs: number | undefined;
  /** QR codes shown per pairing attempt before giving up with `qr_attempts_exhausted`. */
  qrMaxAttempts: number;
  reconnect: BackoffSettings;
  connectTimeoutMs: number;
  /** How long POST /instance/connect waits for the first QR (or the connection) before answering. */
  connectWaitMs: number;
  /** Messages kept per instance for retries, poll votes and forwards. */
  messageCacheSize: number;
  syncFullHistory: boolean;
  /** Linked sessions reopened per second when the gateway starts. */
  resumePerSecond: number;
  /** Level of Baileys' own log lines (they are chatty). */
  logLevel: string;
}

/** What the session reads about its instance when it opens a socket or sends. */
export interface InstanceNetworkConfig {
  proxyUrl: string | null;
  /** Raw interactive messages (buttons, lists, carousels, pix) are allowed for this instance. */
  interactiveMessages: boolean;
}

export interface SessionDeps {
  store: WhatsAppAuthStore;
  messages: DriverMessageStore;
  settings: WhatsAppSettings;
  instanceConfig(instanceId: string): Promise<InstanceNetworkConfig>;
  logger: ILogger;
  clock: Clock;
  timers: Timers;
  random: () => number;
  /** Chats, contacts, labels and calls kept from events (state-store.ts). */
  state: WhatsAppStateStore;
  /** The gateway's message store: chat history, and history-sync messages added to it. */
  chatMessages: ChatMessageSource;
}

type BoomLike = Error & { output?: { statusCode?: number }; data?: unknown };

function closeCode(error: unknown): number | undefined {
  return (error as BoomLike | undefined)?.output?.statusCode;
}

/** The `type` of a stream error's child (`device_removed`, `replaced`), or a failure's `reason`. */
function closeDetail(error: unknown): string | undefined {
  const data = (error as BoomLike | undefined)?.data as { attrs?: Record<string, string>; reason?: string } | undefined;
  return data?.attrs?.type ?? data?.reason;
}

/** 8 characters of WhatsApp's pairing alphabet (Crockford base32 without 0), all digits: 1-9. */
function newPairingCode(): string {
  return Array.from({ length: 8 }, () => String(randomInt(1, 10))).join('');
}

export class WhatsAppSession implements Session {
  private status: InstanceStatus;
  private number: string | null;
  private auth: InstanceAuthState | undefined;
  private socket: WASocket | undefined;
  private socketOpen = false;
  private generation = 0;
  /** Generations closed on purpose: their close events are not connection failures. */
  private readonly closedOnPurpose = new Set<number>();
  private qr: QrSnapshot | undefined;
  private qrAttempts = 0;
  private showedQr = false;
  private justPaired = false;
  private reconnectAttempt = 0;
  private reconnectTimer: unknown;
  private openDeadline: NodeJS.Timeout | undefined;
  private closed = false;
  /** Connected when the gateway started and not yet re-opened: status events are not repeated. */
  private resuming: boolean;
  private proxy: ProxyRoutes | undefined;
  private readonly lock = new SerialLock();
  private inbox: Promise<void> = Promise.resolve();
  private progressWaiters: (() => void)[] = [];

  private readonly keyCache: TtlCache;
  private readonly retryCounters: TtlCache;
  private readonly deviceCache: TtlCache;
  private readonly groupCache: TtlCache;
  private readonly directory: LidDirectory;
  /** Ids this gateway sent: their echo from Baileys is not a new MESSAGE. */
  private readonly sentIds = new BoundedMap<string, true>(2000);
  /** Latest vote of each voter per poll (option hashes), for the running tally. */
  private readonly pollVotes = new BoundedMap<string, Map<string, string[]>>(500);
  /** Reactions, deletions, edits, read receipts and chat presence (message-ops.ts). */
  readonly messages = new WhatsAppMessageOps({
    socket: () => (this.socketOpen ? this.socket : undefined),
    status: () => this.status,
    ownJids: () => [this.auth?.state.creds.me?.id, this.auth?.state.creds.me?.lid].filter((jid): jid is string => Boolean(jid)),
    addresses: () => this.directory,
    original: (id) => this.deps.messages.findById(this.host.instanceId, id),
    sent: async (message) => {
      if (message.key.id) this.sentIds.set(message.key.id, true);
      await this.remember(message);
    },
    emit: (event) => this.emit(event),
    now: () => this.deps.clock.now(),
  });
  private readonly inbound: InboundContext;
  private readonly groupOps: WhatsAppGroups;
  private readonly communityOps: WhatsAppCommunities;
  private readonly newsletterOps: WhatsAppNewsletters;
  private readonly chatOps: WhatsAppChats;
  private readonly userOps: WhatsAppUsers;
  private readonly labelOps: WhatsAppLabels;
  private readonly callOps: WhatsAppCalls;

  constructor(
    private readonly host: SessionHost,
    private readonly deps: SessionDeps,
  ) {
    this.status = host.status;
    this.number = host.number;
    this.resuming = host.status === 'CONNECTED' && host.number !== null;
    const { clock } = deps;
    this.keyCache = new TtlCache(50_000, 5 * 60_000, clock, isUncachedKeyEntry);
    this.retryCounters = new TtlCache(10_000, 60 * 60_000, clock);
    this.deviceCache = new TtlCache(5_000, 5 * 60_000, clock);
    this.groupCache = new TtlCache(1_000, 5 * 60_000, clock);
    this.directory = new LidDirectory(deps.store, host.instanceId);
    this.inbound = { addresses: this.directory, now: () => clock.now() };
    const operations: OperationsContext = {
      socket: () => this.openSocketOrFail(),
      addresses: this.directory,
      groupCache: this.groupCache,
      ownJids: () =>
        [this.auth?.state.creds.me?.id, this.auth?.state.creds.me?.lid].filter((jid): jid is string => Boolean(jid)).map(normalise),
      send: (message) => this.send(message),
    };
    this.groupOps = new WhatsAppGroups(operations);
    this.communityOps = new WhatsAppCommunities(operations, this.groupOps);
    this.newsletterOps = new WhatsAppNewsletters(operations);
    const link: WhatsAppLink = {
      ...operations,
      instanceId: host.instanceId,
      creds: () => {
        const creds = this.auth?.state.creds;
        if (!creds) throw errors.notConnected(this.status);
        return creds;
      },
      saveCreds: () => this.auth?.saveCreds() ?? Promise.resolve(),
      state: deps.state,
      messages: deps.chatMessages,
      emit: (event) => this.emit(event),
      now: () => Math.floor(clock.now() / 1000),
    };
    this.chatOps = new WhatsAppChats(link);
    this.userOps = new WhatsAppUsers(link);
    this.labelOps = new WhatsAppLabels(link);
    this.callOps = new WhatsAppCalls(link);
  }

  get instanceId(): string {
    return this.host.instanceId;
  }

  /** For tests and diagnostics: the status as the session sees it. */
  currentStatus(): InstanceStatus {
    return this.status;
  }

  // Capabilities exist while there is a socket (the registry answers 409 before that); each call
  // still needs the socket open and answers 409 instance_not_connected otherwise.
  get groups(): WhatsAppGroups | undefined {
    return this.socket ? this.groupOps : undefined;
  }

  get communities(): WhatsAppCommunities | undefined {
    return this.socket ? this.communityOps : undefined;
  }

  get newsletters(): WhatsAppNewsletters | undefined {
    return this.socket ? this.newsletterOps : undefined;
  }

  get chats(): WhatsAppChats | undefined {
    return this.socket ? this.chatOps : undefined;
  }

  get users(): WhatsAppUsers | undefined {
    return this.socket ? this.userOps : undefined;
  }

  get labels(): WhatsAppLabels | undefined {
    return this.socket ? this.labelOps : undefined;
  }

  get calls(): WhatsAppCalls | undefined {
    return this.socket ? this.callOps : undefined;
  }

  private openSocketOrFail(): WASocket {
    if (!this.socket || !this.socketOpen) throw errors.notConnected(this.status);
    return this.socket;
  }

  async connect(): Promise<void> {
    this.closed = false;
    const waitForQr = await this.lock.run(async () => {
      if (this.socket) return false;
      if (this.reconnectTimer !== undefined) this.cancelReconnect();
      const auth = await this.authState();
      // An explicit connect is a new pairing attempt: the QR count starts again.
      if (!auth.isLinked()) this.qrAttempts = 0;
      await this.openSocket(auth.isLinked() ? 'connecting' : undefined);
      return !auth.isLinked();
    });
    if (waitForQr) await this.waitForProgress();
  }

  currentQr(): QrSnapshot | undefined {
    return this.status === 'QRCODE' ? this.qr : undefined;
  }

  async requestPairingCode(number: string): Promise<string> {
    if (this.status === 'CONNECTED') throw errors.conflict('instance is already connected');
    if ((await this.authState()).isLinked()) throw errors.conflict('instance is already linked to a phone; log out first');
    if (this.status !== 'QRCODE') await this.connect();
    const socket = this.socket;
    if (!socket || this.status !== 'QRCODE') {
      throw errors.networkUnavailable(`WhatsApp did not offer pairing (status ${this.status}); try again`);
    }
    const code = newPairingCode();
    try {
      return await socket.requestPairingCode(number, code);
    } catch (error) {
      throw refusal(error, { notFound: `number ${number}`, refused: `WhatsApp refused a pairing code for ${number}` });
    }
  }

  async reconnect(): Promise<void> {
    if (!(await this.authState()).isLinked()) {
      await this.connect();
      return;
    }
    this.closed = false;
    await this.lock.run(async () => {
      this.cancelReconnect();
      this.endSocket();
      this.resuming = false;
      await this.setStatus('DISCONNECTED', 'reconnect_requested');
      await this.openSocket('reconnecting');
    });
  }

  async logout(): Promise<void> {
    await this.lock.run(async () => {
      this.cancelReconnect();
      const socket = this.socket;
      if (socket && this.socketOpen) {
        this.closedOnPurpose.add(this.generation);
        // Tells WhatsApp to remove this linked device, then ends the socket.
        await socket.logout('logout requested').catch((error: unknown) => this.deps.logger.warn({ err: error }, 'logout request failed'));
      }
      this.endSocket();
      await this.wipe();
      await this.setStatus('LOGGED_OUT', 'logged_out');
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.lock.run(async () => {
      this.cancelReconnect();
      this.endSocket();
      await this.proxy?.close().catch(() => undefined);
      this.proxy = undefined;
      this.settleProgress();
    });
    await this.inbox;
  }

  async send(message: OutgoingMessage): Promise<SentMessage> {
    const socket = this.socket;
    if (!socket || !this.socketOpen) throw errors.notConnected(this.status);
    const config = await this.deps.instanceConfig(this.host.instanceId);
    const context: OutboundContext = {
      interactiveMessages: config.interactiveMessages,
      findMessage: (id) => this.deps.messages.findById(this.host.instanceId, id),
      upload: socket.waUploadToServer,
    };
    const plan = await planOutgoing(message, context);
    if (isGroupJid(plan.jid)) await this.warmGroup(socket, plan.jid);
    if ('delayMs' in message && message.delayMs)
      await this.showTyping(socket, plan.jid, message.delayMs, message.kind === 'media' && message.voiceNote === true);
    let sent: WAMessage | undefined;
    try {
      if (plan.kind === 'content') {
        sent = await socket.sendMessage(plan.jid, plan.content, plan.options);
      } else {
        const id = await socket.relayMessage(plan.jid, plan.message, { additionalNodes: plan.additionalNodes });
        sent = {
          key: { remoteJid: plan.jid, fromMe: true, id },
          message: plan.message,
          messageTimestamp: Math.floor(this.deps.clock.now() / 1000),
        };
      }
    } catch (error) {
      throw refusal(error, { notFound: `chat ${plan.jid}`, refused: `WhatsApp does not let this account send to ${plan.jid}` });
    }
    if (!sent?.key.id) throw errors.networkError('WhatsApp did not accept the message');
    this.sentIds.set(sent.key.id, true);
    const stored = toStored(sent);
    if (stored) await this.deps.messages.put(this.host.instanceId, stored);
    const key = keyView(sent.key, this.directory) as unknown as SentMessage['key'];
    const content = sent.message ? messageToJson(sent.message) : {};
    const messageTimestamp = toSeconds(sent.messageTimestamp) || Math.floor(this.deps.clock.now() / 1000);
    const media = sentMedia(message);
    // The message is out: a failure to record its event must not turn the send into an error (a retry would send it twice).
    await this.emit({
      type: 'SEND_MESSAGE',
      data: { key, message: content, messageTimestamp, status: 'SENT' },
      ...(media ? { media } : {}),
    });
    return { key, message: content, messageTimestamp, status: 'SENT' };
  }

  // --- socket lifecycle (always under the lock) ---

  private async authState(): Promise<InstanceAuthState> {
    // A pair that cannot be kept must not fail Baileys' key write (it is already stored).
    this.auth ??= await authStateFor(this.deps.store, this.host.instanceId, this.keyCache, (pairs) =>
      this.tolerate('learn addresses', () => this.directory.rememberUsers(pairs)),
    );
    return this.auth;
  }

  private async openSocket(reason: string | undefined): Promise<void> {
    const auth = await this.authState();
    const { creds } = auth.state;
    // A pairing code that was requested but never confirmed leaves `me` without the phone's
    // signature; logging in with it would fail, so start a fresh registration instead.
    if (creds.me && !creds.account) {
      delete creds.me;
      creds.pairingCode = undefined;
      await auth.saveCreds();
    }
    const config = await this.deps.instanceConfig(this.host.instanceId);
    await this.proxy?.close().catch(() => undefined);
    this.proxy = config.proxyUrl ? proxyRoutes(config.proxyUrl) : undefined;
    if (!this.resuming && this.status !== 'CONNECTING') await this.setStatus('CONNECTING', reason);

    const { settings } = this.deps;
    this.generation += 1;
    const generation = this.generation;
    for (const old of this.closedOnPurpose) if (old < generation - 1) this.closedOnPurpose.delete(old);
    this.showedQr = false;
    this.socketOpen = false;
    const socket = makeWASocket({
      ...(settings.waWebSocketUrl ? { waWebSocketUrl: settings.waWebSocketUrl } : {}),
      ...(settings.qrTimeoutMs ? { qrTimeout: settings.qrTimeoutMs } : {}),
      auth: auth.state,
      logger: this.deps.logger,
      // Baileys times every frame it sends with this (two stack traces formatted, a timer and an
      // error each: ~12 % of a resume's CPU); the session keeps the opening's deadline itself.
      connectTimeoutMs: 0,
      markOnlineOnConnect: false,
      syncFullHistory: settings.syncFullHistory,
      ...(this.proxy
        ? { agent: this.proxy.agent as never, fetchAgent: this.proxy.agent as never, options: { dispatcher: this.proxy.dispatcher } }
        : {}),
      msgRetryCounterCache: this.retryCounters,
      userDevicesCache: this.deviceCache,
      cachedGroupMetadata: async (jid) => this.groupCache.get<GroupMetadata>(jid),
      getMessage: async (key) => (await this.deps.messages.get(this.host.instanceId, key))?.message,
    });
    this.socket = socket;
    this.armOpenDeadline(generation, socket);
    socket.ev.process((events) => {
      // Serialised: the translation of one batch is async (LID look-ups) and events must keep their order.
      this.inbox = this.inbox
        .then(() => this.onEvents(generation, events))
        .catch((error: unknown) => this.deps.logger.error({ err: error }, 'whatsapp event handling failed'));
    });
  }

  /**
   * A socket that has neither opened nor shown a QR within connectTimeoutMs (the WebSocket upgrade,
   * the Noise handshake, the login) is closed as timed out, and the close policy reconnects. Once it
   * is open, Baileys' keep-alive finds a dead link. A real timer, not `deps.timers`: tests fire those
   * (the reconnects) by hand, and this one must not be among them.
   */
  private armOpenDeadline(generation: number, socket: WASocket): void {
    this.disarmOpenDeadline();
    this.openDeadline = setTimeout(() => {
      this.openDeadline = undefined;
      if (generation !== this.generation || this.socket !== socket) return;
      const timedOut = Object.assign(new Error('WhatsApp did not open the connection in time'), {
        output: { statusCode: CLOSE_CODES.timedOut },
      });
      void socket.end(timedOut);
      // A silent peer never answers the WebSocket's closing handshake, which ws would await for 30 s
      // before the close is reported: drop the connection instead (Baileys' close still carries 408).
      (socket.ws as unknown as { socket: { terminate(): void } | null }).socket?.terminate();
    }, this.deps.settings.connectTimeoutMs);
    this.openDeadline.unref();
    // As Baileys emits it, not after the session's queue of event batches (it may lag under load).
    socket.ev.on('connection.update', (update) => {
      if (generation === this.generation && (update.qr || update.connection === 'open')) this.disarmOpenDeadline();
    });
  }

  private disarmOpenDeadline(): void {
    if (this.openDeadline !== undefined) clearTimeout(this.openDeadline);
    this.openDeadline = undefined;
  }

  /** Ends the current socket on purpose (its close event is then ignored). */
  private endSocket(): void {
    this.disarmOpenDeadline();
    const socket = this.socket;
    this.socket = undefined;
    this.socketOpen = false;
    if (!socket) return;
    this.closedOnPurpose.add(this.generation);
    void socket.end(undefined);
  }

  private cancelReconnect(): void {
    if (this.reconnectTimer !== undefined) this.deps.timers.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
  }

  private async wipe(): Promise<void> {
    const auth = this.auth;
    this.auth = undefined;
    this.keyCache.flushAll();
    this.retryCounters.flushAll();
    this.deviceCache.flushAll();
    this.groupCache.flushAll();
    if (auth) await auth.state.keys.clear?.();
    await this.deps.store.wipe(this.host.instanceId);
    await this.deps.state.forgetAccount(this.host.instanceId);
    this.number = null;
    this.qr = undefined;
    this.qrAttempts = 0;
    this.resuming = false;
  }

  private async onClose(generation: number, error: unknown): Promise<void> {
    if (generation !== this.generation || this.closedOnPurpose.has(generation)) return;
    this.disarmOpenDeadline();
    this.socket = undefined;
    this.socketOpen = false;
    this.resuming = false;
    this.qr = undefined;
    if (this.closed) return;
    const auth = await this.authState();
    const decision = decideOnClose(
      {
        code: closeCode(error),
        detail: closeDetail(error),
        linked: auth.isLinked(),
        showedQr: this.showedQr,
        attempt: this.reconnectAttempt,
      },
      this.deps.settings.reconnect,
      this.deps.random,
    );
    this.deps.logger.info({ code: closeCode(error), decision }, 'whatsapp socket closed');
    switch (decision.action) {
      case 'reconnect':
        if (decision.delayMs === 0) {
          await this.setStatus(decision.status, decision.reason);
          await this.openSocket(decision.reason);
          return;
        }
        this.reconnectAttempt += 1;
        this.reconnectTimer = this.deps.timers.setTimeout(() => {
          this.reconnectTimer = undefined;
          void this.lock
            .run(async () => {
              if (this.closed || this.socket) return;
              await this.openSocket('reconnecting');
            })
            .catch((err: unknown) => this.deps.logger.error({ err }, 'whatsapp reconnect failed'));
        }, decision.delayMs);
        await this.setStatus(decision.status, decision.reason);
        this.settleProgress();
        return;
      case 'stop':
        await this.setStatus(decision.status, decision.reason);
        this.settleProgress();
        return;
      case 'logout':
        // The phone removed this device (or WhatsApp logged it out): the keys are useless now.
        await this.wipe();
        await this.setStatus('LOGGED_OUT', decision.reason);
        this.settleProgress();
        return;
    }
  }

  // --- events ---

  /**
   * Runs a step of event handling whose failure must not cost the batch its events: Baileys has
   * already acknowledged them to WhatsApp, so skipping the translation would lose them for good.
   */
  private async tolerate(what: string, step: () => Promise<unknown>): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.deps.logger.error({ err: error, instanceId: this.host.instanceId }, `whatsapp: could not ${what}; events go on`);
    }
  }

  private async onEvents(generation: number, events: Partial<BaileysEventMap>): Promise<void> {
    const auth = this.auth;
    // Creds are saved whatever socket they came from: Baileys mutates the one shared creds object.
    if (events['creds.update'] && auth) await this.tolerate('save creds', () => auth.saveCreds());
    const connection = events['connection.update'];
    if (generation !== this.generation) {
      if (connection?.connection === 'close') await this.lock.run(() => this.onClose(generation, connection.lastDisconnect?.error));
      return;
    }
    if (connection) await this.onConnectionUpdate(generation, connection);
    await this.tolerate('learn addresses', () => this.learnAddresses(events));
    await this.tolerate('look up addresses', () => this.directory.prefetch(addressesIn(events)));
    await this.tolerate('keep chat state', () =>
      recordState(this.deps.state, this.deps.chatMessages, this.host.instanceId, events, this.directory, this.deps.clock.now()),
    );
    const out: CanonicalEvent[] = [];
    // History-sync messages are not kept in memory: recordState put them in the gateway's message
    // store, where retries, polls and forwards find them (the memory store's second level). Kept,
    // 5,000 of them per first link would also hold the whole inflated history blob: their bytes
    // fields are views into it.
    const history = events['messaging-history.set'];
    if (history) out.push(...historyEvents(history, this.inbound));
    const upsert = events['messages.upsert'];
    if (upsert) {
      for (const message of upsert.messages) dropHistoryPayload(message);
      // Only what users send: a retry, poll or forward never needs protocol plumbing again, and a
      // history-sync notification carries its whole inline payload (up to megabytes).
      await this.tolerate('remember messages', async () => {
        for (const message of upsert.messages) if (isUserMessage(message)) await this.remember(message);
      });
      out.push(
        ...upsertEvents(
          upsert,
          this.inbound,
          (id) => this.sentIds.has(id),
          (message) => this.mediaOf(message),
        ),
      );
      for (const message of upsert.messages) {
        await this.tolerate('decrypt a poll vote', async () => {
          const vote = await this.pollVote(message);
          if (vote) out.push(vote);
        });
      }
    }
    if (events['messages.update']) out.push(...updateEvents(events['messages.update'], this.inbound));
    if (events['message-receipt.update']) out.push(...receiptEvents(events['message-receipt.update'], this.inbound));
    if (events['presence.update']) out.push(...presenceEvents(events['presence.update'], this.inbound));
    if (events.call) out.push(...callEvents(events.call, this.inbound));
    if (events['contacts.upsert']) out.push(...contactEvents(events['contacts.upsert'], this.inbound, 'upsert'));
    if (events['contacts.update']) out.push(...contactEvents(events['contacts.update'], this.inbound, 'update'));
    if (events['groups.upsert']) {
      for (const group of events['groups.upsert']) this.groupCache.set(group.id, group);
      out.push(...groupEvents({ kind: 'upsert', groups: events['groups.upsert'] }, this.inbound));
    }
    if (events['groups.update']) {
      for (const group of events['groups.update']) if (group.id) this.groupCache.del(group.id);
      out.push(...groupEvents({ kind: 'update', groups: events['groups.update'] }, this.inbound));
    }
    if (events['group-participants.update']) {
      this.groupCache.del(events['group-participants.update'].id);
      out.push(...groupEvents({ kind: 'participants', update: events['group-participants.update'] }, this.inbound));
    }
    if (events['labels.edit']) out.push(...labelEvents({ kind: 'edit', label: events['labels.edit'] }, this.inbound));
    if (events['labels.association']) out.push(...labelEvents({ kind: 'association', change: events['labels.association'] }, this.inbound));
    if (events['newsletter.reaction']) out.push(...newsletterEvents({ kind: 'reaction', event: events['newsletter.reaction'] }));
    if (events['newsletter.view']) out.push(...newsletterEvents({ kind: 'view', event: events['newsletter.view'] }));
    if (events['newsletter-participants.update'])
      out.push(...newsletterEvents({ kind: 'participants', event: events['newsletter-participants.update'] }));
    if (events['newsletter-settings.update'])
      out.push(...newsletterEvents({ kind: 'settings', event: events['newsletter-settings.update'] }));
    for (const event of out) await this.emit(event);
    if (connection?.connection === 'close') await this.lock.run(() => this.onClose(generation, connection.lastDisconnect?.error));
  }

  private async onConnectionUpdate(generation: number, update: BaileysEventMap['connection.update']): Promise<void> {
    if (update.qr) await this.onQr(generation, update.qr);
    if (update.isNewLogin) this.justPaired = true;
    if (update.connection === 'open') {
      const creds = this.auth?.state.creds;
      this.socketOpen = true;
      this.qr = undefined;
      this.qrAttempts = 0;
      this.reconnectAttempt = 0;
      const meId = creds?.me?.id;
      if (meId) {
        this.number = jidToNumber(normalise(meId)) ?? this.number;
        if (creds.me?.lid) await this.directory.remember([{ lid: creds.me.lid, pn: meId }]);
      }
      const reason = this.justPaired ? 'paired' : this.resuming ? undefined : 'connected';
      this.justPaired = false;
      if (this.resuming && this.status === 'CONNECTED') this.resuming = false;
      else await this.setStatus('CONNECTED', reason);
      this.settleProgress();
    }
  }

  private async onQr(generation: number, text: string): Promise<void> {
    this.qrAttempts += 1;
    this.showedQr = true;
    if (this.qrAttempts > this.deps.settings.qrMaxAttempts) {
      // Nobody scanned: stop offering codes. The close of this socket is on purpose.
      this.endSocket();
      this.qr = undefined;
      await this.setStatus('DISCONNECTED', 'qr_attempts_exhausted');
      this.settleProgress();
      return;
    }
    const attempt = this.qrAttempts;
    const qrcode = await QRCode.toDataURL(text, { errorCorrectionLevel: 'M', margin: 2, width: 264 });
    if (generation !== this.generation) return;
    const lifetime = this.deps.settings.qrTimeoutMs ?? (attempt === 1 ? 60_000 : 20_000);
    this.qr = { qrcode, code: text, attempt, expiresAt: this.deps.clock.now() + lifetime };
    this.status = 'QRCODE';
    await this.emit({ type: 'CONNECTION', data: { status: 'QRCODE' } });
    await this.emit({ type: 'QRCODE', data: { qrcode, code: text, attempt } });
    this.settleProgress();
  }

  /** Stores messages for getMessage, poll votes and forwards. */
  private async remember(message: WAMessage): Promise<void> {
    const stored = toStored(message);
    if (stored) await this.deps.messages.put(this.host.instanceId, stored);
  }

  /** LID <-> phone pairs the batch reveals, persisted before translation uses them. */
  private async learnAddresses(events: Partial<BaileysEventMap>): Promise<void> {
    const pairs: { lid?: string | null; pn?: string | null }[] = [];
    const fromKey = (key: WAMessageKey) => {
      if (key.remoteJid && key.remoteJidAlt) pairs.push({ lid: key.remoteJid, pn: key.remoteJidAlt });
      if (key.participant && key.participantAlt) pairs.push({ lid: key.participant, pn: key.participantAlt });
    };
    const mapping = events['lid-mapping.update'];
    if (mapping) pairs.push({ lid: mapping.lid, pn: mapping.pn });
    for (const m of events['messages.upsert']?.messages ?? []) fromKey(m.key);
    const history = events['messaging-history.set'];
    for (const pair of history?.lidPnMappings ?? []) pairs.push(pair);
    for (const m of history?.messages ?? []) fromKey(m.key);
    for (const c of [...(events['contacts.upsert'] ?? []), ...(events['contacts.update'] ?? []), ...(history?.contacts ?? [])]) {
      if (c.lid && c.phoneNumber) pairs.push({ lid: c.lid, pn: c.phoneNumber });
      else if (c.id && (c.lid || c.phoneNumber)) pairs.push({ lid: c.id, pn: c.lid ?? c.phoneNumber });
    }
    const call = events.call ?? [];
    for (const c of call) if (c.callerPn) pairs.push({ lid: c.from, pn: c.callerPn });
    if (pairs.length > 0) await this.directory.remember(pairs);
  }

  /**
   * A poll vote arrives encrypted with the poll's secret (kept in the stored poll message). The
   * sender encrypted with the addresses it knows — phone or LID, for voter and poll creator — so
   * each combination is tried until the AES-GCM tag verifies.
   */
  private async pollVote(message: WAMessage): Promise<CanonicalEvent | undefined> {
    const update = normalizeMessageContent(message.message)?.pollUpdateMessage;
    const pollKey = update?.pollCreationMessageKey;
    if (!update?.vote || !pollKey?.id) return undefined;
    const poll = await this.deps.messages.get(this.host.instanceId, pollKey);
    const pollContent = normalizeMessageContent(poll?.message);
    const creation = pollContent?.pollCreationMessage ?? pollContent?.pollCreationMessageV2 ?? pollContent?.pollCreationMessageV3;
    const secret = poll?.message.messageContextInfo?.messageSecret;
    if (!creation || !secret) {
      return {
        type: 'MESSAGE',
        data: {
          ...messageData(message, this.directory),
          pollVote: { pollKey: keyView(pollKey, this.directory), decrypted: false, reason: 'poll_not_found' },
        },
      };
    }
    const me = this.auth?.state.creds.me;
    const own = [me?.id, me?.lid].filter((jid): jid is string => Boolean(jid)).map((jid) => jidNormalizedUser(jid));
    const withAlternates = (jid: string | null | undefined, alt?: string | null): string[] => {
      if (!jid) return [];
      const plain = jidNormalizedUser(jid);
      const other = alt ? jidNormalizedUser(alt) : isLidJid(plain) ? this.directory.phoneOf(plain) : this.directory.lidOf(plain);
      return other ? [plain, other] : [plain];
    };
    const creators = pollKey.fromMe ? own : withAlternates(pollKey.participant ?? pollKey.remoteJid);
    const voters = message.key.fromMe
      ? own
      : withAlternates(message.key.participant ?? message.key.remoteJid, message.key.participantAlt ?? message.key.remoteJidAlt);
    const decrypted = decryptVote(update.vote, pollKey.id, secret, creators, voters);
    if (!decrypted) {
      return {
        type: 'MESSAGE',
        data: {
          ...messageData(message, this.directory),
          pollVote: { pollKey: keyView(pollKey, this.directory), decrypted: false, reason: 'decryption_failed' },
        },
      };
    }
    const names = pollOptions(creation);
    const votes = this.pollVotes.get(pollKey.id) ?? new Map<string, string[]>();
    votes.set(this.directory.resolve(decrypted.voterJid).jid, decrypted.hashes);
    this.pollVotes.set(pollKey.id, votes);
    const chosen = decrypted.hashes.map((hash) => names.get(hash) ?? 'unknown');
    return { type: 'MESSAGE', data: pollVoteData(message, pollKey, chosen, tally(names, votes), this.directory) };
  }

  /** "typing…" (or "recording…" before a voice note) for `ms`, as the sender asked. */
  private async showTyping(socket: WASocket, jid: string, ms: number, recording: boolean): Promise<void> {
    await socket.sendPresenceUpdate(recording ? 'recording' : 'composing', jid).catch(() => undefined);
    await new Promise<void>((resolve) => this.deps.timers.setTimeout(resolve, ms));
    await socket.sendPresenceUpdate('paused', jid).catch(() => undefined);
  }

  /** Received media: the registry downloads (and Baileys decrypts) it once, through the instance proxy. */
  private mediaOf(message: WAMessage): EventMedia | undefined {
    const media = mediaContentOf(message.message);
    const socket = this.socket;
    if (!media || !socket) return undefined;
    const dispatcher = this.proxy?.dispatcher;
    return {
      ...media,
      load: () =>
        downloadMediaMessage(message, 'buffer', dispatcher ? { options: { dispatcher } } : {}, {
          logger: this.deps.logger,
          reuploadRequest: (m) => socket.updateMediaMessage(m),
        }),
    };
  }

  private async warmGroup(socket: WASocket, jid: string): Promise<void> {
    if (this.groupCache.get(jid)) return;
    try {
      this.groupCache.set(jid, await socket.groupMetadata(jid));
    } catch (error) {
      throw refusal(error, { notFound: `group ${jid}`, refused: `this account may not send to group ${jid}` });
    }
  }

  // --- status and events ---

  private async setStatus(status: InstanceStatus, reason?: string): Promise<void> {
    this.status = status;
    const data: ConnectionData = { status };
    if (this.number !== null && status !== 'LOGGED_OUT') data.number = this.number;
    if (reason) data.reason = reason;
    await this.emit({ type: 'CONNECTION', data: { ...data } });
  }

  private async emit(event: CanonicalEvent): Promise<void> {
    try {
      await this.host.emit(event);
    } catch (error) {
      this.deps.logger.error({ err: error, event: event.type }, 'could not record a whatsapp event');
    }
  }

  /** Resolves when the pairing attempt has visibly started (QR, open, stop) or after connectWaitMs. */
  private waitForProgress(): Promise<void> {
    if (this.status === 'QRCODE' || this.status === 'CONNECTED' || !this.socket) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = this.deps.timers.setTimeout(() => done(), this.deps.settings.connectWaitMs);
      const done = () => {
        this.deps.timers.clearTimeout(timer);
        this.progressWaiters = this.progressWaiters.filter((waiter) => waiter !== done);
        resolve();
      };
      this.progressWaiters.push(done);
    });
  }

  private settleProgress(): void {
    for (const waiter of [...this.progressWaiters]) waiter();
  }
}

/**
 * A history-sync notification carries its whole history (deflated, up to megabytes) inline. Baileys
 * has read it by the time the message reaches the session (it starts inflating before emitting
 * events), but keeps the message itself for 5 minutes in its recent-message cache (for retries):
 * the payload goes, the notification stays.
 */
export function dropHistoryPayload(message: WAMessage): void {
  const notification = message.message?.protocolMessage?.historySyncNotification;
  if (notification?.initialHistBootstrapInlinePayload) notification.initialHistBootstrapInlinePayload = null;
}

/** The bytes of a media send, for the gateway's media store (it never re-downloads what it sent). */
function sentMedia(message: OutgoingMessage): EventMedia | undefined {
  const media = attachmentOf(message);
  return media ? eventMediaOf(media) : undefined;
}
