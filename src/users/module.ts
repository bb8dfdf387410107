/** Users: profiles, contacts, privacy and blocking (src/users/routes.ts). */
import type { ModuleFactory } from '../modules.js';
import { userRoutes } from './routes.js';
import { UserService } from './service.js';

export const usersModule: ModuleFactory = (deps) => ({ name: 'users', routes: [userRoutes(new UserService(deps.sessions))] });
