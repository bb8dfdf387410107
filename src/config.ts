/**
 * The only reader of process.env. Every setting is parsed and checked here; an invalid value
 * stops the start with a message naming the variable.
 */
import { isIP } from 'node:net';
import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  port: number;
  host: string;
  /**
   * TRUST_PROXY: which peers' X-Forwarded-For / -Proto / -Host are believed (the client's address for
   * per-IP rate limits, logs and sign-in records; https for cookies). false: none (the default);
   * a list: these addresses or CIDR ranges (or the names loopback, linklocal, uniquelocal); true: any peer.
   */
  trustProxy: boolean | string[];
  dataDir: string;
  /** Admin key from GLOBAL_API_KEY; undefined means "generate once and keep in the data folder". */
  globalApiKey: string | undefined;
  databaseUrl: string;
  /** PostgreSQL only: the schema Waygate's tables live in (created when missing). */
  databaseSchema: string | undefined;
  /** DATABASE_PREPARED_STATEMENTS: PostgreSQL prepares repeated statements once per connection (false behind a transaction-mode pooler). */
  databasePreparedStatements: boolean;
  /** Delivered events are kept this long in the outbox, then pruned. */
  outboxRetentionSeconds: number;
  /** EVENT_COMMIT_SPACING_MS: the shortest time between two commits of events (events/bus.ts). */
  eventCommitSpacingMs: number;
  /** EVENT_ARCHIVE_DAYS: pruned events move to the event archive (backfills read it) for this long; 0 keeps no archive. */
  eventArchiveDays: number;
  /** admin/ (docs/operations.md): alert evaluation period and backfill pacing. */
  admin: { alertEvalIntervalMs: number; backfillRatePerSecond: number };
  /** How often a standby process tries to become the active one (PostgreSQL). */
  standbyPollMs: number;
  /**
   * Cluster mode (docs/deployment.md): set by CLUSTER_SECRET, PostgreSQL only. Every process is
   * active and holds the sessions of the instances it leases; requests for others are forwarded.
   */
  cluster: ClusterConfig | undefined;
  tokenGraceSeconds: number;
  /** Authenticated tokens kept in memory (0 disables) and for how long; see TokenCache. */
  tokenCache: { size: number; ttlSeconds: number };
  corsOrigin: string;
  kvStoreUrl: string | undefined;
  kvStoreGlobalEvents: boolean;
  /** Prefix of every Redis key and channel Waygate uses, so several deployments can share one Redis. */
  kvStorePrefix: string;
  queueBrokerUrl: string | undefined;
  lightBrokerUrl: string | undefined;
  /** Names and timing of the broker event channels (docs/channels.md). */
  channels: {
    /** QUEUE_BROKER_PREFIX: RabbitMQ exchange `<p>.events`, queues `<p>.global` and `<p>.instance.<instanceId>`. */
    queuePrefix: string;
    /** LIGHT_BROKER_PREFIX: NATS subjects `<p>.events.<instanceId>.<EVENT>`, MQTT topics `<p>/events/<instanceId>/<EVENT>`. */
    lightPrefix: string;
    /** KV_STORE_STREAM_MAXLEN: entries kept in the Redis stream `<KV_STORE_PREFIX>events:stream` (0: no stream). */
    kvStreamMaxLen: number;
    /** CHANNEL_PUBLISH_TIMEOUT_MS: a publish not confirmed by the broker within this is a failed attempt. */
    publishTimeoutMs: number;
    /** CHANNEL_RETRY_BASE_MS / CHANNEL_RETRY_MAX_MS: backoff between attempts; brokers retry for ever. */
    retryBaseMs: number;
    retryMaxMs: number;
    /** Limits of the RabbitMQ queues (docs/channels.md, "Limits"); 0 turns a limit off. */
    queueLimits: QueueLimits;
    /** Limits of the JetStream stream `<PREFIX>_EVENTS` (docs/channels.md, "Limits"); 0 turns a limit off. */
    streamLimits: StreamLimits;
  };
  rateLimit: { windowSeconds: number; perIp: number; perKey: number };
  logLevel: LogLevel;
  bodyLimitBytes: number;
  /**
   * allowPrivateUrls (WEBHOOK_ALLOW_PRIVATE_URLS): webhook URLs set with an instance token may reach
   * private addresses. deliveryThread (WEBHOOK_DELIVERY_THREAD): runs of fresh events are POSTed by a
   * worker thread (src/events/sinks/webhook-delivery-thread.ts).
   */
  webhook: {
    timeoutMs: number;
    maxAttempts: number;
    retryBaseMs: number;
    retryMaxMs: number;
    allowPrivateUrls: boolean;
    deliveryThread: boolean;
  };
  /** maxConnectionsPerInstance (WS_MAX_CONNECTIONS_PER_INSTANCE): streams beyond it are refused with 4429. */
  websocket: { maxBufferedBytes: number; pingIntervalMs: number; maxConnectionsPerInstance: number };
  sandbox: { qrIntervalMs: number; qrMaxAttempts: number; reconnectDelayMs: number };
  /** The WhatsApp driver (docs/whatsapp.md). */
  whatsapp: WhatsAppConfig;
  /** Media given to /send routes and media received (docs/media.md). */
  media: MediaConfig;
  /** S3-compatible media store; undefined keeps media in DATA_DIR/media. */
  s3: S3Config | undefined;
  /** Stored messages (quotes, forwards, media downloads) older than this are pruned; 0 keeps them. */
  messageRetentionDays: number;
  /** Pacing of /send/batch/text: default and smallest gap between two sends of one instance. */
  batch: { intervalMs: number; minIntervalMs: number };
  /** HEALTH_INTERVAL_MS: health scores read the delivery backlog and dead-letter counts at most this often. */
  healthIntervalMs: number;
  /** The MCP server at /mcp (docs/mcp.md). */
  mcp: McpConfig;
  /** Users of the web interface (docs/auth.md). */
  auth: AuthConfig;
}

/** RabbitMQ queue arguments; at a length limit the oldest message is dropped (x-overflow drop-head). */
export interface QueueLimits {
  /** QUEUE_BROKER_MESSAGE_TTL_SECONDS: x-message-ttl of every queue (0: messages never expire). */
  messageTtlSeconds: number;
  /** QUEUE_BROKER_GLOBAL_MAX_LENGTH / QUEUE_BROKER_GLOBAL_MAX_BYTES: x-max-length / x-max-length-bytes of `<p>.global`. */
  global: { maxLength: number; maxBytes: number };
  /** QUEUE_BROKER_INSTANCE_MAX_LENGTH / QUEUE_BROKER_INSTANCE_MAX_BYTES: the same for each `<p>.instance.<instanceId>`. */
  instance: { maxLength: number; maxBytes: number };
}

/** JetStream stream limits (discard policy old: the oldest messages go first). */
export interface StreamLimits {
  /** LIGHT_BROKER_STREAM_MAX_AGE_SECONDS: max_age (0: no age limit). */
  maxAgeSeconds: number;
  /** LIGHT_BROKER_STREAM_MAX_MSGS: max_msgs (0: no count limit). */
  maxMessages: number;
  /** LIGHT_BROKER_STREAM_MAX_BYTES: max_bytes (0: no size limit). */
  maxBytes: number;
}

export interface McpConfig {
  /** MCP_ALLOWED_HOSTS: Host header names (no port) /mcp answers; `*` accepts any. Default: loopback names and HOST. */
  allowedHosts: string[] | '*';
  /** MCP_ALLOWED_ORIGINS: browser origins (`scheme://host[:port]`) /mcp accepts; `*` any. Default: http(s) origins on an allowed host. */
  allowedOrigins: string[] | '*' | undefined;
  /** MCP_SESSION_IDLE_SECONDS: a session with no request and no open event stream for this long is closed. */
  sessionIdleSeconds: number;
  /** MCP_MAX_SESSIONS: open sessions per process; more initialisations answer 503. */
  maxSessions: number;
  /** MCP_WAIT_MAX_SECONDS: the longest a `wait_for_message` call may block. */
  waitMaxSeconds: number;
}

export interface AuthConfig {
  /** AUTH_JWT_SECRET: HS256 key of access tokens; unset means "generate once into DATA_DIR/jwt-secret". */
  jwtSecret: string | undefined;
  /** AUTH_ACCESS_TOKEN_SECONDS: lifetime of an access token (JWT). */
  accessTokenSeconds: number;
  /** AUTH_REFRESH_TOKEN_DAYS: lifetime of a refresh token (each refresh issues a new one). */
  refreshTokenDays: number;
  /** AUTH_OPEN_REGISTRATION: anyone may register (as a viewer) after the first user; off: invitations only. */
  openRegistration: boolean;
  /** AUTH_LOGIN_MAX_FAILURES / AUTH_LOGIN_MAX_FAILURES_PER_IP: failed sign-ins before a lock, per account and per IP. */
  maxFailuresPerAccount: number;
  maxFailuresPerIp: number;
  /** AUTH_LOGIN_LOCK_SECONDS: failures are counted over this window and a lock lasts this long. */
  lockSeconds: number;
  /** AUTH_COOKIE_SECURE: mark the refresh cookie Secure even when the request reached us over plain HTTP (behind a TLS proxy). */
  cookieSecure: boolean;
}

export interface WhatsAppConfig {
  /** WHATSAPP_ENABLED: serve instances with network `whatsapp` (off: they answer 503). */
  enabled: boolean;
  /** WHATSAPP_WS_URL: the chat server; unset is WhatsApp's own. Only for test servers. */
  webSocketUrl: string | undefined;
  /** WHATSAPP_QR_TIMEOUT_MS: how long each QR is offered; unset keeps WhatsApp Web's (60 s, then 20 s). */
  qrTimeoutMs: number | undefined;
  /** WHATSAPP_QR_MAX_ATTEMPTS: QR codes per pairing attempt before `qr_attempts_exhausted`. */
  qrMaxAttempts: number;
  /** WHATSAPP_RECONNECT_BASE_MS / WHATSAPP_RECONNECT_MAX_MS: capped exponential backoff (with jitter) after a lost connection. */
  reconnectBaseMs: number;
  reconnectMaxMs: number;
  /** WHATSAPP_CONNECT_TIMEOUT_MS: a socket must open (WebSocket upgrade, Noise handshake, login) or show a QR within this, or it is closed and reconnected. */
  connectTimeoutMs: number;
  /** WHATSAPP_CONNECT_WAIT_MS: POST /instance/connect waits this long at most for the first QR. */
  connectWaitMs: number;
  /** WHATSAPP_MESSAGE_CACHE: messages kept per instance for retries, poll votes and forwards. */
  messageCacheSize: number;
  /** WHATSAPP_SYNC_FULL_HISTORY: ask the phone for the full history at pairing (large), not just recent chats. */
  syncFullHistory: boolean;
  /** WHATSAPP_RESUME_PER_SECOND: linked sessions reopened per second when the gateway starts (WhatsApp sees no burst of logins). */
  resumePerSecond: number;
  /** WHATSAPP_LOG_LEVEL: level of the protocol library's own log lines. */
  logLevel: LogLevel;
}

export interface MediaConfig {
  /** Largest accepted media per kind, in bytes (MEDIA_MAX_<KIND>_BYTES). */
  maxBytes: { image: number; video: number; audio: number; document: number; sticker: number };
  /** A media URL must answer completely within this (MEDIA_FETCH_TIMEOUT_MS). */
  fetchTimeoutMs: number;
  /** MEDIA_ALLOW_PRIVATE_URLS: fetch from loopback/private/link-local addresses (off: SSRF protection). */
  allowPrivateUrls: boolean;
  /** MEDIA_ALLOW_HTTP_URLS: accept plain http:// media URLs (off: https only). */
  allowHttpUrls: boolean;
  /** Body limit of the routes that take base64 media (MEDIA_BODY_LIMIT_BYTES); others keep BODY_LIMIT_BYTES. */
  bodyLimitBytes: number;
  /** Received media up to this size is also inlined as base64 in the event when the instance asks for it. */
  eventBase64MaxBytes: number;
  /** MEDIA_INFLIGHT_MAX_BYTES: media request bodies held at once, across requests; more get 503 with retryAfter. */
  inflightMaxBytes: number;
  /** MEDIA_RECORD_TIMEOUT_MS: a received message's media must be stored within this, or its event goes without it. */
  recordTimeoutMs: number;
  /** MEDIA_ORPHAN_AGE_SECONDS: stored media no message references is removed once older than this (hourly sweep). */
  orphanAgeSeconds: number;
}

export interface S3Config {
  /** Endpoint of an S3-compatible service (MinIO, R2, ...); undefined means AWS itself. */
  endpoint: string | undefined;
  bucket: string;
  region: string;
  /** Both or neither; neither uses the SDK's default credential chain (instance role, ...). */
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  forcePathStyle: boolean;
  /** Prepended to every object key, e.g. `waygate/`. */
  prefix: string;
}

export interface ClusterConfig {
  /** CLUSTER_SECRET: proves a forwarded request comes from a process of the cluster (at least 32 characters). */
  secret: string;
  /** CLUSTER_ADVERTISE_URL: how the other processes reach this one; default http://<host or 127.0.0.1>:<PORT>. */
  advertiseUrl: string | undefined;
  /** CLUSTER_LEASE_MS: an owner silent this long loses its instances to the others. */
  leaseMs: number;
  /** CLUSTER_TICK_MS: heartbeat, lease renewal and balancing period (well below the lease). */
  tickMs: number;
  /** CLUSTER_MOVES_PER_TICK: instances a process hands over per tick when the balance changes. */
  movesPerTick: number;
  /** CLUSTER_FORWARD_TIMEOUT_MS: a forwarded request's time limit. */
  forwardTimeoutMs: number;
}

function clusterConfig(env: Env, databaseUrl: string, kvStoreUrl: string | undefined): ClusterConfig | undefined {
  const secret = text(env, 'CLUSTER_SECRET');
  if (secret === undefined) return undefined;
  if (secret.length < 32) throw new ConfigError('CLUSTER_SECRET', 'must be at least 32 characters');
  if (databaseUrl.startsWith('sqlite:')) throw new ConfigError('CLUSTER_SECRET', 'cluster mode needs a PostgreSQL DATABASE_URL');
  if (kvStoreUrl === undefined)
    throw new ConfigError('CLUSTER_SECRET', 'cluster mode needs KV_STORE_URL (Redis carries traffic between processes)');
  const leaseMs = integer(env, 'CLUSTER_LEASE_MS', 6000, 1000, 600_000);
  const tickMs = integer(env, 'CLUSTER_TICK_MS', Math.max(250, Math.floor(leaseMs / 4)), 100, 600_000);
  if (tickMs * 2 > leaseMs) throw new ConfigError('CLUSTER_TICK_MS', `must be at most half of CLUSTER_LEASE_MS (${leaseMs})`);
  const advertise = url(env, 'CLUSTER_ADVERTISE_URL', ['http', 'https']);
  return {
    secret,
    advertiseUrl: advertise?.replace(/\/+$/, ''),
    leaseMs,
    tickMs,
    movesPerTick: integer(env, 'CLUSTER_MOVES_PER_TICK', 20, 1, 100_000),
    forwardTimeoutMs: integer(env, 'CLUSTER_FORWARD_TIMEOUT_MS', 60_000, 100, 3_600_000),
  };
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `expected an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `expected true or false, got "${raw}"`);
}

function url(env: Env, name: string, schemes: string[]): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  const scheme = parsed.protocol.replace(/:$/, '');
  if (!schemes.includes(scheme)) {
    throw new ConfigError(name, `scheme must be one of ${schemes.map((s) => `${s}://`).join(', ')}`);
  }
  return raw;
}

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function trustProxy(env: Env): boolean | string[] {
  const raw = text(env, 'TRUST_PROXY');
  if (raw === undefined || /^(false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  // A hop count cannot tell a proxy from a client that sends the header itself.
  if (/^\d+$/.test(raw)) {
    throw new ConfigError('TRUST_PROXY', `a hop count is not taken: name the proxy's addresses (e.g. 127.0.0.1 or 10.0.0.0/8), got ${raw}`);
  }
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (PROXY_NAMES.has(entry) || (family !== 0 && validBits && extra === undefined)) continue;
    throw new ConfigError(
      'TRUST_PROXY',
      `expected false, true, or addresses and CIDR ranges separated by commas (or loopback, linklocal, uniquelocal); "${entry}" is none of these`,
    );
  }
  return entries;
}

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const dataDir = path.resolve(text(env, 'DATA_DIR') ?? './data');

  const globalApiKey = text(env, 'GLOBAL_API_KEY');
  if (globalApiKey !== undefined && globalApiKey.length < 16) {
    throw new ConfigError('GLOBAL_API_KEY', 'must be at least 16 characters');
  }

  const databaseUrl = text(env, 'DATABASE_URL') ?? `sqlite:${path.join(dataDir, 'waygate.db')}`;
  if (!/^(postgres|postgresql):\/\//.test(databaseUrl) && !databaseUrl.startsWith('sqlite:')) {
    throw new ConfigError('DATABASE_URL', 'must start with postgres://, postgresql:// or sqlite:');
  }

  const databaseSchema = text(env, 'DATABASE_SCHEMA');
  if (databaseSchema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(databaseSchema)) {
    throw new ConfigError('DATABASE_SCHEMA', 'must be a lowercase identifier (letters, digits, _)');
  }

  const logLevel = (text(env, 'LOG_LEVEL') ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  }

  const kvStoreUrl = url(env, 'KV_STORE_URL', ['redis', 'rediss']);
  const kvStoreGlobalEvents = flag(env, 'KV_STORE_GLOBAL_EVENTS', false);
  if (kvStoreGlobalEvents && kvStoreUrl === undefined) {
    throw new ConfigError('KV_STORE_GLOBAL_EVENTS', 'needs KV_STORE_URL (the Redis that carries the events)');
  }

  // Broker names are built from these prefixes; they must stay one token of a routing key, subject or topic.
  const queuePrefix = text(env, 'QUEUE_BROKER_PREFIX') ?? 'waygate';
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/.test(queuePrefix)) {
    throw new ConfigError('QUEUE_BROKER_PREFIX', 'must be 1 to 100 letters, digits, ".", "_" or "-"');
  }
  const lightPrefix = text(env, 'LIGHT_BROKER_PREFIX') ?? 'waygate';
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(lightPrefix)) {
    throw new ConfigError('LIGHT_BROKER_PREFIX', 'must be 1 to 100 letters, digits, "_" or "-" (no ".", "/" or wildcards)');
  }

  const media = mediaConfig(env);
  const s3 = s3Config(env);
  const batchMinIntervalMs = integer(env, 'BATCH_MIN_INTERVAL_MS', 500, 0, 3_600_000);
  const batchIntervalMs = integer(env, 'BATCH_INTERVAL_MS', 2000, 0, 3_600_000);
  if (batchIntervalMs < batchMinIntervalMs) {
    throw new ConfigError('BATCH_INTERVAL_MS', `must not be below BATCH_MIN_INTERVAL_MS (${batchMinIntervalMs})`);
  }

  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: text(env, 'HOST') ?? '0.0.0.0',
    trustProxy: trustProxy(env),
    dataDir,
    globalApiKey,
    databaseUrl,
    databaseSchema,
    databasePreparedStatements: flag(env, 'DATABASE_PREPARED_STATEMENTS', true),
    outboxRetentionSeconds: integer(env, 'OUTBOX_RETENTION_SECONDS', 3600, 0, 31_536_000),
    eventCommitSpacingMs: integer(env, 'EVENT_COMMIT_SPACING_MS', 2, 0, 10_000),
    eventArchiveDays: integer(env, 'EVENT_ARCHIVE_DAYS', 7, 0, 3650),
    admin: {
      alertEvalIntervalMs: integer(env, 'ALERT_EVAL_INTERVAL_MS', 15_000, 50, 3_600_000),
      backfillRatePerSecond: integer(env, 'BACKFILL_RATE_PER_SECOND', 20, 1, 10_000),
    },
    standbyPollMs: integer(env, 'STANDBY_POLL_MS', 2000, 50, 600_000),
    cluster: clusterConfig(env, databaseUrl, kvStoreUrl),
    tokenGraceSeconds: integer(env, 'TOKEN_GRACE_SECONDS', 86_400, 0, 31_536_000),
    tokenCache: {
      size: integer(env, 'TOKEN_CACHE_SIZE', 10_000, 0, 10_000_000),
      ttlSeconds: integer(env, 'TOKEN_CACHE_SECONDS', 30, 1, 86_400),
    },
    corsOrigin: text(env, 'CORS_ORIGIN') ?? '*',
    kvStoreUrl,
    kvStoreGlobalEvents,
    kvStorePrefix: text(env, 'KV_STORE_PREFIX') ?? 'waygate:',
    queueBrokerUrl: url(env, 'QUEUE_BROKER_URL', ['amqp', 'amqps']),
    lightBrokerUrl: url(env, 'LIGHT_BROKER_URL', ['nats', 'mqtt', 'mqtts']),
    channels: {
      queuePrefix,
      lightPrefix,
      kvStreamMaxLen: integer(env, 'KV_STORE_STREAM_MAXLEN', 10_000, 0, 100_000_000),
      publishTimeoutMs: integer(env, 'CHANNEL_PUBLISH_TIMEOUT_MS', 10_000, 100, 600_000),
      retryBaseMs: integer(env, 'CHANNEL_RETRY_BASE_MS', 500, 1, 3_600_000),
      retryMaxMs: integer(env, 'CHANNEL_RETRY_MAX_MS', 15_000, 1, 86_400_000),
      queueLimits: queueLimits(env),
      streamLimits: streamLimits(env),
    },
    rateLimit: {
      windowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
      perIp: integer(env, 'RATE_LIMIT_PER_IP', 1200, 1, 10_000_000),
      perKey: integer(env, 'RATE_LIMIT_PER_KEY', 600, 1, 10_000_000),
    },
    logLevel,
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 268_435_456),
    webhook: {
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 5000, 100, 60_000),
      maxAttempts: integer(env, 'WEBHOOK_MAX_ATTEMPTS', 5, 1, 100),
      retryBaseMs: integer(env, 'WEBHOOK_RETRY_BASE_MS', 1000, 1, 3_600_000),
      retryMaxMs: integer(env, 'WEBHOOK_RETRY_MAX_MS', 60_000, 1, 86_400_000),
      allowPrivateUrls: flag(env, 'WEBHOOK_ALLOW_PRIVATE_URLS', false),
      deliveryThread: flag(env, 'WEBHOOK_DELIVERY_THREAD', true),
    },
    websocket: {
      maxBufferedBytes: integer(env, 'WS_MAX_BUFFERED_BYTES', 4_194_304, 1024, 1_073_741_824),
      pingIntervalMs: integer(env, 'WS_PING_INTERVAL_MS', 30_000, 100, 3_600_000),
      maxConnectionsPerInstance: integer(env, 'WS_MAX_CONNECTIONS_PER_INSTANCE', 50, 1, 1_000_000),
    },
    sandbox: {
      qrIntervalMs: integer(env, 'SANDBOX_QR_INTERVAL_MS', 20_000, 10, 600_000),
      qrMaxAttempts: integer(env, 'SANDBOX_QR_MAX_ATTEMPTS', 5, 1, 100),
      reconnectDelayMs: integer(env, 'SANDBOX_RECONNECT_DELAY_MS', 1000, 0, 600_000),
    },
    whatsapp: whatsappConfig(env),
    media,
    s3,
    messageRetentionDays: integer(env, 'MESSAGE_RETENTION_DAYS', 30, 0, 36_500),
    batch: { intervalMs: batchIntervalMs, minIntervalMs: batchMinIntervalMs },
    healthIntervalMs: integer(env, 'HEALTH_INTERVAL_MS', 5000, 100, 3_600_000),
    mcp: mcpConfig(env, text(env, 'HOST') ?? '0.0.0.0'),
    auth: authConfig(env),
  };
}

const DAY_SECONDS = 86_400;
const GIB = 1_073_741_824;
/** Upper bound of the count and size limits: far beyond any broker's disk, still an exact integer. */
const LIMIT_MAX = 2 ** 50;

/** Defaults: docs/channels.md, "Limits" (why these numbers). */
function queueLimits(env: Env): QueueLimits {
  return {
    messageTtlSeconds: integer(env, 'QUEUE_BROKER_MESSAGE_TTL_SECONDS', 7 * DAY_SECONDS, 0, 365 * DAY_SECONDS),
    global: {
      maxLength: integer(env, 'QUEUE_BROKER_GLOBAL_MAX_LENGTH', 1_000_000, 0, LIMIT_MAX),
      maxBytes: integer(env, 'QUEUE_BROKER_GLOBAL_MAX_BYTES', GIB, 0, LIMIT_MAX),
    },
    instance: {
      maxLength: integer(env, 'QUEUE_BROKER_INSTANCE_MAX_LENGTH', 100_000, 0, LIMIT_MAX),
      maxBytes: integer(env, 'QUEUE_BROKER_INSTANCE_MAX_BYTES', 100 * MIB, 0, LIMIT_MAX),
    },
  };
}

function streamLimits(env: Env): StreamLimits {
  return {
    maxAgeSeconds: integer(env, 'LIGHT_BROKER_STREAM_MAX_AGE_SECONDS', 7 * DAY_SECONDS, 0, 3650 * DAY_SECONDS),
    maxMessages: integer(env, 'LIGHT_BROKER_STREAM_MAX_MSGS', 1_000_000, 0, LIMIT_MAX),
    maxBytes: integer(env, 'LIGHT_BROKER_STREAM_MAX_BYTES', GIB, 0, LIMIT_MAX),
  };
}

const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

function mcpConfig(env: Env, host: string): McpConfig {
  const list = (name: string) =>
    text(env, name)
      ?.split(',')
      .map((item) => item.trim().toLowerCase())
      .filter((item) => item !== '');
  const hosts = list('MCP_ALLOWED_HOSTS');
  const origins = list('MCP_ALLOWED_ORIGINS');
  for (const origin of origins ?? []) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin))
      throw new ConfigError('MCP_ALLOWED_ORIGINS', `"${origin}" is not an origin (scheme://host[:port])`);
  }
  // A wildcard bind address is not a name clients use; an IPv6 literal is written in brackets in Host.
  const bound = host === '0.0.0.0' || host === '::' ? [] : [host.includes(':') ? `[${host.toLowerCase()}]` : host.toLowerCase()];
  return {
    allowedHosts: hosts?.includes('*') ? '*' : (hosts ?? [...new Set([...LOOPBACK_HOSTS, ...bound])]),
    allowedOrigins: origins?.includes('*') ? '*' : origins,
    sessionIdleSeconds: integer(env, 'MCP_SESSION_IDLE_SECONDS', 1800, 10, 604_800),
    maxSessions: integer(env, 'MCP_MAX_SESSIONS', 1000, 1, 1_000_000),
    waitMaxSeconds: integer(env, 'MCP_WAIT_MAX_SECONDS', 120, 1, 3600),
  };
}

function authConfig(env: Env): AuthConfig {
  const jwtSecret = text(env, 'AUTH_JWT_SECRET');
  if (jwtSecret !== undefined && jwtSecret.length < 32) throw new ConfigError('AUTH_JWT_SECRET', 'must be at least 32 characters');
  return {
    jwtSecret,
    accessTokenSeconds: integer(env, 'AUTH_ACCESS_TOKEN_SECONDS', 900, 30, 86_400),
    refreshTokenDays: integer(env, 'AUTH_REFRESH_TOKEN_DAYS', 30, 1, 365),
    openRegistration: flag(env, 'AUTH_OPEN_REGISTRATION', false),
    maxFailuresPerAccount: integer(env, 'AUTH_LOGIN_MAX_FAILURES', 5, 1, 1000),
    maxFailuresPerIp: integer(env, 'AUTH_LOGIN_MAX_FAILURES_PER_IP', 20, 1, 100_000),
    lockSeconds: integer(env, 'AUTH_LOGIN_LOCK_SECONDS', 900, 1, 86_400),
    cookieSecure: flag(env, 'AUTH_COOKIE_SECURE', false),
  };
}

const MIB = 1_048_576;

function whatsappConfig(env: Env): WhatsAppConfig {
  const logLevel = (text(env, 'WHATSAPP_LOG_LEVEL') ?? 'warn') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('WHATSAPP_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  const reconnectBaseMs = integer(env, 'WHATSAPP_RECONNECT_BASE_MS', 2000, 1, 3_600_000);
  const reconnectMaxMs = integer(env, 'WHATSAPP_RECONNECT_MAX_MS', 120_000, 1, 86_400_000);
  if (reconnectMaxMs < reconnectBaseMs) throw new ConfigError('WHATSAPP_RECONNECT_MAX_MS', 'must not be below WHATSAPP_RECONNECT_BASE_MS');
  const qrTimeout = text(env, 'WHATSAPP_QR_TIMEOUT_MS');
  return {
    enabled: flag(env, 'WHATSAPP_ENABLED', true),
    webSocketUrl: url(env, 'WHATSAPP_WS_URL', ['ws', 'wss']),
    qrTimeoutMs: qrTimeout === undefined ? undefined : integer(env, 'WHATSAPP_QR_TIMEOUT_MS', 0, 10, 600_000),
    qrMaxAttempts: integer(env, 'WHATSAPP_QR_MAX_ATTEMPTS', 5, 1, 100),
    reconnectBaseMs,
    reconnectMaxMs,
    connectTimeoutMs: integer(env, 'WHATSAPP_CONNECT_TIMEOUT_MS', 20_000, 1000, 600_000),
    connectWaitMs: integer(env, 'WHATSAPP_CONNECT_WAIT_MS', 15_000, 0, 600_000),
    messageCacheSize: integer(env, 'WHATSAPP_MESSAGE_CACHE', 1000, 0, 1_000_000),
    syncFullHistory: flag(env, 'WHATSAPP_SYNC_FULL_HISTORY', false),
    resumePerSecond: integer(env, 'WHATSAPP_RESUME_PER_SECOND', 25, 1, 10_000),
    logLevel,
  };
}

function mediaConfig(env: Env): MediaConfig {
  const maxBytes = {
    image: integer(env, 'MEDIA_MAX_IMAGE_BYTES', 16 * MIB, 1024, 2048 * MIB),
    video: integer(env, 'MEDIA_MAX_VIDEO_BYTES', 64 * MIB, 1024, 2048 * MIB),
    audio: integer(env, 'MEDIA_MAX_AUDIO_BYTES', 16 * MIB, 1024, 2048 * MIB),
    document: integer(env, 'MEDIA_MAX_DOCUMENT_BYTES', 64 * MIB, 1024, 2048 * MIB),
    sticker: integer(env, 'MEDIA_MAX_STICKER_BYTES', 2 * MIB, 1024, 2048 * MIB),
  };
  // By default a body can carry the largest allowed media as base64 (4/3 of its size) plus the rest of the JSON.
  const largest = Math.max(...Object.values(maxBytes));
  const derivedBodyLimit = Math.ceil(largest / 3) * 4 + 64 * 1024;
  return {
    maxBytes,
    fetchTimeoutMs: integer(env, 'MEDIA_FETCH_TIMEOUT_MS', 15_000, 100, 600_000),
    allowPrivateUrls: flag(env, 'MEDIA_ALLOW_PRIVATE_URLS', false),
    allowHttpUrls: flag(env, 'MEDIA_ALLOW_HTTP_URLS', false),
    bodyLimitBytes: integer(env, 'MEDIA_BODY_LIMIT_BYTES', derivedBodyLimit, 1024, 4096 * MIB),
    eventBase64MaxBytes: integer(env, 'MEDIA_EVENT_BASE64_MAX_BYTES', 5 * MIB, 0, 2048 * MIB),
    inflightMaxBytes: integer(env, 'MEDIA_INFLIGHT_MAX_BYTES', 256 * MIB, 1024, 64 * 1024 * MIB),
    recordTimeoutMs: integer(env, 'MEDIA_RECORD_TIMEOUT_MS', 60_000, 100, 3_600_000),
    orphanAgeSeconds: integer(env, 'MEDIA_ORPHAN_AGE_SECONDS', 3600, 60, 31_536_000),
  };
}

function s3Config(env: Env): S3Config | undefined {
  const bucket = text(env, 'S3_BUCKET');
  const related = ['S3_ENDPOINT', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_FORCE_PATH_STYLE', 'S3_PREFIX'];
  if (bucket === undefined) {
    const stray = related.find((name) => text(env, name) !== undefined);
    if (stray) throw new ConfigError(stray, 'is set but S3_BUCKET is not; set S3_BUCKET to store media in S3');
    return undefined;
  }
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new ConfigError('S3_BUCKET', 'must be 3 to 63 lowercase letters, digits, "." or "-"');
  }
  const accessKeyId = text(env, 'S3_ACCESS_KEY_ID');
  const secretAccessKey = text(env, 'S3_SECRET_ACCESS_KEY');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(
      accessKeyId === undefined ? 'S3_ACCESS_KEY_ID' : 'S3_SECRET_ACCESS_KEY',
      'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together',
    );
  }
  const prefix = text(env, 'S3_PREFIX') ?? '';
  if (!/^[A-Za-z0-9._/-]{0,200}$/.test(prefix)) throw new ConfigError('S3_PREFIX', 'may hold only letters, digits, ".", "_", "-" and "/"');
  return {
    endpoint: url(env, 'S3_ENDPOINT', ['http', 'https']),
    bucket,
    region: text(env, 'S3_REGION') ?? 'us-east-1',
    accessKeyId,
    secretAccessKey,
    forcePathStyle: flag(env, 'S3_FORCE_PATH_STYLE', false),
    prefix,
  };
}
