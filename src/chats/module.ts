/** Chats: list, read, archive, pin, mute and mark chats (src/chats/routes.ts). */
import type { ModuleFactory } from '../modules.js';
import { chatRoutes } from './routes.js';
import { ChatService } from './service.js';

export const chatsModule: ModuleFactory = (deps) => ({ name: 'chats', routes: [chatRoutes(new ChatService(deps.sessions, deps.clock))] });
