/** Delivery: dead letters (list, retry, discard) and the /ws live stream. */
import type { ModuleFactory } from '../modules.js';
import { eventRoutes } from './routes.js';
import { DeadLetterService } from './service.js';

export const deliveryModule: ModuleFactory = (deps) => ({
  name: 'delivery',
  routes: [eventRoutes(new DeadLetterService(deps.deadLetters, deps.instances, deps.webhook, deps.clock, (name) => deps.dispatcher.sink(name)), deps.instances, deps.hub)],
});
