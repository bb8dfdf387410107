/** /chat routes: the instance's chats — list, search, pin, archive, mute, unread, delete, clear, history, number check. */
import { errorResponses, INSTANCE, Page } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { ChatService } from './service.js';

const tags = ['chat'];
const instance = { access: 'instance' as const };
/** Every chat route needs a connected instance (409) whose driver manages chats (501). */
const refusals = [401, 403, 409, 501];

export function chatRoutes(chats: ChatService): RoutePlugin {
  return async (app) => {
    app.get(
      '/chat/list',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'List chats',
          description:
            "The instance's chats, pinned first (most recently pinned first), then by last activity, newest first; each with its last message and unread count. Filters combine. Group and community chats appear when the instance joins them; newsletter chats when it follows or owns the newsletter.",
          querystring: S.ListQuery,
          response: { 200: Page(S.ChatSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => {
        const { offset, limit, ...filter } = request.query;
        return chats.list(callerInstance(request), filter, { offset, limit });
      },
    );

    app.get(
      '/chat/search',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Search chats',
          description: 'Chats whose name, number/JID or one of whose messages contains `query` (case-insensitive), in list order.',
          querystring: S.SearchQuery,
          response: { 200: Page(S.ChatSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => {
        const { offset, limit, query } = request.query;
        return chats.list(callerInstance(request), { query }, { offset, limit });
      },
    );

    app.get(
      '/chat/info',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'One chat',
          description: '404 when the instance has no such chat.',
          querystring: S.ChatQuery,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.get(callerInstance(request), request.query.chatId),
    );

    app.post(
      '/chat/pin',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Pin a chat',
          description:
            'At most 3 chats can be pinned (409 beyond), and an archived chat cannot be (409). Pinning a pinned chat changes nothing.',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.setPinned(callerInstance(request), request.body.chatId, true),
    );

    app.post(
      '/chat/unpin',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Unpin a chat',
          description: 'Unpinning a chat that is not pinned changes nothing.',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.setPinned(callerInstance(request), request.body.chatId, false),
    );

    app.post(
      '/chat/archive',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Archive a chat',
          description: 'Archiving also unpins. A new message brings an archived chat back unless the chat is muted (as on the phone).',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.setArchived(callerInstance(request), request.body.chatId, true),
    );

    app.post(
      '/chat/unarchive',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Unarchive a chat',
          description: 'The chat returns to the main list (not pinned).',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.setArchived(callerInstance(request), request.body.chatId, false),
    );

    app.post(
      '/chat/mute',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Mute a chat',
          description: 'Mutes notifications for `duration` seconds (`mutedUntil` in the reply), or for ever when `duration` is omitted.',
          body: S.MuteBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.mute(callerInstance(request), request.body.chatId, request.body.duration),
    );

    app.post(
      '/chat/unmute',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Unmute a chat',
          description: 'Ends a timed or permanent mute.',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.unmute(callerInstance(request), request.body.chatId),
    );

    app.post(
      '/chat/mark-unread',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Mark a chat unread',
          description: 'Sets the unread mark (`markedUnread`) as the phone\'s "mark as unread" does; no receipt is sent.',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.markUnread(callerInstance(request), request.body.chatId),
    );

    app.post(
      '/chat/mark-read',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Mark a whole chat read',
          description:
            'Clears the unread count and mark. The senders of the unread messages get READ_RECEIPT events, unless the instance\'s privacy has `readReceipts: "none"`. To acknowledge single messages use the /message routes.',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.markRead(callerInstance(request), request.body.chatId),
    );

    app.post(
      '/chat/delete',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Delete a chat',
          description:
            "Removes the chat from this instance's chat list and hides its messages from /chat/history for good (others keep theirs; the message store still answers GET /message/find until MESSAGE_RETENTION_DAYS). A later message starts the chat again.",
          body: S.ChatBody,
          response: { 200: S.DeletedReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.delete(callerInstance(request), request.body.chatId),
    );

    app.post(
      '/chat/clear',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Clear a chat',
          description: 'Removes every message of the chat from this instance and keeps the chat.',
          body: S.ChatBody,
          response: { 200: S.ChatSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.clear(callerInstance(request), request.body.chatId),
    );

    app.get(
      '/chat/history',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Messages of a chat',
          description:
            "The chat's messages, newest first, paged. Both networks answer from the messages the gateway stored (MESSAGE_RETENTION_DAYS); on the sandbox the latest 100 per chat from memory and older ones from the message store (which also fills them again after a restart); a clear or delete hides older messages for good. To get older messages from the phone use POST /chat/history/request.",
          querystring: S.HistoryQuery,
          response: { 200: Page(S.ChatMessageSchema), ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => {
        const { offset, limit, chatId } = request.query;
        return chats.history(callerInstance(request), chatId, { offset, limit });
      },
    );

    app.post(
      '/chat/history/request',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: "Ask the phone for a chat's history",
          description:
            'Asks the phone to send the latest `count` messages of the chat again. They arrive as a HISTORY_SYNC event: `data` = `{ syncType: "ON_DEMAND", chatId, messages: [<message as in /chat/history>], progress }`. The reply says how many were requested.',
          body: S.HistoryRequestBody,
          response: { 200: S.HistoryRequestReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => chats.requestHistory(callerInstance(request), request.body.chatId, request.body.count),
    );

    app.get(
      '/chat/check',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Check numbers on the network',
          description:
            'Whether each number has an account on the network (repeat `numbers`, up to 100). On the sandbox network a number exists when a sandbox instance is linked to it, it was registered with POST /sandbox/accounts or /sandbox/contacts, or it has sent a message.',
          querystring: S.CheckQuery,
          response: { 200: S.CheckReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => chats.check(callerInstance(request), request.query.numbers),
    );
  };
}
