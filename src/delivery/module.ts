/** Delivery: dead letters (list, retry, discard) and the /ws live stream. */
import type { ModuleFactory } from '../modules.js';
import { eventRoutes } from './routes.js';

export const deliveryModule: ModuleFactory = (deps) => ({
  name: 'delivery',
  routes: [eventRoutes(deps.deadLetters, deps.instances, deps.hub)],
});
