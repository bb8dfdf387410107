/** /sandbox routes (admin key) that act in the sandbox world: accounts, contacts in groups, calls. */
import { Type } from 'typebox';
import { ADMIN, errorResponses } from '../http/schemas.js';
import type { RoutePlugin } from '../http/types.js';
import * as S from './world-schema.js';
import type { SandboxWorldService } from './world-service.js';

const tags = ['sandbox'];
const admin = { access: 'admin' as const };

export function sandboxWorldRoutes(world: SandboxWorldService): RoutePlugin {
  return async (app) => {
    app.post(
      '/sandbox/accounts',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Create or update a sandbox account',
          description:
            'Puts `number` on the sandbox network (so `GET /chat/check` finds it and groups can add it) and sets its profile: `pushName`, `about`, and whether it is a WhatsApp Business account (`business`, `businessProfile`). Works for virtual contacts and for the numbers of sandbox instances — e.g. make an instance a business account to use `/label`. Unset fields keep their value.',
          body: S.AccountBody,
          response: { 200: S.AccountReply, ...errorResponses(401, 403) },
        },
      },
      async (request) => world.upsertAccount(request.body),
    );

    app.post(
      '/sandbox/groups/join',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A virtual contact joins a group by invite',
          description:
            'The contact uses an invite code or link. Groups with join approval get a join request instead (`status: "requested"`; admins get GROUP `join_request`); otherwise the participants get GROUP `join`. 404 for an invalid or revoked code, 409 when already a participant.',
          body: S.ContactJoinBody,
          response: {
            200: Type.Object({ groupId: Type.String(), status: Type.Enum(['joined', 'requested'] as const) }),
            ...errorResponses(401, 403, 404, 409),
          },
        },
      },
      async (request) => world.contactJoins(request.body.number, request.body.inviteCode),
    );

    app.post(
      '/sandbox/groups/leave',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A virtual contact leaves a group',
          description: 'The participants get GROUP `leave`. 404 unknown group, 409 not a participant.',
          body: S.ContactLeaveBody,
          response: { 200: Type.Object({ groupId: Type.String(), left: Type.Literal(true) }), ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => world.contactLeaves(request.body.number, request.body.groupId),
    );

    app.post(
      '/sandbox/calls/end',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'The caller hangs up',
          description:
            'A call still ringing (see POST /sandbox/calls) ends unanswered: CALL with status `timeout`; the call history shows it `missed`. 404 unknown call, 409 not ringing.',
          body: S.CallEndBody,
          response: { 200: Type.Object({ callId: Type.String(), status: Type.Literal('missed') }), ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => world.callerHangsUp(request.body.callId, request.body.to),
    );
  };
}
