/** Server: /server/ok liveness, /server/ready readiness and /metrics (Prometheus). */
import { sql } from 'kysely';
import type { ModuleFactory } from '../modules.js';
import { metricsRoutes } from './metrics.js';
import { serverRoutes } from './routes.js';

export const serverModule: ModuleFactory = (deps) => ({
  name: 'server',
  rootRoutes: [metricsRoutes(deps.metrics)],
  routes: [
    serverRoutes({
      version: deps.version,
      startedAt: deps.startedAt,
      channels: deps.channelHealth,
      role: deps.role,
      storage: async () => {
        await sql`select 1`.execute(deps.storage.db);
      },
    }),
  ],
});
