/** /message routes acting on stored messages: react, presence, read, delete, edit, find, poll results. HTTP only. */
import { errorResponses, INSTANCE, Page } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { MessageService } from './service.js';

const tags = ['message'];
const instance = { access: 'instance' as const };
/** Acting on a message needs a connected instance (409) whose driver supports it (501). */
const refusals = [401, 403, 404, 409, 501];

const TARGET =
  "The message is addressed by `chatId` and `messageId` and must be in this instance's message store (sent or received by it, kept for MESSAGE_RETENTION_DAYS): 404 otherwise, 409 when it was already deleted for everyone.";

export function messageActionRoutes(messages: MessageService): RoutePlugin {
  return async (app) => {
    app.post(
      '/message/react',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'React to a message',
          description: `Reacts with \`emoji\` (one emoji; 400 otherwise) to a message sent or received in the chat; a new reaction replaces this instance's previous one, and \`""\` removes it. ${TARGET} The reply and the SEND_MESSAGE event carry \`reactionMessage {key, text, senderTimestampMs}\`; the other side of the chat (each group participant) gets a MESSAGE with \`reactionMessage\` whose \`key\` names the message as they see it.`,
          body: S.ReactBody,
          response: { 200: S.ActionReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => messages.react(callerInstance(request), request.body),
    );

    app.post(
      '/message/presence',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Show typing or recording in a chat',
          description:
            'Shows "typing…" (`composing`), "recording audio…" (`recording`) or stops (`paused`) in the chat; the other side gets CHAT_PRESENCE `{remoteJid, participant, presence}`. With `durationMs`, `paused` follows by itself after that time (the reply answers at once). To show the instance online or offline use POST /user/presence; to type before a send use `delayMs` on /send.',
          body: S.PresenceBody,
          response: { 200: S.PresenceReply, ...errorResponses(401, 403, 409, 501) },
        },
      },
      async (request) => messages.presence(callerInstance(request), request.body),
    );

    app.post(
      '/message/read',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Mark messages read',
          description: `Sends read receipts for 1 to 100 received messages of one chat: their senders get READ_RECEIPT \`{key, receipt: "read", readTimestamp}\` (in groups with \`participant\`), unless this instance's privacy has \`readReceipts: "none"\` (WhatsApp then only syncs the read state to the phone). The chat's unread count drops to the messages after the newest one read. Messages this instance sent are refused (400). Every message must exist: ${TARGET} To read a whole chat use POST /chat/mark-read.`,
          body: S.ReadBody,
          response: { 200: S.ReadReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => messages.markRead(callerInstance(request), request.body),
    );

    app.post(
      '/message/delete',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Delete a message for everyone',
          description: `Revokes the message for everyone in the chat. Allowed for this instance's own messages; on WhatsApp also for others' messages in a group where the instance is an admin; otherwise 403 (the sandbox network allows own messages only). ${TARGET} The reply and SEND_MESSAGE carry \`protocolMessage {key, type: "REVOKE"}\`; the other side gets a MESSAGE with it. In GET /message/find the message then shows \`deleted: true\`, \`messageType: "revoked"\`, no content and no media.`,
          body: S.MessageRefBody,
          response: { 200: S.ActionReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => messages.delete(callerInstance(request), request.body),
    );

    app.post(
      '/message/edit',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Edit the text of a sent message',
          description: `Replaces the text of a text message (\`conversation\` or \`extendedTextMessage\`) this instance sent. 403 for a message of someone else; 409 \`not_a_text_message\` for other kinds; 409 \`edit_window_closed\` once ${S.EDIT_WINDOW_MINUTES} minutes have passed since it was sent (WhatsApp's limit). ${TARGET} The reply and SEND_MESSAGE carry \`protocolMessage {key, type: "MESSAGE_EDIT", editedMessage}\`; the other side gets a MESSAGE with \`editedMessage.message.protocolMessage\` (as WhatsApp delivers edits). The stored message (GET /message/find) shows the new text.`,
          body: S.EditBody,
          response: { 200: S.ActionReply, ...errorResponses(...refusals) },
        },
      },
      async (request) => messages.edit(callerInstance(request), request.body),
    );

    app.get(
      '/message/find',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Find stored messages',
          description:
            "Messages this instance sent or received (kept for MESSAGE_RETENTION_DAYS), newest first, filtered by chat, id, direction (`fromMe`), text (case-insensitive, in texts and captions) and time (`since`/`until`, Unix seconds, inclusive); all filters combine. Edits show the latest text; deleted messages stay listed with `deleted: true`. Reactions and poll votes are not listed (they arrive as MESSAGE events; see GET /message/poll-results). Answers from the gateway's store, also while the instance is offline.",
          querystring: S.FindQuery,
          response: { 200: Page(S.StoredMessageSchema), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const { offset, limit, ...filter } = request.query;
        return messages.find(callerInstance(request), filter, { offset, limit });
      },
    );

    app.get(
      '/message/poll-results',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Results of a poll this instance sent',
          description:
            "Each option with its vote count and voters, from the latest vote of each voter (votes arrive as MESSAGE events with `pollVote`; on WhatsApp they are decrypted with the poll's secret). A withdrawn vote (no options) no longer counts. 404 when `messageId` is not a poll this instance sent. Answers from the gateway's store, also while the instance is offline.",
          querystring: S.PollResultsQuery,
          response: { 200: S.PollResultsReply, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => messages.pollResults(callerInstance(request), request.query.messageId),
    );
  };
}
