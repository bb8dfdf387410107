/** Newsletters (channels): create, follow, post (src/newsletters/routes.ts). */
import type { ModuleFactory } from '../modules.js';
import { newsletterRoutes } from './routes.js';
import { NewsletterService } from './service.js';

export const newslettersModule: ModuleFactory = (deps) => ({
  name: 'newsletters',
  routes: [newsletterRoutes(new NewsletterService(deps.sessions))],
});
