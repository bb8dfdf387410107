/**
 * Authentication and rate limiting, one onRequest hook for every route:
 *   per-IP limit -> `apikey` header -> admin key (constant time) or instance token (by hash) -> per-key limit.
 * Keys and tokens never reach the logs (see the logger's redaction in app.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { errors } from '../errors.js';
import type { InstanceService } from '../instances/service.js';
import { hashToken, sameSecret } from '../instances/tokens.js';
import type { SlidingWindowStore } from './rate-limit.js';

export interface AuthOptions {
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
}

async function enforce(store: SlidingWindowStore, key: string, limit: number, options: AuthOptions, reply: FastifyReply) {
  const decision = await store.hit(key, limit, options.limits.windowSeconds * 1000, options.clock.now());
  if (!decision.allowed) {
    void reply.header('Retry-After', String(decision.retryAfter));
    throw errors.rateLimited(decision.retryAfter);
  }
}

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers.apikey;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function registerAuth(app: FastifyInstance, options: AuthOptions): void {
  app.addHook('onRequest', async (request, reply) => {
    const access = request.routeOptions.config.access ?? 'none';
    await enforce(options.store, `ip:${request.ip}`, options.limits.perIp, options, reply);
    if (access === 'none') return;
    if (options.standby?.()) throw errors.standby();

    const key = apiKeyOf(request);
    if (key === undefined) throw errors.invalidApiKey();
    const isAdmin = sameSecret(key, options.adminKey);
    if (access === 'admin') {
      if (!isAdmin) {
        // A valid instance token on an admin route is a permission problem, not a bad key.
        const instance = await options.instances.authenticate(key).catch(() => undefined);
        if (instance) throw errors.adminOnly();
        throw errors.invalidApiKey();
      }
      request.isAdmin = true;
    } else {
      if (isAdmin) throw errors.instanceOnly();
      request.instance = await options.instances.authenticate(key);
    }
    await enforce(options.store, `key:${hashToken(key).slice(0, 32)}`, options.limits.perKey, options, reply);
  });
}
