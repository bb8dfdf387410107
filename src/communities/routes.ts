/** /community routes: create, info, list, link and unlink groups, list their groups, announce. */
import { GroupSchema } from '../groups/schema.js';
import { errorResponses, INSTANCE, Page, PagingQuery } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { CommunityService } from './service.js';

const tags = ['community'];
const instance = { access: 'instance' as const };
/** Every community route needs a connected instance (409) whose driver handles communities (501). */
const refusals = [401, 403, 409, 501];
const onCommunity = [...refusals, 404];

export function communityRoutes(communities: CommunityService): RoutePlugin {
  return async (app) => {
    app.post(
      '/community/create',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Create a community',
          description:
            'The instance becomes its admin; the community comes with its announcement group. The instance gets GROUP `{ id, action: "create", isCommunity: true, announceGroupId }`.',
          body: S.CreateBody,
          response: { 201: S.CommunitySchema, ...errorResponses(...refusals) },
        },
      },
      async (request, reply) =>
        reply.status(201).send(await communities.create(callerInstance(request), request.body.subject, request.body.description)),
    );

    app.get(
      '/community/info',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Community info',
          description: '403 when the instance is not a member; 404 unknown.',
          querystring: S.CommunityQuery,
          response: { 200: S.CommunitySchema, ...errorResponses(...onCommunity) },
        },
      },
      async (request) => communities.info(callerInstance(request), request.query.communityId),
    );

    app.get(
      '/community/list',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Communities the instance is in',
          description: 'As admin or as a participant of a linked group; newest first.',
          querystring: PagingQuery,
          response: { 200: Page(S.CommunitySchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => communities.list(callerInstance(request), request.query),
    );

    app.post(
      '/community/link',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Link groups to a community',
          description:
            'Needs admin rights in the community and in every group (403); a group of another community is refused (409). All or nothing. Their participants join the announcement group (GROUP `add` there) and members get GROUP `{ id: communityId, action: "link", groups }`.',
          body: S.LinkBody,
          response: { 200: S.CommunitySchema, ...errorResponses(...onCommunity) },
        },
      },
      async (request) => communities.link(callerInstance(request), request.body.communityId, request.body.groupIds, true),
    );

    app.post(
      '/community/unlink',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Unlink groups from a community',
          description:
            'Community admins only (403); 409 for a group that is not linked. Participants who are no longer members leave the announcement group; members get GROUP `{ id: communityId, action: "unlink", groups }`.',
          body: S.LinkBody,
          response: { 200: S.CommunitySchema, ...errorResponses(...onCommunity) },
        },
      },
      async (request) => communities.link(callerInstance(request), request.body.communityId, request.body.groupIds, false),
    );

    app.get(
      '/community/groups',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Groups of a community',
          description: 'The announcement group first, then the linked groups. Members only (403).',
          querystring: S.PagedCommunityQuery,
          response: { 200: Page(GroupSchema), ...errorResponses(...onCommunity) },
        },
      },
      async (request) => {
        const { communityId, offset, limit } = request.query;
        return communities.groups(callerInstance(request), communityId, { offset, limit });
      },
    );

    app.post(
      '/community/announce',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Post to the announcement group',
          description:
            'Community admins only (403). The instance gets SEND_MESSAGE; every other member gets MESSAGE with `key.remoteJid` = the announcement group and `participant` = the author.',
          body: S.AnnounceBody,
          response: { 200: S.AnnounceReply, ...errorResponses(...onCommunity) },
        },
      },
      async (request) => communities.announce(callerInstance(request), request.body.communityId, request.body.text),
    );
  };
}
