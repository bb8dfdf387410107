/** Instance registry: create, list, delete, tokens (hash, rotate, grace) and webhook settings. */
import { systemIds, type Clock, type IdSource } from '../clock.js';
import { AppError, errors } from '../errors.js';
import { EVENT_TYPES, type EventType, type InstanceStatus, type NetworkName } from '../network/port.js';
import type { InstanceRow } from '../storage/schema.js';
import type { InstanceRepo, TokenRecord } from './repo.js';
import { TokenCache } from './token-cache.js';
import type { WriteFence } from '../storage/fence.js';
import { hashToken, isWellFormedToken, newInstanceToken } from './tokens.js';

export type EventFilter = 'ALL' | EventType[];

export interface InstanceSettings {
  /** Reserved for per-instance switches added by later capabilities. */
  [key: string]: unknown;
}

export interface Instance {
  id: string;
  name: string;
  network: NetworkName;
  status: InstanceStatus;
  number: string | null;
  webhookUrl: string | null;
  /** The admin key set webhookUrl: its deliveries may reach private and loopback addresses. */
  webhookAdminSet: boolean;
  webhookSecret: string;
  webhookEvents: EventFilter;
  /** Opt-in batched webhook: up to `maxEvents` envelopes in one POST, waiting at most `maxWaitMs` to fill it. */
  webhookBatch: WebhookBatch | null;
  settings: InstanceSettings;
  proxyUrl: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface CreateInstanceInput {
  instanceName: string;
  webhookUrl?: string | undefined;
  webhookSecret?: string | undefined;
  webhookEvents?: EventFilter | undefined;
  network?: NetworkName | undefined;
}

export interface WebhookBatch {
  maxEvents: number;
  maxWaitMs: number;
}

export interface WebhookSettingsInput {
  webhookUrl?: string | null | undefined;
  webhookEvents?: EventFilter | undefined;
  webhookSecret?: string | undefined;
  /** null turns batching off. */
  webhookBatch?: WebhookBatch | null | undefined;
}

/**
 * Why a webhook URL set with an instance token may not be used (a private or loopback target), or
 * undefined when it may. Absent: every URL is allowed (WEBHOOK_ALLOW_PRIVATE_URLS).
 */
export type WebhookUrlGuard = (url: string) => Promise<string | undefined>;

/** Hears that a token's grace period was set (rotation): the streams opened with it close then. */
export type RotationListener = (instanceId: string, oldTokensValidUntil: number) => void;

/** Something that must hear about instance deletion (sessions, caches). */
export interface InstanceDeletionListener {
  instanceDeleted(id: string): Promise<void> | void;
}

function toInstance(row: InstanceRow): Instance {
  return {
    id: row.id,
    name: row.name,
    network: row.network as NetworkName,
    status: row.status as InstanceStatus,
    number: row.number,
    webhookUrl: row.webhook_url,
    webhookAdminSet: row.webhook_admin_set === 1,
    webhookSecret: row.webhook_secret,
    webhookEvents: JSON.parse(row.webhook_events) as EventFilter,
    webhookBatch: row.webhook_batch ? (JSON.parse(row.webhook_batch) as WebhookBatch) : null,
    settings: JSON.parse(row.settings) as InstanceSettings,
    proxyUrl: row.proxy_url,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function normalizeFilter(filter: EventFilter): EventFilter {
  if (filter === 'ALL') return 'ALL';
  const unique = [...new Set(filter)];
  for (const type of unique) {
    if (!EVENT_TYPES.includes(type)) throw errors.badRequest(`unknown event type ${String(type)}`);
  }
  return unique.length === EVENT_TYPES.length ? 'ALL' : unique;
}

export function filterAccepts(filter: EventFilter, type: EventType): boolean {
  return filter === 'ALL' || filter.includes(type);
}

export class InstanceService {
  private readonly cache = new Map<string, Instance>();
  private connectionFence: WriteFence | undefined;
  private readonly deletionListeners: InstanceDeletionListener[] = [];
  private readonly rotationListeners: RotationListener[] = [];
  private readonly changeListeners: ((id: string) => void)[] = [];

  private readonly tokens: TokenCache;

  constructor(
    private readonly repo: InstanceRepo,
    private readonly clock: Clock,
    private readonly tokenGraceSeconds: number,
    tokenCache: { size: number; ttlSeconds: number } = { size: 10_000, ttlSeconds: 30 },
    private readonly webhookGuard?: WebhookUrlGuard,
    private readonly ids: IdSource = systemIds,
  ) {
    this.tokens = new TokenCache(tokenCache.size, tokenCache.ttlSeconds * 1000);
  }

  /** Cluster mode: connection state is written only under the owner's fence (storage/fence.ts). */
  fenceConnectionState(fence: WriteFence): void {
    this.connectionFence = fence;
  }

  /** Another process changed the instance: the next read goes to the database. */
  forget(id: string): void {
    this.cache.delete(id);
    this.tokens.evictInstance(id);
  }

  /** The instance as stored now (cluster mode: read again when this process takes it over). */
  async fresh(id: string): Promise<Instance | undefined> {
    this.cache.delete(id);
    return this.find(id);
  }

  onDeletion(listener: InstanceDeletionListener): void {
    this.deletionListeners.push(listener);
  }

  /** Hears every rotation in this process (streams opened with the old token close at its end). */
  /** Hears every change this process writes to an instance (cluster mode tells the other processes). */
  onChange(listener: (id: string) => void): void {
    this.changeListeners.push(listener);
  }

  private changed(id: string): void {
    for (const listener of this.changeListeners) listener(id);
  }

  onRotation(listener: RotationListener): void {
    this.rotationListeners.push(listener);
  }

  /** Created with the admin key: a webhookUrl given here is admin-set (private targets allowed). */
  async create(input: CreateInstanceInput): Promise<{ instance: Instance; token: string }> {
    if (await this.repo.findByName(input.instanceName)) {
      throw errors.conflict(`an instance named ${input.instanceName} already exists`);
    }
    const now = this.clock.now();
    const token = newInstanceToken(this.ids);
    const id = this.ids.id();
    const row = {
      id,
      name: input.instanceName,
      network: input.network ?? 'whatsapp',
      status: 'created',
      number: null,
      webhook_url: input.webhookUrl ?? null,
      webhook_admin_set: input.webhookUrl ? 1 : 0,
      webhook_secret: input.webhookSecret ?? this.ids.secret(32),
      webhook_events: JSON.stringify(normalizeFilter(input.webhookEvents ?? 'ALL')),
      settings: '{}',
      proxy_url: null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.repo.insert(row, hashToken(token));
    } catch (error) {
      // Two creates racing on one name: the unique index decides.
      if (await this.repo.findByName(input.instanceName)) {
        throw errors.conflict(`an instance named ${input.instanceName} already exists`);
      }
      throw error;
    }
    return { instance: toInstance({ ...row, webhook_admin_set: row.webhook_admin_set, webhook_batch: null }), token };
  }

  /** The instance when it is in the cache (no read, no await: the send road's hot path), else undefined. */
  cached(id: string): Instance | undefined {
    return this.cache.get(id);
  }

  async get(id: string): Promise<Instance> {
    const cached = this.cache.get(id);
    if (cached) return cached;
    const row = await this.repo.findById(id);
    if (!row) throw errors.notFound('instance');
    const instance = toInstance(row);
    this.cache.set(id, instance);
    return instance;
  }

  async find(id: string): Promise<Instance | undefined> {
    try {
      return await this.get(id);
    } catch (error) {
      if (error instanceof AppError && error.status === 404) return undefined;
      throw error;
    }
  }

  async findByNumber(number: string): Promise<Instance | undefined> {
    const row = await this.repo.findByNumber(number);
    return row ? toInstance(row) : undefined;
  }

  async list(offset: number, limit: number): Promise<{ items: Instance[]; total: number }> {
    const [rows, total] = await Promise.all([this.repo.list(offset, limit), this.repo.count()]);
    return { items: rows.map(toInstance), total };
  }

  countByStatus(): Promise<Record<string, number>> {
    return this.repo.countByStatus();
  }

  countByNetwork(): Promise<Record<string, number>> {
    return this.repo.countByNetwork();
  }

  async listByStatus(network: NetworkName, statuses: InstanceStatus[]): Promise<Instance[]> {
    return (await this.repo.listByStatus(network, statuses)).map(toInstance);
  }

  async delete(id: string): Promise<void> {
    await this.get(id);
    for (const listener of this.deletionListeners) await listener.instanceDeleted(id);
    this.cache.delete(id);
    this.tokens.evictInstance(id);
    if (!(await this.repo.delete(id))) throw errors.notFound('instance');
    this.changed(id);
  }

  /** Records what the network said about the connection. */
  async setConnectionState(id: string, status: InstanceStatus, number: string | null | undefined): Promise<void> {
    const patch: { status: InstanceStatus; updated_at: number; number?: string | null } = {
      status,
      updated_at: this.clock.now(),
    };
    if (number !== undefined) patch.number = number;
    await this.repo.update(id, patch, this.connectionFence);
    const cached = this.cache.get(id);
    if (cached) this.cache.set(id, { ...cached, status, number: number === undefined ? cached.number : number });
    this.changed(id);
  }

  /** Changed with the instance token: a new webhookUrl must pass the guard (no private targets). */
  async updateWebhook(id: string, input: WebhookSettingsInput): Promise<Instance> {
    await this.get(id);
    const patch: Record<string, unknown> = { updated_at: this.clock.now() };
    if (input.webhookUrl) await this.checkWebhookUrl(input.webhookUrl);
    if (input.webhookUrl !== undefined) {
      patch.webhook_url = input.webhookUrl;
      patch.webhook_admin_set = 0;
    }
    if (input.webhookEvents !== undefined) patch.webhook_events = JSON.stringify(normalizeFilter(input.webhookEvents));
    if (input.webhookSecret !== undefined) patch.webhook_secret = input.webhookSecret;
    if (input.webhookBatch !== undefined) {
      patch.webhook_batch =
        input.webhookBatch === null
          ? null
          : JSON.stringify({ maxEvents: input.webhookBatch.maxEvents, maxWaitMs: input.webhookBatch.maxWaitMs });
    }
    await this.repo.update(id, patch);
    this.cache.delete(id);
    this.changed(id);
    return this.get(id);
  }

  private async checkWebhookUrl(url: string): Promise<void> {
    if (!this.webhookGuard) return;
    const refused = await this.webhookGuard(url);
    if (refused)
      throw errors.webhookUrlRefused(
        `webhookUrl: ${refused}; private and loopback targets need WEBHOOK_ALLOW_PRIVATE_URLS=true or the admin key (set it at /instance/create)`,
      );
  }

  async updateSettings(id: string, patch: Partial<Pick<Instance, 'proxyUrl'>> & { settings?: InstanceSettings }): Promise<Instance> {
    const current = await this.get(id);
    const update: Record<string, unknown> = { updated_at: this.clock.now() };
    if (patch.proxyUrl !== undefined) update.proxy_url = patch.proxyUrl;
    if (patch.settings !== undefined) update.settings = JSON.stringify({ ...current.settings, ...patch.settings });
    await this.repo.update(id, update);
    this.cache.delete(id);
    this.changed(id);
    return this.get(id);
  }

  async rotateToken(id: string): Promise<{ newToken: string; oldTokenValidUntil: string }> {
    await this.get(id);
    const now = this.clock.now();
    const graceUntil = now + this.tokenGraceSeconds * 1000;
    const token = newInstanceToken(this.ids);
    await this.repo.rotateToken(id, hashToken(token), graceUntil, now);
    this.tokens.evictInstance(id);
    for (const listener of this.rotationListeners) listener(id, graceUntil);
    this.changed(id);
    return { newToken: token, oldTokenValidUntil: new Date(graceUntil).toISOString() };
  }

  /**
   * Resolves an instance token to its instance. Malformed values are refused before any lookup;
   * a grace token past its time gets the "token expired" error.
   */
  async authenticate(token: string, tokenHash?: string): Promise<Instance> {
    return (await this.authenticateToken(token, tokenHash)).instance;
  }

  /**
   * The instance of the token with this hash when the token and the instance are both in the caches
   * (no read, no await: the auth hook's hot path), else undefined (then `authenticate`). Only hashes
   * of real tokens enter the token cache, so the token's shape needs no check here. Throws as
   * `authenticate` does for a token whose grace is over.
   */
  authenticatedFromCache(tokenHash: string): Instance | undefined {
    const now = this.clock.now();
    const record = this.tokens.get(tokenHash, now);
    if (!record) return undefined;
    refuseAfterGrace(record, now);
    return this.cache.get(record.instanceId);
  }

  /** As authenticate, with the token's hash and the end of its grace (null for a primary token). */
  async authenticateToken(
    token: string,
    /** hashToken(token), when the caller has it already (the auth hook): not computed twice. */
    tokenHash?: string,
  ): Promise<{ instance: Instance; tokenHash: string; validUntil: number | null }> {
    if (!isWellFormedToken(token)) throw errors.invalidApiKey();
    const hash = tokenHash ?? hashToken(token);
    const now = this.clock.now();
    const record = await this.tokenRecord(hash, now);
    if (!record) throw errors.invalidApiKey();
    refuseAfterGrace(record, now);
    const instance = await this.find(record.instanceId);
    if (!instance) throw errors.invalidApiKey();
    return { instance, tokenHash: hash, validUntil: record.validUntil };
  }

  /** Where a token (by hash) stands now: the end of its grace, null for a primary, 'invalid' when gone. */
  async tokenState(hash: string): Promise<number | null | 'invalid'> {
    const record = await this.tokenRecord(hash, this.clock.now());
    return record ? record.validUntil : 'invalid';
  }

  private async tokenRecord(hash: string, now: number): Promise<TokenRecord | undefined> {
    let record = this.tokens.get(hash, now);
    if (!record) {
      record = await this.repo.findToken(hash);
      if (!record) return undefined;
      this.tokens.set(hash, record, now);
    }
    return record;
  }
}

/** A replaced token answers 401 `token_expired` once its grace is over. */
function refuseAfterGrace(record: TokenRecord, now: number): void {
  if (record.validUntil !== null && record.validUntil <= now) throw errors.tokenExpired();
}

/** The instance as the API shows it: never the token or the webhook secret. */
export function publicInstance(instance: Instance) {
  return {
    instanceId: instance.id,
    instanceName: instance.name,
    network: instance.network,
    status: instance.status,
    number: instance.number,
    webhookUrl: maskUrlPassword(instance.webhookUrl),
    webhookEvents: instance.webhookEvents,
    proxyUrl: maskProxyPassword(instance.proxyUrl),
    createdAt: new Date(instance.createdAt).toISOString(),
    updatedAt: new Date(instance.updatedAt).toISOString(),
  };
}

/** Webhook URLs are shown without their password (`user:***@host`); without one, as stored. */
export function maskUrlPassword(value: string | null): string | null {
  if (value === null) return null;
  try {
    const parsed = new URL(value);
    if (!parsed.password) return value;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return '***';
  }
}

/** Proxy URLs are shown without their password. */
export function maskProxyPassword(proxyUrl: string | null): string | null {
  if (proxyUrl === null) return null;
  try {
    const parsed = new URL(proxyUrl);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '***';
  }
}
