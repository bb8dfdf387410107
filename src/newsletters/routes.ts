/** /newsletter routes: channels the instance owns or follows, their posts, and posting. */
import { errorResponses, INSTANCE, Page } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { NewsletterService } from './service.js';

const tags = ['newsletter'];
const instance = { access: 'instance' as const };
/** Every newsletter route needs a connected instance (409) whose driver handles newsletters (501). */
const refusals = [401, 403, 409, 501];
const onNewsletter = [...refusals, 404];

export function newsletterRoutes(newsletters: NewsletterService): RoutePlugin {
  return async (app) => {
    app.post(
      '/newsletter/create',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Create a newsletter',
          description:
            'The instance owns it. The instance gets NEWSLETTER `{ id, action: "create", name }`. Post with POST /newsletter/send.',
          body: S.CreateBody,
          response: { 201: S.NewsletterSchema, ...errorResponses(...refusals) },
        },
      },
      async (request, reply) => reply.status(201).send(await newsletters.create(callerInstance(request), request.body)),
    );

    app.get(
      '/newsletter/list',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Newsletters owned or followed',
          description: 'Newest first; `role` narrows to owned or followed ones.',
          querystring: S.ListQuery,
          response: { 200: Page(S.NewsletterSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => {
        const { offset, limit, role } = request.query;
        return newsletters.list(callerInstance(request), { offset, limit }, role);
      },
    );

    app.get(
      '/newsletter/info',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Newsletter info',
          description:
            'By `newsletterId` or by `inviteCode` (code or link) — exactly one. Works for newsletters the instance does not follow (`role: "guest"`). 404 unknown.',
          querystring: S.InfoQuery,
          response: { 200: S.NewsletterSchema, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => newsletters.info(callerInstance(request), request.query),
    );

    app.post(
      '/newsletter/update',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change a newsletter',
          description: 'Owner only (403). Owner and followers get NEWSLETTER `{ id, action: "update", changes }`.',
          body: S.UpdateBody,
          response: { 200: S.NewsletterSchema, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => {
        const { newsletterId, ...changes } = request.body;
        return newsletters.update(callerInstance(request), newsletterId, changes);
      },
    );

    app.post(
      '/newsletter/delete',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Delete a newsletter',
          description: 'Owner only (403). Owner and followers get NEWSLETTER `{ id, action: "delete" }`.',
          body: S.NewsletterBody,
          response: { 200: S.DeletedReply, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => newsletters.delete(callerInstance(request), request.body.newsletterId),
    );

    app.post(
      '/newsletter/follow',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Follow a newsletter',
          description:
            'Posts then arrive as MESSAGE events from the newsletter JID. The instance gets NEWSLETTER `{ id, action: "follow" }`. 409 when already following or owning it.',
          body: S.NewsletterBody,
          response: { 200: S.NewsletterSchema, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => newsletters.follow(callerInstance(request), request.body.newsletterId, true),
    );

    app.post(
      '/newsletter/unfollow',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Unfollow a newsletter',
          description: 'The instance gets NEWSLETTER `{ id, action: "unfollow" }`. 409 when not following.',
          body: S.NewsletterBody,
          response: { 200: S.NewsletterSchema, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => newsletters.follow(callerInstance(request), request.body.newsletterId, false),
    );

    app.post(
      '/newsletter/mute',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Mute a followed newsletter',
          description: 'The instance gets NEWSLETTER `{ id, action: "mute" }`. 409 when not following.',
          body: S.NewsletterBody,
          response: { 200: S.NewsletterSchema, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => newsletters.setMuted(callerInstance(request), request.body.newsletterId, true),
    );

    app.post(
      '/newsletter/unmute',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Unmute a followed newsletter',
          description: 'The instance gets NEWSLETTER `{ id, action: "unmute" }`. 409 when not following.',
          body: S.NewsletterBody,
          response: { 200: S.NewsletterSchema, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => newsletters.setMuted(callerInstance(request), request.body.newsletterId, false),
    );

    app.get(
      '/newsletter/messages',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Posts of a newsletter',
          description: 'Newest first, paged; readable without following.',
          querystring: S.MessagesQuery,
          response: { 200: Page(S.NewsletterMessageSchema), ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => {
        const { newsletterId, offset, limit } = request.query;
        return newsletters.messages(callerInstance(request), newsletterId, { offset, limit });
      },
    );

    app.post(
      '/newsletter/send',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Post a text to an owned newsletter',
          description:
            "Newsletters take posts here rather than through /send (whose `number` is a phone number). Owner only (403). The instance gets SEND_MESSAGE; every follower gets MESSAGE with `key.remoteJid` = the newsletter JID and the post's `serverId`.",
          body: S.SendBody,
          response: { 200: S.SendReply, ...errorResponses(...onNewsletter) },
        },
      },
      async (request) => newsletters.send(callerInstance(request), request.body.newsletterId, request.body.text),
    );
  };
}
