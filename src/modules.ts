/**
 * The contract between the gateway and a feature module. A feature folder exports one factory that
 * takes the shared services and returns its routes, hooks and background work; gateway.ts keeps a
 * list of them. A module reaches other features only through what is passed here (or through the
 * gateway's own HTTP routes via `app.inject`), never by importing their internals.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Clock } from './clock.js';
import type { ClusterForwarding } from './cluster/routing.js';
import type { Config } from './config.js';
import type { EventBus } from './events/bus.js';
import type { OutboxDispatcher } from './events/dispatcher.js';
import type { OutboxStore } from './events/outbox.js';
import type { DeadLetterService } from './events/dead-letter-service.js';
import type { WebhookSink } from './events/sinks/webhook.js';
import type { WebSocketHub } from './events/sinks/websocket.js';
import type { CredentialResolvers } from './http/auth.js';
import type { RoutePlugin } from './http/types.js';
import type { InstanceService } from './instance-registry/service.js';
import type { MediaAdmission } from './media/admission.js';
import type { MediaStore } from './media/store.js';
import type { MessageStore } from './message-store/store.js';
import type { MessagingService } from './outgoing/service.js';
import type { SandboxNetwork } from './network/sandbox/network.js';
import type { SandboxWorld } from './network/sandbox/world.js';
import type { SessionRegistry } from './sessions/registry.js';
import type { Storage } from './storage/db.js';
import type { Topic } from './topic.js';

/** An instance's health score (health/): 0 to 100 with the reasons that lowered it. */
export interface HealthSource {
  scoreOf(instanceId: string): Promise<{ score: number; reasons: string[] }>;
}

/** The shared services every module may use. */
export interface ModuleDeps {
  config: Config;
  clock: Clock;
  log: FastifyBaseLogger;
  storage: Storage;
  instances: InstanceService;
  sessions: SessionRegistry;
  /** The one event road: publish events here; add a durable sink with `bus.addDurableSink`. */
  bus: EventBus;
  dispatcher: OutboxDispatcher;
  outbox: OutboxStore;
  /** Dead letters of every channel: listing, retry, bulk retry and purge. */
  deadLetters: DeadLetterService;
  /** The webhook sender: one signing and answer policy for every webhook Waygate posts. */
  webhook: WebhookSink;
  /** Connection state of each configured delivery channel, by name (as /server/health shows it). */
  channelHealth: () => Record<string, { up: boolean; detail?: string }>;
  hub: WebSocketHub;
  media: MediaStore;
  /** Media request bodies held in memory now (MEDIA_INFLIGHT_MAX_BYTES): admit before reading a media body. */
  mediaAdmission: MediaAdmission;
  messages: MessageStore;
  sending: MessagingService;
  /** Add credentials (a user's JWT, a failover-group token) to the one auth hook. */
  resolvers: CredentialResolvers;
  /** Health scores of instances (failover groups pick members by them). */
  health?: HealthSource;
  /** /metrics: register gauges and counters here. */
  metrics: Registry;
  adminKey: string;
  /** True while this process is the active one for its database (sessions and delivery run here). */
  active(): boolean;
  role: () => 'active' | 'standby';
  /** The simulated network (its phones and contacts) and its persistent world (groups, profiles, ...). */
  sandbox: { network: SandboxNetwork; world: SandboxWorld };
  version: string;
  /** Epoch ms this process started. */
  startedAt: number;
  /** Waits of background work (tests pass their own). */
  sleep: (ms: number) => Promise<void>;
  /** Cluster mode only: a topic between the gateway's processes (Redis pub/sub, best-effort). */
  clusterTopic?: (name: string) => Topic;
  /** Cluster mode only: requests other processes passed on, and passing a refused one to its instance's owner. */
  clusterForwarding?: ClusterForwarding;
}

export interface GatewayModule {
  readonly name: string;
  /** Registered under /api/v1 and again unprefixed (deprecated). */
  routes?: RoutePlugin[];
  /** Registered once, outside the versioned tree (e.g. /mcp, the web interface at /). */
  rootRoutes?: RoutePlugin[];
  /** Background work; runs when this process becomes the active one, after sessions resume. */
  start?(): Promise<void>;
  /**
   * Cluster mode: this process no longer leads (its lock connection failed; another process may lead
   * now). Stops what `start` began; `start` runs again when it leads again.
   */
  standDown?(): Promise<void>;
  /** Runs at close, in reverse module order, before storage closes. */
  stop?(): Promise<void>;
}

export type ModuleFactory = (deps: ModuleDeps) => GatewayModule | Promise<GatewayModule>;
