/**
 * auth/: users of the web interface. Adds the /auth routes and the admin WebSocket, and lets a
 * signed-in user's access token (JWT) act on admin routes: owners and operators everywhere the
 * admin key works, viewers on reading routes only (http/auth.ts enforces that).
 */
import type { ModuleFactory } from '../modules.js';
import { AuthRepo } from './repo.js';
import { bearerOf, authRoutes } from './routes.js';
import { AuthService, resolveJwtSecret } from './service.js';

export const authModule: ModuleFactory = (deps) => {
  const service = new AuthService(
    new AuthRepo(deps.storage.db),
    deps.config.auth,
    resolveJwtSecret(deps.config.auth.jwtSecret, deps.config.dataDir),
    deps.clock,
  );
  deps.resolvers.admin.push(async (request) => {
    const token = bearerOf(request);
    if (!token) return undefined;
    const user = await service.verify(token);
    return { id: `user:${user.id}`, readOnly: user.role === 'viewer' };
  });
  let pruner: NodeJS.Timeout | undefined;
  return {
    name: 'auth',
    routes: [authRoutes({ service, hub: deps.hub, adminKey: deps.adminKey, cookieSecure: deps.config.auth.cookieSecure })],
    async start() {
      // Spent and revoked refresh tokens are kept until they expire (reuse detection), then dropped.
      pruner = setInterval(() => {
        service.prune().catch((error: unknown) => deps.log.warn({ err: error }, 'refresh token prune failed'));
      }, 3_600_000);
      pruner.unref();
    },
    async standDown() {
      clearInterval(pruner);
    },
    async stop() {
      clearInterval(pruner);
    },
  };
};
