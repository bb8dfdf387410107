/** /server/ok liveness (no key). */
import { Type } from 'typebox';
import type { RoutePlugin } from '../http/types.js';

export interface HealthSource {
  version: string;
  startedAt: number;
  channels(): Record<string, { up: boolean; detail?: string }>;
  role(): 'active' | 'standby';
}

export function serverRoutes(health: HealthSource): RoutePlugin {
  return async (app) => {
    app.get(
      '/server/ok',
      {
        schema: {
          tags: ['server'],
          summary: 'Liveness',
          description:
            'No key needed. `channels` shows each configured event channel and whether it is connected. `role` is `active` for the process that holds sessions and delivers events for its database, `standby` for one waiting to take over (PostgreSQL; see the description of the API).',
          response: {
            200: Type.Object({
              status: Type.Literal('ok'),
              version: Type.String(),
              uptimeSeconds: Type.Integer(),
              role: Type.Enum(['active', 'standby'] as const),
              channels: Type.Record(Type.String(), Type.Object({ up: Type.Boolean(), detail: Type.Optional(Type.String()) })),
            }),
          },
        },
      },
      async () => ({
        status: 'ok' as const,
        version: health.version,
        uptimeSeconds: Math.floor((Date.now() - health.startedAt) / 1000),
        role: health.role(),
        channels: health.channels(),
      }),
    );
  };
}
