/**
 * Messages: actions on messages already sent or received (edit, delete, react, read, poll results,
 * find), and keeping the stored messages true to the deletions, edits and votes that follow them.
 */
import type { ModuleFactory } from '../modules.js';
import { messageActionRoutes } from './routes.js';
import { MessageService } from './service.js';
import { MessageUpdates } from './updates.js';

export const messagesModule: ModuleFactory = (deps) => {
  // Deletions, edits and poll votes change the stored messages they point at (runs after the recorder).
  const updates = new MessageUpdates(deps.messages, deps.media, deps.clock, deps.log);
  deps.sessions.beforeQueue((instanceId, event) => updates.record(instanceId, event));
  const actions = new MessageService(deps.sessions, deps.messages, deps.clock, deps.log);
  return {
    name: 'messages',
    routes: [messageActionRoutes(actions)],
    stop: () => {
      actions.stop();
      return Promise.resolve();
    },
  };
};
