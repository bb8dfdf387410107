/** Groups: create, participants, settings and invites (src/groups/routes.ts). */
import type { ModuleFactory } from '../modules.js';
import { groupRoutes } from './routes.js';
import { GroupService } from './service.js';

export const groupsModule: ModuleFactory = (deps) => ({ name: 'groups', routes: [groupRoutes(new GroupService(deps.sessions))] });
