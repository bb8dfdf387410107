/** Labels of WhatsApp Business accounts (src/labels/routes.ts). */
import type { ModuleFactory } from '../modules.js';
import { labelRoutes } from './routes.js';
import { LabelService } from './service.js';

export const labelsModule: ModuleFactory = (deps) => ({ name: 'labels', routes: [labelRoutes(new LabelService(deps.sessions))] });
