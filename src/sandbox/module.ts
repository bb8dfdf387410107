/** /sandbox control routes (admin): act as the phones and contacts of the simulated network, and shape its world. */
import type { ModuleFactory } from '../modules.js';
import { sandboxRoutes } from './routes.js';
import { SandboxService } from './service.js';
import { sandboxWorldRoutes } from './world-routes.js';
import { SandboxWorldService } from './world-service.js';

export const sandboxModule: ModuleFactory = (deps) => ({
  name: 'sandbox',
  routes: [
    sandboxRoutes(new SandboxService(deps.sandbox.network, deps.sessions, deps.instances, deps.messages)),
    sandboxWorldRoutes(new SandboxWorldService(deps.sandbox.world)),
  ],
});
