/** /admin/failover-groups (admin key): create, list, read, change, delete groups, rotate their token. HTTP only. */
import { Type } from 'typebox';
import { ADMIN, errorResponses, Page, PagingQuery } from '../../http/schemas.js';
import type { RoutePlugin } from '../../http/types.js';
import * as S from './schema.js';
import type { FailoverService } from './service.js';

const tags = ['admin'];
const admin = { access: 'admin' as const };

const SENDING =
  'The group token is the `apikey` of every /send/* route: each send goes to one member, picked by `policy` among the connected members whose health score is at least `minHealth` (with `sticky`, a recipient keeps the member that last served it while it is eligible). A send refused before it reached the network (member not connected, network unavailable or rate-limiting) is tried on the next eligible member; a send that reached the network is never sent twice. The reply names the member in `instanceId`. No eligible member: 503 `failover_no_eligible_member`. Any other instance route with a group token: 403 `group_token_send_only`.';

export function failoverRoutes(failover: FailoverService): RoutePlugin {
  return async (app) => {
    app.post(
      '/admin/failover-groups',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Create a failover group',
          description: `Several instances (\`members\`, in priority order) that send as one. The reply carries the group \`token\` and \`webhookSecret\`, shown only here. ${SENDING} With \`webhookUrl\`, the events of every member are also POSTed there, signed with the group's secret. 400 for unknown member ids, 409 when the name is taken.`,
          body: S.CreateGroupBody,
          response: { 201: S.CreatedGroup, ...errorResponses(401, 403, 409) },
        },
      },
      async (request, reply) => {
        const { group, token } = await failover.create(request.body);
        return reply.status(201).send({
          groupId: group.id,
          name: group.name,
          members: group.members,
          policy: group.policy,
          minHealth: group.minHealth,
          sticky: group.sticky,
          webhookUrl: group.webhookUrl,
          token,
          webhookSecret: group.webhookSecret,
          createdAt: new Date(group.createdAt).toISOString(),
        });
      },
    );

    app.get(
      '/admin/failover-groups',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'List failover groups',
          description:
            'Every group, oldest first, paged with `offset`/`limit`, with its members (health, eligibility) and the member `serving` now. Tokens and webhook secrets are never listed.',
          querystring: PagingQuery,
          response: { 200: Page(S.GroupView), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const { offset, limit } = request.query;
        const { items, total } = failover.list(offset, limit);
        return { items: await Promise.all(items.map((group) => failover.view(group))), total, offset, limit };
      },
    );

    app.get(
      '/admin/failover-groups/:groupId',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A failover group',
          description:
            "The group with each member's status, health score and reasons, whether it is eligible, and which one is serving. 404 for an unknown id.",
          params: S.GroupParams,
          response: { 200: S.GroupView, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => failover.view(failover.get(request.params.groupId)),
    );

    app.patch(
      '/admin/failover-groups/:groupId',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Change a failover group',
          description:
            'Changes any of `name`, `members` (the whole list, in priority order), `policy`, `minHealth`, `sticky`, `webhookUrl` (null stops the group webhook) and `webhookSecret`. Sends already under way finish as they started; events already recorded keep their delivery. 400 unknown members, 404 unknown group, 409 name taken.',
          params: S.GroupParams,
          body: S.UpdateGroupBody,
          response: { 200: S.GroupView, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => failover.view(await failover.update(request.params.groupId, request.body)),
    );

    app.delete(
      '/admin/failover-groups/:groupId',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Delete a failover group',
          description:
            'The group, its tokens and its webhook deliveries still waiting go; the member instances stay as they are. 404 for an unknown id.',
          params: S.GroupParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true), groupId: Type.String() }), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => {
        await failover.delete(request.params.groupId);
        return { deleted: true as const, groupId: request.params.groupId };
      },
    );

    app.post(
      '/admin/failover-groups/:groupId/rotate-token',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Rotate a failover group token',
          description:
            'Issues a new group token. The old one keeps working until `oldTokenValidUntil` (now + TOKEN_GRACE_SECONDS, as for instance tokens); after that it gets 401 `token expired, please use the new token`.',
          params: S.GroupParams,
          response: { 200: S.RotateReply, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => failover.rotateToken(request.params.groupId),
    );
  };
}
