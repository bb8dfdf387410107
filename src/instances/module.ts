/** Instances: create, list, delete, tokens, webhook and network settings, and the lifecycle on the network. */
import type { ModuleFactory } from '../modules.js';
import { InstanceLifecycle } from './lifecycle.js';
import { instanceRoutes } from './routes.js';

export const instancesModule: ModuleFactory = (deps) => ({
  name: 'instances',
  routes: [instanceRoutes(deps.instances, new InstanceLifecycle(deps.instances, deps.sessions), deps.health)],
});
