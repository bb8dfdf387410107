/**
 * Authentication and rate limiting, one onRequest hook for every route:
 *   per-IP limit -> `apikey` header -> admin key (constant time) or instance token (by hash) -> per-key limit.
 * Keys and tokens never reach the logs (see the logger's redaction in app.ts).
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { errors } from '../errors.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import { hashToken, KeyDigests } from '../instance-registry/tokens.js';
import type { ServeElsewhere } from './errors.js';
import type { LimitDecision, SlidingWindowStore } from './rate-limit.js';

/** Who called an admin route with something other than the admin key (auth/: a signed-in user's JWT). */
export interface AdminCaller {
  /** Rate-limit and audit identity, e.g. `user:<id>`. */
  id: string;
  /** Viewers may only read: any method other than GET/HEAD answers 403. */
  readOnly: boolean;
}

/**
 * Credentials a feature module adds to the one auth hook. Each resolver answers undefined when the
 * credential is not its kind and throws an AppError when it is its kind but bad (expired, tampered).
 */
export interface CredentialResolvers {
  /** Looked at on admin routes when the `apikey` header is not the admin key. */
  admin: ((request: FastifyRequest) => Promise<AdminCaller | undefined>)[];
  /**
   * Looked at on instance routes before the instance-token lookup (admin/: failover-group tokens).
   * `keyHash` is hashToken(key) when the caller has it already (the auth hook). A resolver answers
   * undefined at once (not a promise) for a key that is not its kind: an instance token's request
   * then awaits nothing on the way to the token cache.
   */
  instance: ((key: string, request: FastifyRequest, keyHash?: string) => Promise<Instance | undefined> | undefined)[];
}

export function emptyResolvers(): CredentialResolvers {
  return { admin: [], instance: [] };
}

export interface AuthOptions {
  /** Extra credentials added by feature modules (see CredentialResolvers). */
  resolvers?: CredentialResolvers;
  adminKey: string;
  instances: InstanceService;
  limits: Config['rateLimit'];
  store: SlidingWindowStore;
  clock: Clock;
  /**
   * True while another process is active for this database: a standby answers only the routes
   * that need no key (liveness, metrics, docs, the WebSocket stream) so it never changes what the
   * active process caches (instance settings, tokens, sessions).
   */
  standby?: () => boolean;
  /** Cluster mode: which process serves a request (src/cluster/). */
  routing?: RequestRouting;
}

/** Where a request is served: here, or another gateway process at `address`. */
export type Placement = { here: true } | { here: false; address: string };

/**
 * Cluster mode (src/cluster/, docs/deployment.md): a request for an instance is served by the process
 * holding its session, an admin request by the leader; the first process authenticates it and counts
 * it against the rate limits, then passes it on unchanged.
 */
export interface RequestRouting {
  /** Sent by another process of the cluster (its proof checks out): served here, not counted again. */
  forwarded(request: FastifyRequest): boolean;
  /** Where the instance's requests are served (an AppError 503 when no process can now). */
  instance(instanceId: string, request: FastifyRequest): Promise<Placement>;
  /** Where admin requests are served (undefined: here). */
  admin(request: FastifyRequest): Placement | undefined;
  /** Sends the request, body unread, to `address` and answers with what comes back. */
  forward(request: FastifyRequest, reply: FastifyReply, address: string): Promise<FastifyReply>;
  /** See http/errors.ts ServeElsewhere. */
  serveElsewhere: ServeElsewhere;
  /** Before each handler, the body read and validated (a body to be kept for passing on is copied then). */
  beforeHandler(request: FastifyRequest): void;
}

/**
 * Counts the request against `key`'s limit; throws 429 when it is over. Undefined, not a promise,
 * when the store answered at once (the in-memory windows): the hook then awaits nothing for it.
 */
function enforce(
  store: SlidingWindowStore,
  key: string,
  limit: number,
  options: AuthOptions,
  reply: FastifyReply,
): Promise<void> | undefined {
  const decision = store.hit(key, limit, options.limits.windowSeconds * 1000, options.clock.now());
  if (decision instanceof Promise) return decision.then((answer) => refuseOver(answer, reply));
  refuseOver(decision, reply);
  return undefined;
}

function refuseOver(decision: LimitDecision, reply: FastifyReply): void {
  if (decision.allowed) return;
  void reply.header('Retry-After', String(decision.retryAfter));
  throw errors.rateLimited(decision.retryAfter);
}

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers.apikey;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Keys whose digests the auth hook remembers (KeyDigests): every active instance's, with room. */
const KEY_DIGESTS = 10_000;

export function registerAuth(app: FastifyInstance, options: AuthOptions): void {
  // The admin key's digest once; each request's key digest comes from `digests` (the admin check and the per-key limit share it).
  const adminDigest = Buffer.from(hashToken(options.adminKey));
  const isAdminKey = (keyHash: string) => {
    const given = Buffer.from(keyHash);
    return given.length === adminDigest.length && timingSafeEqual(given, adminDigest);
  };
  const routing = options.routing;
  const digests = new KeyDigests(KEY_DIGESTS);
  app.addHook('onRequest', async (request, reply) => {
    const access = request.routeOptions.config.access ?? 'none';
    // A forwarded request was counted by the process that took it first.
    const forwarded = routing?.forwarded(request) === true;
    if (!forwarded) {
      const counting = enforce(options.store, `ip:${request.ip}`, options.limits.perIp, options, reply);
      if (counting) await counting;
    }
    if (routing && !forwarded && request.routeOptions.config.leaderOnly) {
      const where = routing.admin(request);
      if (where && !where.here) return routing.forward(request, reply, where.address);
    }
    if (access === 'none') return;
    if (options.standby?.()) throw errors.standby();

    const key = apiKeyOf(request);
    const keyHash = key === undefined ? undefined : digests.of(key);
    if (access === 'admin') {
      if (keyHash !== undefined && isAdminKey(keyHash)) {
        request.isAdmin = true;
      } else {
        const caller = await adminCallerOf(request, options);
        if (caller) {
          if (caller.readOnly && request.method !== 'GET' && request.method !== 'HEAD') throw errors.readOnlyCaller();
          request.isAdmin = true;
          request.adminCaller = caller;
          const counting = forwarded ? undefined : enforce(options.store, `key:${caller.id}`, options.limits.perKey, options, reply);
          if (counting) await counting;
          const where = forwarded ? undefined : routing?.admin(request);
          if (where && !where.here) return routing!.forward(request, reply, where.address);
          return;
        }
        if (key === undefined) throw errors.invalidApiKey();
        // A valid instance token on an admin route is a permission problem, not a bad key.
        const instance = await options.instances.authenticate(key).catch(() => undefined);
        if (instance) throw errors.adminOnly();
        throw errors.invalidApiKey();
      }
    } else {
      if (key === undefined || keyHash === undefined) throw errors.invalidApiKey();
      if (isAdminKey(keyHash)) throw errors.instanceOnly();
      const claimed = instanceByResolvers(key, keyHash, request, options);
      request.instance =
        (claimed && (await claimed)) ??
        options.instances.authenticatedFromCache(keyHash) ??
        (await options.instances.authenticate(key, keyHash));
    }
    // (Always set here: every way without a key has returned or thrown.)
    if (keyHash !== undefined && !forwarded) {
      const counting = enforce(options.store, `key:${keyHash.slice(0, 32)}`, options.limits.perKey, options, reply);
      if (counting) await counting;
    }
    if (!routing) return;
    const where = request.instance ? await routing.instance(request.instance.id, request) : forwarded ? undefined : routing.admin(request);
    if (where && !where.here) return routing.forward(request, reply, where.address);
  });
}

async function adminCallerOf(request: FastifyRequest, options: AuthOptions): Promise<AdminCaller | undefined> {
  for (const resolve of options.resolvers?.admin ?? []) {
    const caller = await resolve(request);
    if (caller) return caller;
  }
  return undefined;
}

/** The instance a resolver finds for the key; undefined at once when no resolver takes it as its kind. */
function instanceByResolvers(
  key: string,
  keyHash: string,
  request: FastifyRequest,
  options: AuthOptions,
  from = 0,
): Promise<Instance | undefined> | undefined {
  const resolvers = options.resolvers?.instance ?? [];
  for (let i = from; i < resolvers.length; i += 1) {
    const found = resolvers[i]!(key, request, keyHash);
    if (found) return found.then((instance) => instance ?? instanceByResolvers(key, keyHash, request, options, i + 1));
  }
  return undefined;
}
