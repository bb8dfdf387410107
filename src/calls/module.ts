/** Calls: reject, call links and the per-instance auto-reject policy applied to incoming calls. */
import type { ModuleFactory } from '../modules.js';
import { callRoutes } from './routes.js';
import { CallService } from './service.js';

export const callsModule: ModuleFactory = (deps) => {
  const calls = new CallService(deps.sessions, deps.instances, deps.log);
  calls.watchIncomingCalls();
  return { name: 'calls', routes: [callRoutes(calls)] };
};
