/** The rest of /admin: the overview and bulk operations over instances, outbox and dead letters. */
import type { ModuleFactory } from '../../modules.js';
import { adminOpsRoutes } from './routes.js';
import { AdminOpsService } from './service.js';

export const adminOpsModule: ModuleFactory = (deps) => {
  const ops = new AdminOpsService({
    clock: deps.clock,
    instances: deps.instances,
    sessions: deps.sessions,
    outbox: deps.outbox,
    deadLetters: deps.deadLetters,
    messages: deps.messages,
    channelHealth: () => deps.channelHealth(),
  });
  return { name: 'admin-ops', routes: [adminOpsRoutes(ops)] };
};
