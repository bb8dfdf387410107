/** /user routes: people (info, avatar, contacts, blocks, presence) and the instance's own profile and privacy. */
import { errorResponses, INSTANCE, Page, PagingQuery } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { UserService } from './service.js';

const tags = ['user'];
const instance = { access: 'instance' as const };
/** Every user route needs a connected instance (409) whose driver manages users (501). */
const refusals = [401, 403, 409, 501];

export function userRoutes(users: UserService): RoutePlugin {
  return async (app) => {
    app.get(
      '/user/info',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Profile of a user',
          description:
            "Profile name, about text, picture URL and business profile, as the user's privacy lets this instance see them (hidden parts are null). 404 when the number is not on the network.",
          querystring: S.NumberQuery,
          response: { 200: S.UserInfoSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => users.info(callerInstance(request), request.query.number),
    );

    app.get(
      '/user/avatar',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Profile picture of a user',
          description:
            '`url` is null when the user has no picture or hides it from this instance. 404 when the number is not on the network.',
          querystring: S.NumberQuery,
          response: { 200: S.PictureReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => users.avatar(callerInstance(request), request.query.number),
    );

    app.get(
      '/user/contacts',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Contacts',
          description: "The instance's contacts by name. On the sandbox network the contacts are the people the instance has a chat with.",
          querystring: PagingQuery,
          response: { 200: Page(S.ContactSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => users.contacts(callerInstance(request), request.query),
    );

    app.post(
      '/user/resolve',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Resolve LIDs and phone numbers',
          description:
            "WhatsApp names people more and more by a hidden id (LID, `<id>@lid`) instead of their number. Give LIDs, numbers or phone JIDs; each answer pairs the phone number with the LID as far as this instance knows them: learnt from messages, history sync and contacts, Baileys' mapping store, and for a number by asking WhatsApp. The number behind a LID stays null when the network has not revealed it to this account. Events already carry the phone JID wherever it is known, with the LID beside it (`remoteJidLid`, `participantLid`). On the sandbox network every number on it has a stable LID.",
          body: S.ResolveBody,
          response: { 200: S.ResolveReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.resolveAddresses(callerInstance(request), request.body.ids),
    );

    app.get(
      '/user/privacy',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Privacy settings',
          description: 'Who sees last seen, online, picture and about; who may add the instance to groups; read receipts; who may call.',
          response: { 200: S.PrivacySchema, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.privacy(callerInstance(request)),
    );

    app.post(
      '/user/privacy',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change privacy settings',
          description:
            'Give the settings to change; the reply has all of them. They apply at once: profile picture, about and presence seen by others, who may add the instance to groups (others get `privacy_restricted`), whether marking chats read sends receipts. `contacts` and `contact_blacklist` both mean "my contacts" here.',
          body: S.PrivacyBody,
          response: { 200: S.PrivacySchema, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.setPrivacy(callerInstance(request), request.body),
    );

    app.post(
      '/user/block',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Block a user',
          description:
            'A blocked user no longer sees the instance\'s picture, about text or presence, and cannot add it to groups. The instance gets CONTACT `{ id, action: "block" }`. Blocking twice changes nothing.',
          body: S.NumberBody,
          response: { 200: S.BlockReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.setBlocked(callerInstance(request), request.body.number, true),
    );

    app.post(
      '/user/unblock',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Unblock a user',
          description: 'The instance gets CONTACT `{ id, action: "unblock" }`.',
          body: S.NumberBody,
          response: { 200: S.BlockReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.setBlocked(callerInstance(request), request.body.number, false),
    );

    app.get(
      '/user/blocklist',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Blocked users',
          description: 'In the order they were blocked.',
          querystring: PagingQuery,
          response: { 200: Page(S.BlockedSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => users.blocklist(callerInstance(request), request.query),
    );

    app.get(
      '/user/profile',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: "The instance's own profile",
          description: 'Name, about, picture and, for business accounts, the business profile.',
          response: { 200: S.ProfileSchema, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.profile(callerInstance(request)),
    );

    app.post(
      '/user/profile/name',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Set the profile name',
          description: 'People with a chat with the instance get CONTACT `{ id, action: "update", pushName }`.',
          body: S.NameBody,
          response: { 200: S.ProfileSchema, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.setName(callerInstance(request), request.body.name),
    );

    app.post(
      '/user/profile/about',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Set the about text',
          description: 'People with a chat with the instance who may see it get CONTACT `{ id, action: "update", about }`.',
          body: S.AboutBody,
          response: { 200: S.ProfileSchema, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.setAbout(callerInstance(request), request.body.about),
    );

    app.post(
      '/user/profile/picture',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Set the profile picture',
          description: 'People with a chat with the instance who may see it get CONTACT `{ id, action: "update", pictureId }`.',
          body: S.ProfilePictureBody,
          response: { 200: S.ProfileSchema, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.setPicture(callerInstance(request), request.body.image),
    );

    app.post(
      '/user/profile/picture/remove',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Remove the profile picture',
          description: '404 when there is none. Watchers get CONTACT with `pictureId: null`.',
          response: { 200: S.ProfileSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => users.removePicture(callerInstance(request)),
    );

    app.post(
      '/user/presence/subscribe',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: "Subscribe to a user's presence",
          description:
            "From now on the user's online/offline changes come as PRESENCE events `{ id, presence, lastSeen? }`, as far as their privacy allows; the current presence, when known, comes at once (and in the reply). 404 when the number is not on the network.",
          body: S.NumberBody,
          response: { 200: S.SubscribeReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => users.subscribePresence(callerInstance(request), request.body.number),
    );

    app.post(
      '/user/presence',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: "Set the instance's own presence",
          description:
            "Shows the instance online (`available`) or offline (`unavailable`, which sets its last seen). Subscribers get PRESENCE events as the instance's privacy allows. Typing/recording in a chat is a /message operation.",
          body: S.SetPresenceBody,
          response: { 200: S.SetPresenceReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => users.setPresence(callerInstance(request), request.body.presence),
    );
  };
}
