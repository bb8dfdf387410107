/** Communities and their groups (src/communities/routes.ts). */
import type { ModuleFactory } from '../modules.js';
import { communityRoutes } from './routes.js';
import { CommunityService } from './service.js';

export const communitiesModule: ModuleFactory = (deps) => ({
  name: 'communities',
  routes: [communityRoutes(new CommunityService(deps.sessions))],
});
