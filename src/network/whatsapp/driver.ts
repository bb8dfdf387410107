/**
 * The WhatsApp network driver: one WhatsAppSession per instance on Baileys, the auth state in the
 * gateway's database, and the per-instance settings (proxy, interactive messages) read from the
 * instance record. Only this folder imports `baileys`; everything else sees the port's types.
 */
import type { UserFacingSocketConfig } from 'baileys';

type ILogger = NonNullable<UserFacingSocketConfig['logger']>;
import type { Kysely } from 'kysely';
import { systemClock, type Clock } from '../../clock.js';
import type { WhatsAppConfig } from '../../config.js';
import type { WriteFence } from '../../storage/fence.js';
import type { Database } from '../../storage/schema.js';
import type { ChatMessages, MessageLookup, NetworkDriver, SessionHost } from '../port.js';
import { shareAsyncLocalStorage } from './async-context.js';
import { WhatsAppAuthStore } from './auth-store.js';
import { agreeKeysNatively } from './key-agreement.js';
import { checkSignaturesNatively } from './signatures.js';
import { systemTimers, type Timers } from './caches.js';
import { LayeredMessageStore, MemoryMessageStore, type DriverMessageStore } from './message-store.js';
import { WhatsAppSession, type InstanceNetworkConfig, type WhatsAppSettings } from './session.js';
import { WhatsAppStateStore } from './state-store.js';

/** A pino-compatible logger (Fastify's); Baileys gets a child of it. */
export interface DriverLogger {
  level: string;
  child(bindings: Record<string, unknown>, options?: { level?: string }): unknown;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** The quieter of two pino levels: Baileys never logs more than the gateway itself. */
function quieter(a: string, b: string): string {
  return LEVELS.indexOf(a) >= LEVELS.indexOf(b) ? a : b;
}

export interface WhatsAppDriverOptions {
  db: Kysely<Database>;
  settings: WhatsAppSettings;
  /** Reads the instance's proxy and settings each time a socket opens or a message goes out. */
  instanceConfig(instanceId: string): Promise<InstanceNetworkConfig>;
  logger: DriverLogger;
  clock?: Clock;
  /** Cluster mode: device keys and credentials are written only by the instance's owner (storage/fence.ts). */
  fence?: WriteFence;
  timers?: Timers;
  random?: () => number;
  /** The gateway's message store, for messages older than the in-memory window. */
  sharedMessages?: MessageLookup;
  /** The gateway's message store for chat history (read, and joined by history-sync messages). */
  chatMessages: ChatMessages;
}

/** The driver's settings from the gateway config. */
export function whatsappSettings(config: WhatsAppConfig): WhatsAppSettings {
  return {
    waWebSocketUrl: config.webSocketUrl,
    qrTimeoutMs: config.qrTimeoutMs,
    qrMaxAttempts: config.qrMaxAttempts,
    reconnect: { baseMs: config.reconnectBaseMs, maxMs: config.reconnectMaxMs },
    connectTimeoutMs: config.connectTimeoutMs,
    connectWaitMs: config.connectWaitMs,
    messageCacheSize: config.messageCacheSize,
    syncFullHistory: config.syncFullHistory,
    resumePerSecond: config.resumePerSecond,
    logLevel: config.logLevel,
  };
}

export class WhatsAppDriver implements NetworkDriver {
  readonly network = 'whatsapp' as const;
  readonly resumePerSecond: number;
  readonly store: WhatsAppAuthStore;
  private readonly messages: DriverMessageStore;
  readonly state: WhatsAppStateStore;
  private readonly chatMessages: ChatMessages;
  private readonly sessions = new Set<WhatsAppSession>();

  constructor(private readonly options: WhatsAppDriverOptions) {
    // Before the first socket: one AsyncLocalStorage for all of Baileys' (async-context.ts),
    // signatures really checked, natively (signatures.ts), keys agreed without the slow import
    // (key-agreement.ts).
    shareAsyncLocalStorage();
    checkSignaturesNatively();
    agreeKeysNatively();
    this.store = new WhatsAppAuthStore(options.db, options.clock ?? systemClock, options.fence);
    this.messages = new LayeredMessageStore(new MemoryMessageStore(options.settings.messageCacheSize), options.sharedMessages);
    this.state = new WhatsAppStateStore(options.db, options.clock ?? systemClock);
    this.chatMessages = options.chatMessages;
    this.resumePerSecond = options.settings.resumePerSecond;
  }

  open(host: SessionHost): WhatsAppSession {
    const { options } = this;
    const level = quieter(options.settings.logLevel, options.logger.level);
    const logger = options.logger.child({ module: 'baileys', instanceId: host.instanceId }, { level }) as ILogger;
    const session = new WhatsAppSession(host, {
      store: this.store,
      messages: this.messages,
      settings: options.settings,
      instanceConfig: (instanceId) => options.instanceConfig(instanceId),
      logger,
      clock: options.clock ?? systemClock,
      timers: options.timers ?? systemTimers,
      random: options.random ?? Math.random,
      state: this.state,
      chatMessages: this.chatMessages,
    });
    this.sessions.add(session);
    return session;
  }

  async forget(instanceId: string): Promise<void> {
    for (const session of this.sessions) if (session.instanceId === instanceId) this.sessions.delete(session);
    await this.messages.forget(instanceId);
    await this.store.forget(instanceId);
  }

  async stop(): Promise<void> {
    const all = [...this.sessions];
    this.sessions.clear();
    await Promise.all(all.map((session) => session.close().catch(() => undefined)));
  }
}
