/** /group routes: create, info, list, participants, picture, subject, description, settings, invites, join, leave, join requests. */
import { errorResponses, INSTANCE, Page, PagingQuery } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import type { ParticipantAction } from '../network/port.js';
import * as S from './schema.js';
import type { GroupService } from './service.js';

const tags = ['group'];
const instance = { access: 'instance' as const };
/** Every group route needs a connected instance (409) whose driver manages groups (501). */
const refusals = [401, 403, 409, 501];
/** Routes on one group: 404 unknown group, 403 not a participant (or not an admin where needed). */
const onGroup = [...refusals, 404];

const PARTICIPANT_ACTIONS: Record<ParticipantAction, { summary: string; description: string }> = {
  add: {
    summary: 'Add participants',
    description:
      'Admins add people (anyone may when `memberAddMode` is `all`). Each number gets its own result: people whose privacy (`groupAdd`) does not allow it get `privacy_restricted` — send them the invite link. Added people leave pending join requests. Participants get GROUP `add`.',
  },
  remove: {
    summary: 'Remove participants',
    description:
      'Admins only (403 otherwise). The creator cannot be removed (`not_allowed`). Participants and the removed get GROUP `remove`.',
  },
  promote: {
    summary: 'Make participants admins',
    description: 'Admins only (403 otherwise). Participants get GROUP `promote`.',
  },
  demote: {
    summary: 'Take admin rights away',
    description: 'Admins only (403 otherwise). The creator cannot be demoted (`not_allowed`). Participants get GROUP `demote`.',
  },
};

export function groupRoutes(groups: GroupService): RoutePlugin {
  return async (app) => {
    app.post(
      '/group/create',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Create a group',
          description:
            'Creates a group with the instance as creator (`superadmin`) and adds `participants`; each gets a result as in /group/participants/add (the group is created even when some cannot be added). Everyone added gets GROUP `create`.',
          body: S.CreateBody,
          response: { 201: S.CreateReply, ...errorResponses(...refusals) },
        },
      },
      async (request, reply) => reply.status(201).send(await groups.create(callerInstance(request), request.body)),
    );

    app.get(
      '/group/info',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Group info',
          description: 'Subject, description, settings and participants with their roles. 403 when the instance is not a participant.',
          querystring: S.GroupQuery,
          response: { 200: S.GroupSchema, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.info(callerInstance(request), request.query.groupId),
    );

    app.get(
      '/group/list',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Groups the instance is in',
          description: 'Newest first, with participants; community announcement groups included (`isCommunityAnnounce`).',
          querystring: PagingQuery,
          response: { 200: Page(S.GroupSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => groups.list(callerInstance(request), request.query),
    );

    for (const action of ['add', 'remove', 'promote', 'demote'] as const) {
      app.post(
        `/group/participants/${action}`,
        {
          config: instance,
          schema: {
            tags,
            security: INSTANCE,
            ...PARTICIPANT_ACTIONS[action],
            body: S.ParticipantsBody,
            response: { 200: S.ParticipantsReply, ...errorResponses(...onGroup) },
          },
        },
        async (request) => groups.participants(callerInstance(request), request.body.groupId, action, request.body.participants),
      );
    }

    app.get(
      '/group/picture',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Group picture',
          description: '`url` is null when the group has no picture.',
          querystring: S.GroupQuery,
          response: { 200: S.PictureReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.picture(callerInstance(request), request.query.groupId),
    );

    app.post(
      '/group/picture',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Set the group picture',
          description:
            'Any participant, or admins only when the group is `locked` (403). Participants get GROUP `update` with `changes.pictureId`.',
          body: S.PictureBody,
          response: { 200: S.PictureReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.setPicture(callerInstance(request), request.body.groupId, request.body.image),
    );

    app.post(
      '/group/picture/remove',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Remove the group picture',
          description: 'As setting it; 404 when there is none. Participants get GROUP `update` with `changes.pictureId: null`.',
          body: S.GroupBody,
          response: { 200: S.PictureReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.removePicture(callerInstance(request), request.body.groupId),
    );

    app.post(
      '/group/subject',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change the subject',
          description: 'Any participant, or admins only when `locked` (403). Participants get GROUP `update` with `changes.subject`.',
          body: S.SubjectBody,
          response: { 200: S.GroupSchema, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.setSubject(callerInstance(request), request.body.groupId, request.body.subject),
    );

    app.post(
      '/group/description',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change the description',
          description:
            'Any participant, or admins only when `locked` (403); an empty string removes it. Participants get GROUP `update` with `changes.description`.',
          body: S.DescriptionBody,
          response: { 200: S.GroupSchema, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.setDescription(callerInstance(request), request.body.groupId, request.body.description),
    );

    app.post(
      '/group/settings',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change group settings',
          description:
            'Admins only (403). Give any of `announce` (only admins send), `locked` (only admins edit info), `joinApproval`, `ephemeral` (disappearing messages), `memberAddMode`. Participants get GROUP `update` with the `changes`.',
          body: S.SettingsBody,
          response: { 200: S.GroupSchema, ...errorResponses(...onGroup) },
        },
      },
      async (request) => {
        const { groupId, ...settings } = request.body;
        return groups.updateSettings(callerInstance(request), groupId, settings);
      },
    );

    app.get(
      '/group/invite-link',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Invite link',
          description: 'Admins only (403). Community announcement groups have none (409).',
          querystring: S.GroupQuery,
          response: { 200: S.InviteReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.inviteLink(callerInstance(request), request.query.groupId),
    );

    app.post(
      '/group/invite-link/revoke',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Revoke the invite link',
          description:
            'Admins only (403). The old link stops working; the reply carries the new one. Admins get GROUP `update` with `changes.inviteLinkRevoked`.',
          body: S.GroupBody,
          response: { 200: S.InviteReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.revokeInvite(callerInstance(request), request.body.groupId),
    );

    app.get(
      '/group/invite-info',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'What an invite leads to',
          description: 'The group behind an invite code or link, without joining. 404 for an invalid or revoked code.',
          querystring: S.InviteQuery,
          response: { 200: S.InvitePreviewSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => groups.inviteInfo(callerInstance(request), request.query.inviteCode),
    );

    app.post(
      '/group/join',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Join by invite',
          description:
            'Joins at once (`joined`; participants get GROUP `join`), or, when the group has `joinApproval`, files a request (`requested`; admins get GROUP `join_request`). 404 invalid or revoked code, 409 already a participant or group full.',
          body: S.InviteBody,
          response: { 200: S.JoinReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => groups.join(callerInstance(request), request.body.inviteCode),
    );

    app.post(
      '/group/leave',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Leave a group',
          description:
            'Participants get GROUP `leave`. When the last admin leaves, the longest-standing participant becomes admin (GROUP `promote`). A community announcement group is left by leaving the community groups (409).',
          body: S.GroupBody,
          response: { 200: S.LeaveReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.leave(callerInstance(request), request.body.groupId),
    );

    app.get(
      '/group/requests',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Pending join requests',
          description: 'Admins only (403). Requests made through the invite link of a group with `joinApproval`, oldest first.',
          querystring: S.PagedGroupQuery,
          response: { 200: Page(S.JoinRequestSchema), ...errorResponses(...onGroup) },
        },
      },
      async (request) => {
        const { groupId, offset, limit } = request.query;
        return groups.joinRequests(callerInstance(request), groupId, { offset, limit });
      },
    );

    app.post(
      '/group/requests/approve',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Approve join requests',
          description:
            'Admins only (403). Approved people become participants (GROUP `add`); numbers without a pending request get `no_request`.',
          body: S.ParticipantsBody,
          response: { 200: S.ParticipantsReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.handleJoinRequests(callerInstance(request), request.body.groupId, 'approve', request.body.participants),
    );

    app.post(
      '/group/requests/reject',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Reject join requests',
          description:
            'Admins only (403). Admins and the rejected get GROUP `join_request_rejected`; numbers without a pending request get `no_request`.',
          body: S.ParticipantsBody,
          response: { 200: S.ParticipantsReply, ...errorResponses(...onGroup) },
        },
      },
      async (request) => groups.handleJoinRequests(callerInstance(request), request.body.groupId, 'reject', request.body.participants),
    );
  };
}
