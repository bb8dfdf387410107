import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Instance } from '../instance-registry/service.js';
import type { AdminCaller } from './auth.js';

/** Who may call a route: nobody special, the admin key, or an instance token. */
export type AccessLevel = 'none' | 'admin' | 'instance';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: AccessLevel;
    /** A root route outside API versioning (no /api/v1 twin, never deprecated): the web interface. */
    unversioned?: boolean;
    /**
     * Cluster mode: always served by the leader (state kept in its memory: the MCP sessions), the
     * request forwarded there from any other process.
     */
    leaderOnly?: boolean;
  }
  interface FastifyRequest {
    /** Set by the auth hook on instance routes. */
    instance?: Instance;
    isAdmin?: boolean;
    /** Set when an admin route was called with a credential other than the admin key (a user's JWT). */
    adminCaller?: AdminCaller;
  }
}

export type RoutePlugin = FastifyPluginAsyncTypebox;

/** The instance of an instance-token route (the auth hook guarantees it). */
export function callerInstance(request: { instance?: Instance }): Instance {
  if (!request.instance) throw new Error('instance route without instance auth');
  return request.instance;
}
