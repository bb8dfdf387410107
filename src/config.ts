/**
 * The only reader of process.env. Every setting is parsed and checked here; an invalid value
 * stops the start with a message naming the variable.
 */
import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Admin key from GLOBAL_API_KEY; undefined means "generate once and keep in the data folder". */
  globalApiKey: string | undefined;
  databaseUrl: string;
  /** PostgreSQL only: the schema Waygate's tables live in (created when missing). */
  databaseSchema: string | undefined;
  /** Delivered events are kept this long in the outbox, then pruned. */
  outboxRetentionSeconds: number;
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
  rateLimit: { windowSeconds: number; perIp: number; perKey: number };
  logLevel: LogLevel;
  bodyLimitBytes: number;
  webhook: { timeoutMs: number; maxAttempts: number; retryBaseMs: number; retryMaxMs: number };
  websocket: { maxBufferedBytes: number; pingIntervalMs: number };
  sandbox: { qrIntervalMs: number; qrMaxAttempts: number; reconnectDelayMs: number };
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

  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: text(env, 'HOST') ?? '0.0.0.0',
    dataDir,
    globalApiKey,
    databaseUrl,
    databaseSchema,
    outboxRetentionSeconds: integer(env, 'OUTBOX_RETENTION_SECONDS', 3600, 0, 31_536_000),
    tokenGraceSeconds: integer(env, 'TOKEN_GRACE_SECONDS', 86_400, 0, 31_536_000),
    tokenCache: {
      size: integer(env, 'TOKEN_CACHE_SIZE', 10_000, 0, 10_000_000),
      ttlSeconds: integer(env, 'TOKEN_CACHE_SECONDS', 30, 1, 86_400),
    },
    corsOrigin: text(env, 'CORS_ORIGIN') ?? '*',
    kvStoreUrl,
    kvStoreGlobalEvents: flag(env, 'KV_STORE_GLOBAL_EVENTS', false),
    kvStorePrefix: text(env, 'KV_STORE_PREFIX') ?? 'waygate:',
    queueBrokerUrl: url(env, 'QUEUE_BROKER_URL', ['amqp', 'amqps']),
    lightBrokerUrl: url(env, 'LIGHT_BROKER_URL', ['nats', 'mqtt', 'mqtts']),
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
    },
    websocket: {
      maxBufferedBytes: integer(env, 'WS_MAX_BUFFERED_BYTES', 4_194_304, 1024, 1_073_741_824),
      pingIntervalMs: integer(env, 'WS_PING_INTERVAL_MS', 30_000, 100, 3_600_000),
    },
    sandbox: {
      qrIntervalMs: integer(env, 'SANDBOX_QR_INTERVAL_MS', 20_000, 10, 600_000),
      qrMaxAttempts: integer(env, 'SANDBOX_QR_MAX_ATTEMPTS', 5, 1, 100),
      reconnectDelayMs: integer(env, 'SANDBOX_RECONNECT_DELAY_MS', 1000, 0, 600_000),
    },
  };
}
